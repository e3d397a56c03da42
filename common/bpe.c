/* common/bpe.c - GPT-2's byte-level BPE tokenizer (bpe.h). */
#include "bpe.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dataroot.h"
#include "fs.h"
#include "jsonbody.h"
#include "utf8.h"

typedef struct {
    uint64_t key; /* left id << 32 | right id, +1 so that 0 means empty */
    uint32_t rank, merged;
} bpe_pair_slot_t;

struct bpe {
    int nvocab;             /* one more than the largest id */
    unsigned char **tok;    /* raw bytes of each id (NULL for an unused id) */
    uint16_t *toklen;       /* their lengths */
    int32_t *str_slots;     /* open addressing over tok's bytes: id, or -1 empty */
    size_t str_cap;         /* a power of two */
    bpe_pair_slot_t *pairs; /* open addressing over merges */
    size_t pair_cap;        /* a power of two */
    uint32_t byte_id[256];  /* the id of each single byte */
};

static void bpe_err(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* GPT-2's bytes_to_unicode: the printable bytes stand for themselves, the rest for 256.. in
 * byte order. Its inverse: the byte a code point stands for, or -1. */
static int bpe_unicode_to_byte(uint32_t cp)
{
    static int table[324];
    static int ready;
    if (!ready) {
        for (int i = 0; i < 324; i++) table[i] = -1;
        int n = 0;
        for (int b = 0; b < 256; b++) {
            int printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174);
            table[printable ? b : 256 + n++] = b;
        }
        ready = 1;
    }
    return cp < 324 ? table[cp] : -1;
}

/* One UTF-8 code point at s[pos]: its byte count (1 for an invalid byte, then *cp is
 * 0x110000 + the byte, a class of its own) and *cp. */
static size_t bpe_utf8_next(const unsigned char *s, size_t len, size_t pos, uint32_t *cp)
{
    const size_t k = utf8_char(s + pos, len - pos, cp, NULL);
    if (k) return k;
    *cp = 0x110000 + s[pos];
    return 1;
}

static int bpe_in_ranges(const bpe_range_t *r, size_t n, uint32_t cp)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (cp < r[mid].lo) hi = mid;
        else if (cp > r[mid].hi) lo = mid + 1;
        else return 1;
    }
    return 0;
}

