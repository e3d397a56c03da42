/* common/tokenizer.c - see tokenizer.h. */
#include "tokenizer.h"

#include "bpe.h"
#include "dataroot.h"
#include "errmsg.h"
#include "fs.h"
#include "utf8.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_CODE_POINT 0x10FFFFu
#define FILE_MAGIC "pacer-tokenizer 1\n"
#define MAX_TEXT_FILE_BYTES (4ull << 30)

struct tokenizer {
    tokenizer_kind_t kind;
    int vocab;
    uint32_t *chars; /* chars: the vocabulary's code points, increasing; id = index */
    bpe_t *bpe;
    /* bpe: the sources' bytes, kept so the saved file rebuilds the same tokenizer */
    int hf; /* a tokenizer.json (a) rather than vocab.json (a) and merges.txt (b) */
    char *a, *b;
    size_t alen, blen;
};

/* ---- UTF-8 -------------------------------------------------------------------------- */

/* The code point at s[pos] into *cp: its length in bytes, or 0 when the bytes there are
 * not valid UTF-8 (common/utf8.h: no overlong forms, surrogates or values past U+10FFFF). */
static size_t utf8_next(const unsigned char *s, size_t len, size_t pos, uint32_t *cp)
{
    return utf8_char(s + pos, len - pos, cp, NULL);
}

static size_t utf8_put(uint32_t cp, char *out)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* A character for a message: itself when printable ASCII, else U+XXXX. */
static void char_name(uint32_t cp, char *out, size_t len)
{
    if (cp >= 0x20 && cp < 0x7F && cp != '\'') snprintf(out, len, "'%c' (U+%04X)", (char)cp, (unsigned)cp);
    else snprintf(out, len, "U+%04X", (unsigned)cp);
}

/* ---- building ----------------------------------------------------------------------- */

static tokenizer_t *tok_new(tokenizer_kind_t kind, char *err, size_t errlen)
{
    tokenizer_t *t = calloc(1, sizeof *t);
    if (!t) errmsg(err, errlen, "tokenizer: out of memory");
    else t->kind = kind;
    return t;
}

tokenizer_t *tokenizer_bytes(void)
{
    tokenizer_t *t = tok_new(TOKENIZER_BYTES, NULL, 0);
    if (t) t->vocab = 256;
    return t;
}

/* Marks every character of text in seen (one bit a code point): 0, or -1 with err. */
static int mark_chars(const unsigned char *text, size_t len, const char *name, uint8_t *seen, char *err, size_t errlen)
{
    for (size_t pos = 0; pos < len;) {
        uint32_t cp;
        const size_t n = utf8_next(text, len, pos, &cp);
        if (n == 0)
            return errmsg(err, errlen,
                          "%s: byte %zu (0x%02X) is not valid UTF-8: the chars tokenizer reads UTF-8 text "
                          "(use \"tokenizer\": \"bytes\" for other bytes)",
                          name, pos, text[pos]);
        seen[cp >> 3] |= (uint8_t)(1u << (cp & 7));
        pos += n;
    }
    return 0;
}

/* The chars tokenizer of the characters marked in seen. */
static tokenizer_t *chars_from_seen(const uint8_t *seen, char *err, size_t errlen)
{
    size_t count = 0;
    for (uint32_t cp = 0; cp <= MAX_CODE_POINT; cp++) count += (seen[cp >> 3] >> (cp & 7)) & 1;
    if (count == 0) {
        errmsg(err, errlen, "chars tokenizer: the text is empty (no characters to make a vocabulary of)");
        return NULL;
    }
    if (count > TOKENIZER_MAX_CHARS) {
        errmsg(err, errlen, "chars tokenizer: the text has %zu distinct characters, more than %d (token ids are uint16)",
               count, TOKENIZER_MAX_CHARS);
        return NULL;
    }
    tokenizer_t *t = tok_new(TOKENIZER_CHARS, err, errlen);
    if (!t) return NULL;
    t->chars = malloc(count * sizeof *t->chars);
    if (!t->chars) {
        free(t);
        errmsg(err, errlen, "chars tokenizer: out of memory");
        return NULL;
    }
    size_t k = 0;
    for (uint32_t cp = 0; cp <= MAX_CODE_POINT; cp++)
        if ((seen[cp >> 3] >> (cp & 7)) & 1) t->chars[k++] = cp;
    t->vocab = (int)count;
    return t;
}

