/* cli/tokenize.c - `pacer tokenize DIR --tokenizer bytes|chars|bpe:VOCAB,MERGES|bpe:TOKENIZER_JSON`:
 * DIR/train.txt and DIR/val.txt into llm.c's token shards DIR/train.bin and DIR/val.bin
 * (common/tokfile.h), with the tokenizer saved beside them as DIR/tokens.tokenizer
 * (common/tokenizer.h) so that a "tokens" data set of them trains with it and generation
 * decodes its ids. chars builds its vocabulary from both files, as a text data set does, so
 * the ids are those a "text" data set with "tokenizer": "chars" trains on. Local: it needs
 * no coordinator. The text is read a chunk at a time, cut only where the tokenizer's ids do
 * not change (BPE: where a pre-token ends with a whole code point after it; chars: before a
 * character's first byte; bytes: anywhere), and each file is written under a temporary
 * name and renamed when complete, so a failed run leaves no half shard behind. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bpe.h"
#include "commands.h"
#include "fs.h"
#include "tokenizer.h"
#include "tokfile.h"

#define TOKENIZE_CHUNK (1u << 20)

/* The bytes of buf[0..len) that can be encoded now: all at the end of the file (or for
 * bytes); chars: up to the start of the last character; BPE: up to the end of the last
 * piece the encoder takes (a pre-token, cut at BPE_MAX_PRETOKEN) that is followed by at
 * least 4 more bytes. */
static size_t tokenize_cut(tokenizer_kind_t kind, const char *buf, size_t len, int eof)
{
    if (eof || kind == TOKENIZER_BYTES) return len;
    if (kind == TOKENIZER_CHARS) {
        size_t p = len;
        while (p > 0 && len - p < 4 && ((unsigned char)buf[p - 1] & 0xC0) == 0x80) p--;
        return p > 0 ? p - 1 : 0;
    }
    size_t pos = 0, cut = 0;
    while (pos < len) {
        /* the encoder's pieces (each found within a bounded window: a run of one class
         * megabytes long is not rescanned at each read) */
        pos += bpe_piece_len(buf, len, pos);
        if (pos + 4 > len) break;
        cut = pos;
    }
    return cut;
}

static void tokenize_progress(const char *name, long long done, long long total, int tty)
{
    if (!tty) return;
    int pct = total > 0 ? (int)(done * 100 / total) : 100;
    char bar[31];
    for (int i = 0; i < 30; i++) bar[i] = i < pct * 30 / 100 ? '#' : '.';
    bar[30] = 0;
    fprintf(stderr, "\r%-10s [%s] %3d%% %.1f MB", name, bar, pct, done / 1e6);
    fflush(stderr);
}

/* Appends n ids as uint16 little-endian: 0, or -1 naming an id over 65535. */
static int tokenize_write_ids(FILE *out, const uint32_t *ids, size_t n, const char *path)
{
    uint16_t buf[4096];
    for (size_t i = 0; i < n; i += 4096) {
        size_t k = n - i < 4096 ? n - i : 4096;
        for (size_t j = 0; j < k; j++) {
            if (ids[i + j] > 65535) {
                fprintf(stderr, "pacer tokenize: %s: id %u does not fit llm.c's uint16 shard\n", path, ids[i + j]);
                return -1;
            }
            uint8_t *p = (uint8_t *)&buf[j];
            p[0] = (uint8_t)(ids[i + j] & 0xFF), p[1] = (uint8_t)(ids[i + j] >> 8);
        }
        if (fwrite(buf, 2, k, out) != k) return -1;
    }
    return 0;
}

/* Encodes the text of in into out (after its header): the token count, or -1. */
static long long tokenize_stream(const tokenizer_t *t, FILE *in, FILE *out, const char *name, long long total,
                                 const char *outpath)
{
    char *buf = malloc(TOKENIZE_CHUNK * 2);
    long long count = 0, done = 0;
    size_t have = 0;
    int eof = 0, tty = isatty(2), rc = 0;
    char err[256];
    while (buf && !eof && rc == 0) {
        size_t got = fread(buf + have, 1, TOKENIZE_CHUNK, in);
        have += got;
        eof = got < TOKENIZE_CHUNK;
        size_t cut = tokenize_cut(tokenizer_kind(t), buf, have, eof);
        uint32_t *ids = NULL;
        size_t n = 0;
        if (tokenizer_encode(t, buf, cut, &ids, &n, err, sizeof err) < 0) {
            fprintf(stderr, "pacer tokenize: %s: %s (in the %zu bytes from byte %lld)\n", name, err, cut, done);
            rc = -1;
            break;
        }
        rc = tokenize_write_ids(out, ids, n, outpath);
        free(ids);
        count += (long long)n;
        done += (long long)cut;
        memmove(buf, buf + cut, have - cut);
        have -= cut;
        if (count > INT32_MAX) {
            fprintf(stderr, "pacer tokenize: %s: over %d tokens, more than llm.c's header counts\n", name, INT32_MAX);
            rc = -1;
        }
        tokenize_progress(name, done, total, tty);
    }
    if (tty) fputc('\n', stderr);
    if (!buf) fprintf(stderr, "pacer tokenize: out of memory\n");
    free(buf);
    return buf && rc == 0 && !ferror(in) ? count : -1;
}