/* Unicode's White_Space property (what \s is to tiktoken's regex). */
static int bpe_is_space(uint32_t cp)
{
    return (cp >= 9 && cp <= 13) || cp == 32 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
           (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
           cp == 0x3000;
}

enum { BPE_C_LETTER, BPE_C_NUMBER, BPE_C_SPACE, BPE_C_OTHER };

static int bpe_class(uint32_t cp)
{
    if (cp < 0x80) {
        if ((cp | 0x20) >= 'a' && (cp | 0x20) <= 'z') return BPE_C_LETTER;
        if (cp >= '0' && cp <= '9') return BPE_C_NUMBER;
        return bpe_is_space(cp) ? BPE_C_SPACE : BPE_C_OTHER;
    }
    if (cp >= 0x110000) return BPE_C_OTHER;
    if (bpe_is_space(cp)) return BPE_C_SPACE;
    if (bpe_in_ranges(bpe_letter_ranges, bpe_letter_ranges_count, cp)) return BPE_C_LETTER;
    if (bpe_in_ranges(bpe_number_ranges, bpe_number_ranges_count, cp)) return BPE_C_NUMBER;
    return BPE_C_OTHER;
}

/* The end of the run of code points of class cls that starts at pos. */
static size_t bpe_run_end(const unsigned char *s, size_t len, size_t pos, int cls)
{
    while (pos < len) {
        uint32_t cp;
        size_t k = bpe_utf8_next(s, len, pos, &cp);
        if (bpe_class(cp) != cls) break;
        pos += k;
    }
    return pos;
}

static size_t bpe_contraction_len(const unsigned char *s, size_t len, size_t pos)
{
    if (s[pos] != '\'' || pos + 1 >= len) return 0;
    unsigned a = s[pos + 1], b = pos + 2 < len ? s[pos + 2] : 0;
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
    return 0;
}

size_t bpe_pretoken_len(const char *text, size_t len, size_t pos)
{
    const unsigned char *s = (const unsigned char *)text;
    size_t c = bpe_contraction_len(s, len, pos);
    if (c) return c;
    uint32_t cp;
    size_t k = bpe_utf8_next(s, len, pos, &cp);
    int cls = bpe_class(cp);
    size_t start = pos;
    if (cp == ' ' && pos + 1 < len) { /* " ?X+": the space joins a following non-space run */
        uint32_t cp2;
        bpe_utf8_next(s, len, pos + 1, &cp2);
        int cls2 = bpe_class(cp2);
        if (cls2 != BPE_C_SPACE) return bpe_run_end(s, len, pos + 1, cls2) - start;
    }
    if (cls != BPE_C_SPACE) return bpe_run_end(s, len, pos, cls) - start;
    /* \s+(?!\S) | \s+ : a run of spaces followed by a non-space leaves its last space to it */
    size_t end = bpe_run_end(s, len, pos, BPE_C_SPACE);
    if (end == len) return end - start;
    size_t last = end - 1; /* the start of the run's last code point */
    while (last > start && (s[last] & 0xC0) == 0x80) last--;
    return last > start ? last - start : k;
}

static uint64_t bpe_hash_bytes(const unsigned char *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

static uint64_t bpe_hash_u64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
}

/* The slot of bytes p[0..n) in the string table: holding its id, or empty (-1). */
static size_t bpe_str_slot(const bpe_t *b, const unsigned char *p, size_t n)
{
    size_t i = bpe_hash_bytes(p, n) & (b->str_cap - 1);
    for (;;) {
        int32_t id = b->str_slots[i];
        if (id < 0 || (b->toklen[id] == n && memcmp(b->tok[id], p, n) == 0)) return i;
        i = (i + 1) & (b->str_cap - 1);
    }
}

static int bpe_lookup(const bpe_t *b, const unsigned char *p, size_t n) { return b->str_slots[bpe_str_slot(b, p, n)]; }

static bpe_pair_slot_t *bpe_pair_slot(const bpe_t *b, uint32_t left, uint32_t right)
{
    uint64_t key = (((uint64_t)left << 32) | right) + 1;
    size_t i = bpe_hash_u64(key) & (b->pair_cap - 1);
    while (b->pairs[i].key && b->pairs[i].key != key) i = (i + 1) & (b->pair_cap - 1);
    return &b->pairs[i];
}

/* GPT-2's alphabet string s (UTF-8) into raw bytes: its length, or -1. */
static int bpe_unmap(const char *s, size_t n, unsigned char *out, size_t cap)
{
    size_t pos = 0, k = 0;
    while (pos < n) {
        uint32_t cp;
        pos += bpe_utf8_next((const unsigned char *)s, n, pos, &cp);
        int byte = bpe_unicode_to_byte(cp);
        if (byte < 0 || k >= cap) return -1;
        out[k++] = (unsigned char)byte;
    }
    return (int)k;
}

static size_t bpe_pow2_at_least(size_t n)
{
    size_t c = 16;
    while (c < n) c <<= 1;
    return c;
}

void bpe_free(bpe_t *b)
{
    if (!b) return;
    if (b->tok)
        for (int i = 0; i < b->nvocab; i++) free(b->tok[i]);
    free(b->tok);
    free(b->toklen);
    free(b->str_slots);
    free(b->pairs);
    free(b);
}

int bpe_vocab_size(const bpe_t *b) { return b->nvocab; }

/* The largest id of vocab.json's object, checking each is an integer in range. */
static int bpe_vocab_max_id(json_t *root, char *err, size_t errlen)
{
    const char *key;
    json_t *v;
    int max = -1;
    json_object_foreach(root, key, v)
    {
        if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) >= BPE_MAX_VOCAB) {
            bpe_err(err, errlen, "vocab.json: the id of token \"%.40s\" is not an integer in 0..%d", key,
                    BPE_MAX_VOCAB - 1);
            return -1;
        }
        if (json_integer_value(v) > max) max = (int)json_integer_value(v);
    }
    if (max < 0) bpe_err(err, errlen, "vocab.json: no tokens");
    return max;
}