tokenizer_t *tokenizer_chars_build(const char *const *texts, const size_t *lens, const char *const *names, int n,
                                   char *err, size_t errlen)
{
    uint8_t *seen = calloc(MAX_CODE_POINT / 8 + 1, 1);
    if (!seen) {
        errmsg(err, errlen, "chars tokenizer: out of memory");
        return NULL;
    }
    tokenizer_t *t = NULL;
    int ok = 1;
    for (int i = 0; i < n && ok; i++)
        ok = mark_chars((const unsigned char *)texts[i], lens[i], names ? names[i] : "text", seen, err, errlen) == 0;
    if (ok) t = chars_from_seen(seen, err, errlen);
    free(seen);
    return t;
}

tokenizer_t *tokenizer_chars_build_files(const char *const *paths, int n, char *err, size_t errlen)
{
    uint8_t *seen = calloc(MAX_CODE_POINT / 8 + 1, 1);
    if (!seen) {
        errmsg(err, errlen, "chars tokenizer: out of memory");
        return NULL;
    }
    int ok = 1;
    for (int i = 0; i < n && ok; i++) {
        ok = 0;
        /* the checked open (dataroot.h): no link out of the data roots, no FIFO */
        const int fd = dataroot_open(paths[i], err, errlen);
        struct stat st;
        if (fd < 0) {
            /* err says why */
        } else if (fstat(fd, &st) != 0) {
            errmsg(err, errlen, "%s: %s", paths[i], strerror(errno));
        } else if ((unsigned long long)st.st_size > MAX_TEXT_FILE_BYTES) {
            errmsg(err, errlen, "%s: %lld bytes, more than the %llu a text file may have", paths[i],
                   (long long)st.st_size, MAX_TEXT_FILE_BYTES);
        } else if (st.st_size == 0) {
            ok = 1;
        } else {
            void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
            if (map == MAP_FAILED) errmsg(err, errlen, "%s: cannot map: %s", paths[i], strerror(errno));
            else {
                ok = mark_chars(map, (size_t)st.st_size, paths[i], seen, err, errlen) == 0;
                munmap(map, (size_t)st.st_size);
            }
        }
        if (fd >= 0) close(fd);
    }
    tokenizer_t *t = ok ? chars_from_seen(seen, err, errlen) : NULL;
    free(seen);
    return t;
}

/* Reads a whole file of at most max bytes into a malloc'd buffer, through the checked open
 * (dataroot.h): a file of the data set (own 0) must lie under the data roots; pacer's own
 * (own 1: a checkpoint's tokenizer) may lie anywhere; neither may be a FIFO. */
static char *read_bounded(const char *path, int own, size_t max, size_t *len, char *err, size_t errlen)
{
    const int fd = own ? dataroot_open_own(path, err, errlen) : dataroot_open(path, err, errlen);
    if (fd < 0) return NULL;
    struct stat st;
    char *buf = NULL;
    if (fstat(fd, &st) != 0) errmsg(err, errlen, "%s: %s", path, strerror(errno));
    else if ((unsigned long long)st.st_size > max)
        errmsg(err, errlen, "%s: %lld bytes, over the limit of %zu", path, (long long)st.st_size, max);
    else if (!(buf = malloc((size_t)st.st_size + 1))) errmsg(err, errlen, "%s: out of memory", path);
    else if (fs_read_all(fd, buf, (size_t)st.st_size) != 0) {
        errmsg(err, errlen, "%s: short read", path);
        free(buf);
        buf = NULL;
    } else {
        buf[st.st_size] = 0;
        *len = (size_t)st.st_size;
    }
    close(fd);
    return buf;
}