/* DIR/SPLIT.txt into DIR/SPLIT.bin: 0, or -1 (reported). */
static int tokenize_split(const tokenizer_t *t, const char *dir, const char *split)
{
    char in_path[TOKFILE_PATH_MAX], out_path[TOKFILE_PATH_MAX], tmp_path[TOKFILE_PATH_MAX + 8], name[16];
    snprintf(name, sizeof name, "%s.txt", split);
    if ((size_t)snprintf(in_path, sizeof in_path, "%s/%s.txt", dir, split) >= sizeof in_path ||
        (size_t)snprintf(out_path, sizeof out_path, "%s/%s.bin", dir, split) >= sizeof out_path) {
        fprintf(stderr, "pacer tokenize: the path %s is too long\n", dir);
        return -1;
    }
    snprintf(tmp_path, sizeof tmp_path, "%s.tmp", out_path);
    FILE *in = fopen(in_path, "rb");
    struct stat st;
    if (!in || fstat(fileno(in), &st) < 0 || !S_ISREG(st.st_mode)) {
        fprintf(stderr, "pacer tokenize: %s: %s\n", in_path, in ? "not a file" : strerror(errno));
        if (in) fclose(in);
        return -1;
    }
    FILE *out = fopen(tmp_path, "wb");
    int32_t header[TOKFILE_HEADER_BYTES / 4] = {TOKFILE_MAGIC, TOKFILE_VERSION, 0};
    long long count = -1;
    if (out && fwrite(header, sizeof header, 1, out) == 1)
        count = tokenize_stream(t, in, out, name, st.st_size, tmp_path);
    fclose(in);
    header[2] = (int32_t)count;
    int ok = out && count >= 0 && fseek(out, 0, SEEK_SET) == 0 && fwrite(header, sizeof header, 1, out) == 1;
    /* durable before the rename (fs_rename then syncs the directory): a crash leaves the old
     * file or the whole new one */
    if (ok && (fflush(out) != 0 || fsync(fileno(out)) != 0)) ok = 0;
    if (out && fclose(out) != 0) ok = 0;
    if (!ok || fs_rename(tmp_path, out_path) != 0) {
        fprintf(stderr, "pacer tokenize: %s could not be written%s%s\n", out_path, errno ? ": " : "",
                errno ? strerror(errno) : "");
        unlink(tmp_path);
        return -1;
    }
    printf("%s: %lld tokens\n", out_path, count);
    return 0;
}

/* The tokenizer --tokenizer names for the data set at dir: NULL with err naming what is wrong. */
static tokenizer_t *tokenize_tokenizer(const char *spec, const char *dir, char *err, size_t errlen)
{
    if (strcmp(spec, "bytes") == 0 || strcmp(spec, "chars") == 0)
        return tokenizer_for_dataset(spec, dir, NULL, NULL, NULL, err, errlen);
    if (strncmp(spec, "bpe:", 4) != 0 || !spec[4]) {
        snprintf(err, errlen,
                 "--tokenizer: '%.60s' is not bytes, chars, bpe:VOCAB,MERGES (GPT-2's vocab.json and merges.txt) "
                 "or bpe:TOKENIZER_JSON (Hugging Face's)",
                 spec);
        return NULL;
    }
    char vocab[TOKFILE_PATH_MAX];
    const char *comma = strchr(spec + 4, ',');
    if (!comma) return tokenizer_bpe_hf_file(spec + 4, err, errlen);
    if ((size_t)(comma - spec - 4) >= sizeof vocab) {
        snprintf(err, errlen, "--tokenizer: the vocab path is too long");
        return NULL;
    }
    memcpy(vocab, spec + 4, (size_t)(comma - spec - 4));
    vocab[comma - spec - 4] = 0;
    return tokenizer_bpe_files(vocab, comma + 1, err, errlen);
}

/* DIR/tokens.tokenizer, after the shards: 0, or -1 (reported). */
static int tokenize_save(const tokenizer_t *t, const char *dir)
{
    char path[TOKFILE_PATH_MAX], err[TOKFILE_PATH_MAX + 256];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, TOKENIZER_DATASET_FILE) >= sizeof path) {
        fprintf(stderr, "pacer tokenize: the path %s is too long\n", dir);
        return -1;
    }
    if (tokenizer_save(t, path, err, sizeof err) != 0) {
        fprintf(stderr, "pacer tokenize: %s\n", err);
        return -1;
    }
    printf("%s: %s, vocabulary %d\n", path, tokenizer_kind_name(t), tokenizer_vocab_size(t));
    return 0;
}

int cmd_tokenize(const cli_args_t *a)
{
    if (!a->tokenizer || !*a->tokenizer) {
        fprintf(stderr, "pacer tokenize: --tokenizer bytes, chars, bpe:VOCAB,MERGES (GPT-2's vocab.json and "
                        "merges.txt) or bpe:TOKENIZER_JSON (Hugging Face's) is required\n");
        return CLI_EXIT_USAGE;
    }
    char err[TOKFILE_PATH_MAX + 512];
    tokenizer_t *t = tokenize_tokenizer(a->tokenizer, a->arg, err, sizeof err);
    if (!t) {
        fprintf(stderr, "pacer tokenize: %s\n", err);
        return CLI_EXIT_USAGE;
    }
    if (tokenizer_vocab_size(t) > 65536) {
        fprintf(stderr, "pacer tokenize: %d tokens do not fit llm.c's uint16 shards\n", tokenizer_vocab_size(t));
        tokenizer_free(t);
        return CLI_EXIT_USAGE;
    }
    int rc = tokenize_split(t, a->arg, "train") == 0 && tokenize_split(t, a->arg, "val") == 0 &&
             tokenize_save(t, a->arg) == 0;
    tokenizer_free(t);
    return rc ? CLI_EXIT_OK : CLI_EXIT_USAGE;
}