/* The vocabulary from root, a JSON object of token -> id (root stays the caller's). */
static int bpe_vocab_from_json(bpe_t *b, json_t *root, char *err, size_t errlen)
{
    int max = bpe_vocab_max_id(root, err, errlen), rc = -1;
    if (max < 0) goto out;
    b->nvocab = max + 1;
    b->str_cap = bpe_pow2_at_least(2 * (size_t)b->nvocab);
    b->tok = calloc((size_t)b->nvocab, sizeof *b->tok);
    b->toklen = calloc((size_t)b->nvocab, sizeof *b->toklen);
    b->str_slots = malloc(b->str_cap * sizeof *b->str_slots);
    if (!b->tok || !b->toklen || !b->str_slots) {
        bpe_err(err, errlen, "vocab.json: out of memory for %d tokens", b->nvocab);
        goto out;
    }
    memset(b->str_slots, 0xFF, b->str_cap * sizeof *b->str_slots);
    const char *key;
    json_t *v;
    unsigned char buf[BPE_MAX_TOKEN_BYTES];
    json_object_foreach(root, key, v)
    {
        int id = (int)json_integer_value(v);
        int n = bpe_unmap(key, strlen(key), buf, sizeof buf);
        if (n <= 0) {
            bpe_err(err, errlen, "vocab.json: token \"%.40s\" is empty, over %d bytes or not in GPT-2's byte alphabet",
                    key, BPE_MAX_TOKEN_BYTES);
            goto out;
        }
        size_t slot = bpe_str_slot(b, buf, (size_t)n);
        if (b->tok[id] || b->str_slots[slot] >= 0) {
            bpe_err(err, errlen, "vocab.json: id %d or token \"%.40s\" appears twice", id, key);
            goto out;
        }
        if (!(b->tok[id] = malloc((size_t)n))) goto out;
        memcpy(b->tok[id], buf, (size_t)n);
        b->toklen[id] = (uint16_t)n;
        b->str_slots[slot] = id;
    }
    for (int c = 0; c < 256; c++) {
        unsigned char byte = (unsigned char)c;
        int id = bpe_lookup(b, &byte, 1);
        if (id < 0) {
            bpe_err(err, errlen, "vocab.json: byte 0x%02x has no token of its own", c);
            goto out;
        }
        b->byte_id[c] = (uint32_t)id;
    }
    rc = 0;
out:
    return rc;
}

static int bpe_load_vocab(bpe_t *b, const char *vocab, size_t vocab_len, char *err, size_t errlen)
{
    json_error_t je;
    json_t *root = json_loadb(vocab, vocab_len, JSON_REJECT_DUPLICATES, &je);
    if (!json_is_object(root)) {
        bpe_err(err, errlen, "vocab.json: %s (line %d)", root ? "not a JSON object of token -> id" : jsonbody_text(&je),
                je.line);
        json_decref(root);
        return -1;
    }
    int rc = bpe_vocab_from_json(b, root, err, errlen);
    json_decref(root);
    return rc;
}