/* A bpe tokenizer over the sources a (and b unless hf), which it takes. */
static tokenizer_t *bpe_from_sources(int hf, char *a, size_t alen, char *b, size_t blen, char *err, size_t errlen)
{
    bpe_t *bpe = hf ? bpe_load_hf(a, alen, err, errlen) : bpe_load(a, alen, b, blen, err, errlen);
    tokenizer_t *t = bpe ? tok_new(TOKENIZER_BPE, err, errlen) : NULL;
    if (bpe && bpe_vocab_size(bpe) > TOKENIZER_MAX_CHARS) {
        errmsg(err, errlen, "bpe tokenizer: a vocabulary of %d ids, more than %d (token ids are uint16)",
               bpe_vocab_size(bpe), TOKENIZER_MAX_CHARS);
        free(t);
        t = NULL;
    }
    if (!t) {
        bpe_free(bpe);
        free(a);
        free(b);
        return NULL;
    }
    t->bpe = bpe;
    t->vocab = bpe_vocab_size(bpe);
    t->hf = hf;
    t->a = a, t->alen = alen, t->b = b, t->blen = blen;
    return t;
}

tokenizer_t *tokenizer_bpe_files(const char *vocab_path, const char *merges_path, char *err, size_t errlen)
{
    size_t vl = 0, ml = 0;
    char *v = read_bounded(vocab_path, 0, BPE_MAX_FILE_BYTES, &vl, err, errlen);
    char *m = v ? read_bounded(merges_path, 0, BPE_MAX_FILE_BYTES, &ml, err, errlen) : NULL;
    if (!m) {
        free(v);
        return NULL;
    }
    return bpe_from_sources(0, v, vl, m, ml, err, errlen);
}

tokenizer_t *tokenizer_bpe_hf_file(const char *path, char *err, size_t errlen)
{
    size_t len = 0;
    char *j = read_bounded(path, 0, BPE_MAX_FILE_BYTES, &len, err, errlen);
    return j ? bpe_from_sources(1, j, len, NULL, 0, err, errlen) : NULL;
}

tokenizer_t *tokenizer_for_dataset(const char *kind, const char *dir, const char *vocab, const char *merges,
                                   const char *file, char *err, size_t errlen)
{
    if (!kind || !*kind || strcmp(kind, "bytes") == 0) return tokenizer_bytes();
    if (strcmp(kind, "chars") == 0) {
        char train[4096], val[4096];
        if (snprintf(train, sizeof train, "%s/train.txt", dir) >= (int)sizeof train ||
            snprintf(val, sizeof val, "%s/val.txt", dir) >= (int)sizeof val) {
            errmsg(err, errlen, "dataset.path: too long");
            return NULL;
        }
        const char *paths[2] = {train, val};
        return tokenizer_chars_build_files(paths, 2, err, errlen);
    }
    if (strcmp(kind, "bpe") == 0) {
        if (vocab && *vocab && merges && *merges) return tokenizer_bpe_files(vocab, merges, err, errlen);
        if (file && *file) return tokenizer_bpe_hf_file(file, err, errlen);
        errmsg(err, errlen, "dataset.tokenizer: bpe needs vocab and merges, or file (a tokenizer.json)");
        return NULL;
    }
    errmsg(err, errlen, "dataset.tokenizer: %s is not bytes, chars or bpe", kind);
    return NULL;
}

void tokenizer_free(tokenizer_t *t)
{
    if (!t) return;
    free(t->chars);
    bpe_free(t->bpe);
    free(t->a);
    free(t->b);
    free(t);
}

tokenizer_kind_t tokenizer_kind(const tokenizer_t *t) { return t->kind; }