/* One "LEFT RIGHT" line (n bytes) of merges.txt with its rank. */
static int bpe_add_merge(bpe_t *b, const char *line, size_t n, uint32_t rank, char *err, size_t errlen)
{
    const char *sp = memchr(line, ' ', n);
    unsigned char l[BPE_MAX_TOKEN_BYTES], r[BPE_MAX_TOKEN_BYTES], lr[2 * BPE_MAX_TOKEN_BYTES];
    int ln = sp ? bpe_unmap(line, (size_t)(sp - line), l, sizeof l) : -1;
    int rn = sp ? bpe_unmap(sp + 1, n - (size_t)(sp - line) - 1, r, sizeof r) : -1;
    if (ln <= 0 || rn <= 0) {
        bpe_err(err, errlen, "merges.txt line %u: not two tokens of GPT-2's byte alphabet split by one space", rank + 1);
        return -1;
    }
    memcpy(lr, l, (size_t)ln);
    memcpy(lr + ln, r, (size_t)rn);
    int lid = bpe_lookup(b, l, (size_t)ln), rid = bpe_lookup(b, r, (size_t)rn);
    int mid = ln + rn <= BPE_MAX_TOKEN_BYTES ? bpe_lookup(b, lr, (size_t)(ln + rn)) : -1;
    if (lid < 0 || rid < 0 || mid < 0) {
        bpe_err(err, errlen, "merges.txt line %u: \"%.*s\" or its merge is not in vocab.json", rank + 1,
                (int)(n < 80 ? n : 80), line);
        return -1;
    }
    bpe_pair_slot_t *slot = bpe_pair_slot(b, (uint32_t)lid, (uint32_t)rid);
    if (slot->key) return 0; /* a repeated pair keeps its best rank */
    slot->key = (((uint64_t)lid << 32) | (uint32_t)rid) + 1;
    slot->rank = rank;
    slot->merged = (uint32_t)mid;
    return 0;
}

static int bpe_load_merges(bpe_t *b, const char *merges, size_t len, char *err, size_t errlen)
{
    size_t lines = 1;
    for (size_t i = 0; i < len; i++) lines += merges[i] == '\n';
    b->pair_cap = bpe_pow2_at_least(2 * lines);
    if (!(b->pairs = calloc(b->pair_cap, sizeof *b->pairs))) {
        bpe_err(err, errlen, "merges.txt: out of memory for %zu lines", lines);
        return -1;
    }
    uint32_t rank = 0;
    size_t pos = 0;
    int first = 1;
    while (pos < len) {
        const char *nl = memchr(merges + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - merges) : len, n = end - pos;
        if (n && merges[pos + n - 1] == '\r') n--;
        int skip = n == 0 || (first && n >= 8 && memcmp(merges + pos, "#version", 8) == 0);
        if (!skip && bpe_add_merge(b, merges + pos, n, rank++, err, errlen) < 0) return -1;
        first = 0;
        pos = end + 1;
    }
    return 0;
}

bpe_t *bpe_load(const char *vocab, size_t vocab_len, const char *merges, size_t merges_len, char *err, size_t errlen)
{
    if (vocab_len > BPE_MAX_FILE_BYTES || merges_len > BPE_MAX_FILE_BYTES) {
        bpe_err(err, errlen, "vocab.json or merges.txt is over %u bytes", BPE_MAX_FILE_BYTES);
        return NULL;
    }
    bpe_t *b = calloc(1, sizeof *b);
    if (!b) {
        bpe_err(err, errlen, "out of memory");
        return NULL;
    }
    if (bpe_load_vocab(b, vocab, vocab_len, err, errlen) < 0 ||
        bpe_load_merges(b, merges, merges_len, err, errlen) < 0) {
        bpe_free(b);
        return NULL;
    }
    return b;
}

/* The whole file at path, bounded, through the data roots' checked open (dataroot.h: no
 * link out of the roots, no FIFO waited on): malloc'd, or NULL with err. */
static char *bpe_read_file(const char *path, size_t *len, char *err, size_t errlen)
{
    const int fd = dataroot_open(path, err, errlen);
    struct stat st;
    if (fd < 0) return NULL;
    if (fstat(fd, &st) < 0) {
        bpe_err(err, errlen, "%s: cannot be read as a file", path);
        close(fd);
        return NULL;
    }
    if ((uint64_t)st.st_size > BPE_MAX_FILE_BYTES) {
        bpe_err(err, errlen, "%s: %lld bytes, over the limit of %u", path, (long long)st.st_size, BPE_MAX_FILE_BYTES);
        close(fd);
        return NULL;
    }
    char *buf = malloc((size_t)st.st_size + 1);
    const int bad = !buf || fs_read_all(fd, buf, (size_t)st.st_size) != 0;
    close(fd);
    if (bad) {
        bpe_err(err, errlen, "%s: read failed", path);
        free(buf);
        return NULL;
    }
    *len = (size_t)st.st_size;
    return buf;
}

bpe_t *bpe_load_files(const char *vocab_path, const char *merges_path, char *err, size_t errlen)
{
    size_t vl = 0, ml = 0;
    char *v = bpe_read_file(vocab_path, &vl, err, errlen);
    char *m = v ? bpe_read_file(merges_path, &ml, err, errlen) : NULL;
    bpe_t *b = m ? bpe_load(v, vl, m, ml, err, errlen) : NULL;
    free(v);
    free(m);
    return b;
}

/* BPE over one pre-token's n bytes (ids has room for n): merges the best-ranked pair,
 * leftmost on a tie, until none is left; the id count. */
static size_t bpe_merge_piece(const bpe_t *b, const unsigned char *p, size_t n, uint32_t *ids)
{
    for (size_t i = 0; i < n; i++) ids[i] = b->byte_id[p[i]];
    while (n > 1) {
        uint32_t best = UINT32_MAX, merged = 0;
        size_t at = 0;
        for (size_t i = 0; i + 1 < n; i++) {
            const bpe_pair_slot_t *s = bpe_pair_slot(b, ids[i], ids[i + 1]);
            if (s->key && s->rank < best) best = s->rank, merged = s->merged, at = i;
        }
        if (best == UINT32_MAX) break;
        ids[at] = merged;
        memmove(ids + at + 1, ids + at + 2, (n - at - 2) * sizeof *ids);
        n--;
    }
    return n;
}

size_t bpe_piece_len(const char *text, size_t len, size_t pos)
{
    /* The pre-tokenizer reads at most a code point past a pre-token of up to
     * BPE_MAX_PRETOKEN bytes (and its last space's), so within this window it gives the
     * whole text's answer for such a pre-token, and one longer than BPE_MAX_PRETOKEN for a
     * longer one: the cut below is then the same. Without the window a run of one class
     * was scanned to its end at each of its 4096-byte pieces: quadratic in the run. */
    const size_t window = len - pos > BPE_MAX_PRETOKEN + BPE_PIECE_SLACK ? pos + BPE_MAX_PRETOKEN + BPE_PIECE_SLACK
                                                                         : len;
    size_t piece = bpe_pretoken_len(text, window, pos);
    if (piece > BPE_MAX_PRETOKEN) { /* bounds the quadratic merge; cut at a code point */
        piece = BPE_MAX_PRETOKEN;
        while (piece > 1 && ((unsigned char)text[pos + piece] & 0xC0) == 0x80) piece--;
    }
    return piece;
}

int bpe_encode_until(const bpe_t *b, const char *text, size_t len, int (*stop)(void), uint32_t **out, size_t *n,
                     char *err, size_t errlen)
{
    uint32_t *ids = malloc((len ? len : 1) * sizeof *ids);
    if (!ids) {
        bpe_err(err, errlen, "out of memory for %zu bytes of text", len);
        return -1;
    }
    size_t k = 0, pos = 0, next_look = BPE_STOP_EVERY;
    while (pos < len) {
        const size_t piece = bpe_piece_len(text, len, pos);
        k += bpe_merge_piece(b, (const unsigned char *)text + pos, piece, ids + k);
        pos += piece;
        if (stop && pos >= next_look) {
            next_look = pos + BPE_STOP_EVERY;
            const int sig = stop();
            if (sig) {
                free(ids);
                bpe_err(err, errlen, "stopped after %zu of %zu bytes: signal %d heard", pos, len, sig);
                return BPE_STOPPED;
            }
        }
    }
    *out = ids;
    *n = k;
    return 0;
}

int bpe_encode(const bpe_t *b, const char *text, size_t len, uint32_t **out, size_t *n, char *err, size_t errlen)
{
    return bpe_encode_until(b, text, len, NULL, out, n, err, errlen);
}