const char *tokenizer_kind_name(const tokenizer_t *t)
{
    return t->kind == TOKENIZER_BYTES ? "bytes" : t->kind == TOKENIZER_CHARS ? "chars" : "bpe";
}

int tokenizer_vocab_size(const tokenizer_t *t) { return t->vocab; }

/* ---- encode, decode ----------------------------------------------------------------- */

static int char_id(const tokenizer_t *t, uint32_t cp)
{
    size_t lo = 0, hi = (size_t)t->vocab;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (t->chars[mid] < cp) lo = mid + 1;
        else hi = mid;
    }
    return lo < (size_t)t->vocab && t->chars[lo] == cp ? (int)lo : -1;
}

static int encode_chars(const tokenizer_t *t, const unsigned char *s, size_t len, uint32_t *out, size_t *n, char *err,
                        size_t errlen)
{
    size_t k = 0;
    for (size_t pos = 0; pos < len;) {
        uint32_t cp;
        const size_t w = utf8_next(s, len, pos, &cp);
        if (w == 0) return errmsg(err, errlen, "text: byte %zu (0x%02X) is not valid UTF-8", pos, s[pos]);
        const int id = char_id(t, cp);
        if (id < 0) {
            char name[32];
            char_name(cp, name, sizeof name);
            return errmsg(err, errlen,
                          "text: the character %s at byte %zu is not in the chars vocabulary (the %d characters of "
                          "the data set's text)",
                          name, pos, t->vocab);
        }
        out[k++] = (uint32_t)id;
        pos += w;
    }
    *n = k;
    return 0;
}

int tokenizer_encode(const tokenizer_t *t, const char *text, size_t len, uint32_t **ids, size_t *n, char *err,
                     size_t errlen)
{
    return tokenizer_encode_until(t, text, len, NULL, ids, n, err, errlen);
}

int tokenizer_encode_until(const tokenizer_t *t, const char *text, size_t len, int (*stop)(void), uint32_t **ids,
                           size_t *n, char *err, size_t errlen)
{
    *ids = NULL;
    *n = 0;
    if (t->kind == TOKENIZER_BPE) {
        const int rc = bpe_encode_until(t->bpe, text, len, stop, ids, n, err, errlen);
        return rc == BPE_STOPPED ? TOKENIZER_STOPPED : rc;
    }
    if (len > ((size_t)-1) / sizeof **ids - 1) return errmsg(err, errlen, "text: too long");
    uint32_t *out = malloc((len + 1) * sizeof *out); /* at most one id a byte */
    if (!out) return errmsg(err, errlen, "text: out of memory (%zu bytes)", len);
    if (t->kind == TOKENIZER_BYTES) {
        for (size_t i = 0; i < len; i++) out[i] = (unsigned char)text[i];
        *n = len;
    } else if (encode_chars(t, (const unsigned char *)text, len, out, n, err, errlen) != 0) {
        free(out);
        return -1;
    }
    *ids = out;
    return 0;
}

int tokenizer_decode(const tokenizer_t *t, const uint32_t *ids, size_t n, char **text, size_t *len, char *err,
                     size_t errlen)
{
    *text = NULL;
    *len = 0;
    if (t->kind == TOKENIZER_BPE) return bpe_decode(t->bpe, ids, n, text, len, err, errlen);
    if (n > ((size_t)-1) / 4 - 1) return errmsg(err, errlen, "ids: too many");
    char *out = malloc(n * (t->kind == TOKENIZER_BYTES ? 1 : 4) + 1);
    if (!out) return errmsg(err, errlen, "ids: out of memory (%zu ids)", n);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] >= (uint32_t)t->vocab) {
            free(out);
            return errmsg(err, errlen, "id %u at index %zu is outside the vocabulary (vocab_size %d, %s)",
                          (unsigned)ids[i], i, t->vocab, tokenizer_kind_name(t));
        }
        if (t->kind == TOKENIZER_BYTES) out[k++] = (char)ids[i];
        else k += utf8_put(t->chars[ids[i]], out + k);
    }
    out[k] = 0;
    *text = out;
    *len = k;
    return 0;
}