int bpe_decode(const bpe_t *b, const uint32_t *ids, size_t n, char **out, size_t *len, char *err, size_t errlen)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] >= (uint32_t)b->nvocab || !b->tok[ids[i]]) {
            bpe_err(err, errlen, "id %u at token %zu is outside the vocabulary (vocab_size %d)", ids[i], i, b->nvocab);
            return -1;
        }
        total += b->toklen[ids[i]];
    }
    char *buf = malloc(total + 1);
    if (!buf) {
        bpe_err(err, errlen, "out of memory for %zu bytes", total);
        return -1;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        memcpy(buf + k, b->tok[ids[i]], b->toklen[ids[i]]);
        k += b->toklen[ids[i]];
    }
    buf[k] = 0;
    *out = buf;
    *len = k;
    return 0;
}

/* tokenizer.json's model.merges ("LEFT RIGHT" strings, or [LEFT, RIGHT] pairs) as the text
 * of a merges.txt: malloc'd, or NULL with err. */
static char *bpe_hf_merges_text(json_t *merges, size_t *len, char *err, size_t errlen)
{
    size_t cap = 1, k = 0, i;
    json_t *m;
    json_array_foreach(merges, i, m)
    {
        const char *l = json_string_value(json_is_array(m) ? json_array_get(m, 0) : m);
        const char *r = json_is_array(m) ? json_string_value(json_array_get(m, 1)) : "";
        if (!l || !r || (json_is_array(m) && json_array_size(m) != 2)) {
            bpe_err(err, errlen, "tokenizer.json: model.merges[%zu] is not \"LEFT RIGHT\" or [LEFT, RIGHT]", i);
            return NULL;
        }
        cap += strlen(l) + strlen(r) + 2;
    }
    char *text = cap <= BPE_MAX_FILE_BYTES ? malloc(cap) : NULL;
    if (!text) {
        bpe_err(err, errlen, "tokenizer.json: model.merges is over %u bytes or out of memory", BPE_MAX_FILE_BYTES);
        return NULL;
    }
    json_array_foreach(merges, i, m)
    {
        const char *l = json_string_value(json_is_array(m) ? json_array_get(m, 0) : m);
        const char *r = json_is_array(m) ? json_string_value(json_array_get(m, 1)) : NULL;
        k += (size_t)snprintf(text + k, cap - k, r ? "%s %s\n" : "%s\n", l, r ? r : "");
    }
    *len = k;
    return text;
}

bpe_t *bpe_load_hf(const char *json, size_t len, char *err, size_t errlen)
{
    json_error_t je;
    json_t *root = len <= BPE_MAX_FILE_BYTES ? json_loadb(json, len, 0, &je) : NULL;
    json_t *model = json_object_get(root, "model");
    json_t *vocab = json_object_get(model, "vocab"), *merges = json_object_get(model, "merges");
    const char *type = json_string_value(json_object_get(model, "type"));
    bpe_t *b = NULL;
    if (!root) {
        bpe_err(err, errlen, "tokenizer.json: %s", len > BPE_MAX_FILE_BYTES ? "over 64 MiB" : jsonbody_text(&je));
    } else if (!type || strcmp(type, "BPE") != 0 || !json_is_object(vocab) || !json_is_array(merges)) {
        bpe_err(err, errlen, "tokenizer.json: not a BPE model (model.type \"BPE\", model.vocab, model.merges)");
    } else if (!(b = calloc(1, sizeof *b))) {
        bpe_err(err, errlen, "out of memory");
    } else {
        size_t mlen = 0;
        char *mtext = bpe_hf_merges_text(merges, &mlen, err, errlen);
        if (!mtext || bpe_vocab_from_json(b, vocab, err, errlen) < 0 ||
            bpe_load_merges(b, mtext, mlen, err, errlen) < 0) {
            bpe_free(b);
            b = NULL;
        }
        free(mtext);
    }
    json_decref(root);
    return b;
}

bpe_t *bpe_load_hf_file(const char *path, char *err, size_t errlen)
{
    size_t len = 0;
    char *text = bpe_read_file(path, &len, err, errlen);
    bpe_t *b = text ? bpe_load_hf(text, len, err, errlen) : NULL;
    free(text);
    return b;
}