/* ---- the saved form ----------------------------------------------------------------- */

/* Appends "NAME LEN\n" + data + "\n" at buf + *at (the caller sized buf). */
static void put_section(char *buf, size_t *at, const char *name, const char *data, size_t len)
{
    *at += (size_t)sprintf(buf + *at, "%s %zu\n", name, len);
    if (len) memcpy(buf + *at, data, len);
    *at += len;
    buf[(*at)++] = '\n';
}

int tokenizer_serialize(const tokenizer_t *t, char **buf, size_t *len, char *err, size_t errlen)
{
    char *chars = NULL;
    size_t clen = 0;
    if (t->kind == TOKENIZER_CHARS) {
        chars = malloc((size_t)t->vocab * 4 + 1);
        if (!chars) return errmsg(err, errlen, "tokenizer: out of memory");
        for (int i = 0; i < t->vocab; i++) clen += utf8_put(t->chars[i], chars + clen);
    }
    const size_t cap = 256 + clen + t->alen + t->blen;
    char *out = malloc(cap);
    if (!out) {
        free(chars);
        return errmsg(err, errlen, "tokenizer: out of memory");
    }
    size_t at = (size_t)sprintf(out, "%s", FILE_MAGIC);
    if (t->kind == TOKENIZER_BYTES) at += (size_t)sprintf(out + at, "kind bytes\n");
    else if (t->kind == TOKENIZER_CHARS) {
        at += (size_t)sprintf(out + at, "kind chars\n");
        put_section(out, &at, "chars", chars, clen);
    } else if (t->hf) {
        at += (size_t)sprintf(out + at, "kind bpe-hf\n");
        put_section(out, &at, "json", t->a, t->alen);
    } else {
        at += (size_t)sprintf(out + at, "kind bpe\n");
        put_section(out, &at, "vocab", t->a, t->alen);
        put_section(out, &at, "merges", t->b, t->blen);
    }
    free(chars);
    *buf = out;
    *len = at;
    return 0;
}

/* Reads one line "WORD\n" or "WORD LEN\n" at *at: 0 with word (NUL-ended) and *n (or
 * SIZE_MAX when no number), -1 when malformed. */
static int get_line(const char *buf, size_t len, size_t *at, char *word, size_t wordlen, size_t *n)
{
    size_t i = *at, w = 0;
    while (i < len && buf[i] != ' ' && buf[i] != '\n') {
        if (w + 1 >= wordlen || !((buf[i] >= 'a' && buf[i] <= 'z') || buf[i] == '-')) return -1;
        word[w++] = buf[i++];
    }
    word[w] = 0;
    *n = (size_t)-1;
    if (i < len && buf[i] == ' ') {
        i++;
        size_t v = 0, digits = 0;
        const size_t first = i;
        while (i < len && buf[i] >= '0' && buf[i] <= '9' && digits < 10)
            v = v * 10 + (size_t)(buf[i++] - '0'), digits++;
        /* one spelling of each length, the writer's: a file reads back byte for byte */
        if (digits == 0 || (digits > 1 && buf[first] == '0')) return -1;
        *n = v;
    }
    if (i >= len || buf[i] != '\n' || w == 0) return -1;
    *at = i + 1;
    return 0;
}

/* Reads section "name LEN\n" + LEN bytes + "\n" at *at: its bytes (malloc'd copy), or NULL
 * with err. */
static char *get_section(const char *buf, size_t len, size_t *at, const char *want, size_t *out_len, const char *fname,
                         char *err, size_t errlen)
{
    char word[16];
    size_t n;
    if (get_line(buf, len, at, word, sizeof word, &n) != 0 || strcmp(word, want) != 0 || n == (size_t)-1) {
        errmsg(err, errlen, "%s: expected a line \"%s LENGTH\" at byte %zu (LENGTH in decimal, no leading zero)", fname,
               want, *at);
        return NULL;
    }
    if (n > len - *at || len - *at - n < 1 || buf[*at + n] != '\n') {
        errmsg(err, errlen, "%s: section %s says %zu bytes, the file holds %zu after it", fname, want, n,
               len - *at > 0 ? len - *at - 1 : 0);
        return NULL;
    }
    char *copy = malloc(n + 1);
    if (!copy) {
        errmsg(err, errlen, "%s: out of memory", fname);
        return NULL;
    }
    memcpy(copy, buf + *at, n);
    copy[n] = 0;
    *at += n + 1;
    *out_len = n;
    return copy;
}

/* The chars vocabulary of a saved file: valid UTF-8, strictly increasing. */
static tokenizer_t *parse_chars(const char *s, size_t len, const char *fname, char *err, size_t errlen)
{
    uint8_t *seen = calloc(MAX_CODE_POINT / 8 + 1, 1);
    if (!seen) {
        errmsg(err, errlen, "%s: out of memory", fname);
        return NULL;
    }
    uint32_t prev = 0;
    int first = 1, ok = 1;
    for (size_t pos = 0; pos < len && ok;) {
        uint32_t cp;
        const size_t w = utf8_next((const unsigned char *)s, len, pos, &cp);
        if (w == 0) ok = errmsg(err, errlen, "%s: chars: byte %zu is not valid UTF-8", fname, pos) == 0;
        else if (!first && cp <= prev)
            ok = errmsg(err, errlen, "%s: chars: U+%04X at byte %zu is not after U+%04X (the list must increase)",
                        fname, (unsigned)cp, pos, (unsigned)prev) == 0;
        else {
            seen[cp >> 3] |= (uint8_t)(1u << (cp & 7));
            prev = cp, first = 0, pos += w;
        }
    }
    tokenizer_t *t = ok ? chars_from_seen(seen, err, errlen) : NULL;
    free(seen);
    return t;
}

tokenizer_t *tokenizer_parse(const char *buf, size_t len, const char *name, char *err, size_t errlen)
{
    const size_t ml = strlen(FILE_MAGIC);
    if (len > TOKENIZER_MAX_FILE_BYTES) {
        errmsg(err, errlen, "%s: %zu bytes, over the limit of %u", name, len, TOKENIZER_MAX_FILE_BYTES);
        return NULL;
    }
    if (len < ml || memcmp(buf, FILE_MAGIC, ml) != 0) {
        errmsg(err, errlen, "%s: not a pacer tokenizer file (no \"pacer-tokenizer 1\" line)", name);
        return NULL;
    }
    size_t at = ml, n, alen = 0, blen = 0;
    char kind[16];
    /* "kind NAME": a word, not a number, after the space */
    if (len - at < 5 || memcmp(buf + at, "kind ", 5) != 0) {
        errmsg(err, errlen, "%s: expected a line \"kind bytes|chars|bpe|bpe-hf\" at byte %zu", name, at);
        return NULL;
    }
    at += 5;
    if (get_line(buf, len, &at, kind, sizeof kind, &n) != 0 || n != (size_t)-1) {
        errmsg(err, errlen, "%s: a malformed kind line", name);
        return NULL;
    }
    tokenizer_t *t = NULL;
    if (strcmp(kind, "bytes") == 0) t = tokenizer_bytes();
    else if (strcmp(kind, "chars") == 0) {
        char *c = get_section(buf, len, &at, "chars", &alen, name, err, errlen);
        if (c) t = parse_chars(c, alen, name, err, errlen);
        free(c);
    } else if (strcmp(kind, "bpe-hf") == 0) {
        char *j = get_section(buf, len, &at, "json", &alen, name, err, errlen);
        if (j) t = bpe_from_sources(1, j, alen, NULL, 0, err, errlen);
    } else if (strcmp(kind, "bpe") == 0) {
        char *v = get_section(buf, len, &at, "vocab", &alen, name, err, errlen);
        char *m = v ? get_section(buf, len, &at, "merges", &blen, name, err, errlen) : NULL;
        if (m) t = bpe_from_sources(0, v, alen, m, blen, err, errlen);
        else free(v);
    } else {
        errmsg(err, errlen, "%s: kind %s is not bytes, chars, bpe or bpe-hf", name, kind);
        return NULL;
    }
    if (t && at != len) {
        errmsg(err, errlen, "%s: %zu bytes after the last section", name, len - at);
        tokenizer_free(t);
        return NULL;
    }
    if (!t && err && !*err) errmsg(err, errlen, "%s: out of memory", name);
    return t;
}

int tokenizer_save(const tokenizer_t *t, const char *path, char *err, size_t errlen)
{
    char *buf;
    size_t len;
    if (tokenizer_serialize(t, &buf, &len, err, errlen) != 0) return -1;
    const int rc = fs_atomic_write(path, buf, len, 0644);
    const int e = errno;
    free(buf);
    if (rc != 0) return errmsg(err, errlen, "%s: cannot write: %s", path, strerror(e));
    return 0;
}

static tokenizer_t *load_from(const char *path, int own, char *err, size_t errlen)
{
    size_t len = 0;
    char *buf = read_bounded(path, own, TOKENIZER_MAX_FILE_BYTES, &len, err, errlen);
    if (!buf) return NULL;
    tokenizer_t *t = tokenizer_parse(buf, len, path, err, errlen);
    free(buf);
    return t;
}

tokenizer_t *tokenizer_load(const char *path, char *err, size_t errlen) { return load_from(path, 0, err, errlen); }

int tokenizer_equal(const tokenizer_t *a, const tokenizer_t *b)
{
    if (a->kind != b->kind || a->vocab != b->vocab) return 0;
    if (a->kind == TOKENIZER_CHARS) return memcmp(a->chars, b->chars, (size_t)a->vocab * sizeof *a->chars) == 0;
    if (a->kind == TOKENIZER_BPE)
        return a->hf == b->hf && a->alen == b->alen && a->blen == b->blen && memcmp(a->a, b->a, a->alen) == 0 &&
               (a->blen == 0 || memcmp(a->b, b->b, a->blen) == 0);
    return 1;
}

int tokenizer_path_for_job(char *out, size_t len, const char *dir, const char *name)
{
    const int n = snprintf(out, len, "%s/%s%s", dir, name, TOKENIZER_FILE_SUFFIX);
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

tokenizer_t *tokenizer_load_for_checkpoint(const char *ckpt_path, char *err, size_t errlen)
{
    char path[4096];
    const size_t n = strlen(ckpt_path);
    if (n + sizeof TOKENIZER_FILE_SUFFIX >= sizeof path) {
        errmsg(err, errlen, "%s: path too long", ckpt_path);
        return NULL;
    }
    memcpy(path, ckpt_path, n + 1);
    /* NAME.ckpt -> NAME; a linked NAME.step{S}-...ckpt -> NAME */
    char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    char *dot = strrchr(base, '.');
    if (dot && strcmp(dot, ".ckpt") == 0) *dot = 0;
    char *step = strstr(base, ".step");
    while (step && strstr(step + 1, ".step")) step = strstr(step + 1, ".step");
    if (step && step[5] >= '0' && step[5] <= '9') *step = 0;
    strcat(path, TOKENIZER_FILE_SUFFIX);
    struct stat st;
    if (stat(path, &st) != 0 && errno == ENOENT) return tokenizer_bytes();
    return load_from(path, 1, err, errlen); /* the job's own file, beside its checkpoint */
}
