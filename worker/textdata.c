/* worker/textdata.c - see textdata.h. */
#include "textdata.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dataroot.h"
#include "errmsg.h"
#include "fs.h"
#include "sha256.h"
#include "tokfile.h"

/* Whether o's text is tokenized (into uint16 ids) rather than read as bytes. */
static int tokenized(const textdata_opts_t *o)
{
    return o->format == CATALOG_FORMAT_TEXT && o->tokenizer && tokenizer_kind(o->tokenizer) != TOKENIZER_BYTES;
}

int textdata_vocab(const textdata_opts_t *o)
{
    if (o->format != CATALOG_FORMAT_TEXT) return o->vocab;
    return o->tokenizer ? tokenizer_vocab_size(o->tokenizer) : 256;
}

static int map_file(const textdata_opts_t *o, const char *path, int own, data_tokens_t *t, int f, char *err,
                    size_t errlen);

/* Where the ids of the text at path (st: its size and time) tokenized by o's tokenizer are
 * kept: o->cache_dir/tokens-SHA.bin, SHA over the tokenizer's saved form, the path, the
 * size and the modification time (an edited file or another vocabulary is another key).
 * 0, or -1 when not kept (no cache_dir, out of memory, a path too long). */
static int cache_path(const textdata_opts_t *o, const char *path, const struct stat *st, char *out, size_t len)
{
    char *buf, why[128];
    size_t n;
    if (!o->cache_dir || !o->cache_dir[0] || tokenizer_serialize(o->tokenizer, &buf, &n, why, sizeof why) != 0)
        return -1;
    char *key = realloc(buf, n + strlen(path) + 96);
    if (!key) {
        free(buf);
        return -1;
    }
    n += (size_t)sprintf(key + n, "\n%s\n%lld %lld.%09ld", path, (long long)st->st_size, (long long)st->st_mtim.tv_sec,
                         st->st_mtim.tv_nsec);
    char hex[SHA256_HEX_LEN + 1];
    sha256_hex(key, n, hex);
    free(key);
    const int w = snprintf(out, len, "%s/tokens-%s.bin", o->cache_dir, hex);
    return w < 0 || (size_t)w >= len ? -1 : 0;
}

/* The ids of text file f of the split, tokenized into an anonymous mapping (unmapped by
 * dataset_free as a file's would be) laid out as llm.c's shard (header, uint16 ids), its
 * windows counted. With o->cache_dir the shard is also written there, and a later load (the
 * next job, another rank) maps it instead of tokenizing again; a kept shard that does not
 * read back (cut short, an id past the vocabulary) is made anew. */
static int tokenize_file(const textdata_opts_t *o, const char *path, data_tokens_t *t, int f, char *err, size_t errlen)
{
    /* the checked open (dataroot.h): a link out of the data roots or a FIFO is refused */
    const int fd = dataroot_open(path, err, errlen);
    if (fd < 0) return DATA_ENOENT;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        const int e = errno;
        close(fd);
        return errmsg_code(err, errlen, DATA_ENOENT, "%s: %s", path, strerror(e));
    }
    if (st.st_size == 0 || (unsigned long long)st.st_size > TEXTDATA_MAX_TOKENIZE_BYTES) {
        close(fd);
        return errmsg_code(err, errlen, DATA_EFORMAT,
                           "%s: %lld bytes: the %s tokenizer reads 1 to %llu bytes a file (tokenize a larger corpus "
                           "with `pacer tokenize` into a tokens data set)",
                           path, (long long)st.st_size, tokenizer_kind_name(o->tokenizer), TEXTDATA_MAX_TOKENIZE_BYTES);
    }
    char kept[TOKFILE_PATH_MAX], why[512];
    const int keep = cache_path(o, path, &st, kept, sizeof kept) == 0;
    if (keep && access(kept, R_OK) == 0) {
        if (map_file(o, kept, 1, t, f, why, sizeof why) == DATA_OK) {
            close(fd);
            return DATA_OK;
        }
        if (t->maps[f]) munmap(t->maps[f], t->map_lens[f]);
        t->maps[f] = NULL;
    }
    void *text = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (text == MAP_FAILED) return errmsg_code(err, errlen, DATA_ENOMEM, "%s: cannot map: %s", path, strerror(errno));
    uint32_t *ids = NULL;
    size_t n = 0;
    const int rc = tokenizer_encode_until(o->tokenizer, text, (size_t)st.st_size, o->stop, &ids, &n, why, sizeof why);
    munmap(text, (size_t)st.st_size);
    if (rc != 0) return errmsg_code(err, errlen, DATA_EFORMAT, "%s: %s", path, why);
    const size_t len = TOKFILE_HEADER_BYTES + n * 2;
    void *map = n ? mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) : MAP_FAILED;
    if (map == MAP_FAILED) {
        free(ids);
        return errmsg_code(err, errlen, DATA_ENOMEM, "%s: %zu tokens: out of memory", path, n);
    }
    uint8_t *out = map;
    const uint32_t head[3] = {TOKFILE_MAGIC, TOKFILE_VERSION, (uint32_t)n};
    for (int k = 0; k < 3; k++)
        for (int b = 0; b < 4; b++) out[4 * k + b] = (uint8_t)(head[k] >> (8 * b));
    out += TOKFILE_HEADER_BYTES;
    int max_id = 0;
    for (size_t k = 0; k < n; k++) {
        out[2 * k] = (uint8_t)(ids[k] & 0xFF), out[2 * k + 1] = (uint8_t)(ids[k] >> 8);
        if ((int)ids[k] > max_id) max_id = (int)ids[k];
    }
    free(ids);
    /* keeping it is an optimisation: a cache that cannot be written costs the next load time */
    if (keep && (fs_mkdir_p(o->cache_dir, 0755) != 0 || fs_atomic_write(kept, map, len, 0644) != 0))
        fprintf(stderr, "pacer-worker: %s: the tokenized text is not kept: %s\n", kept, strerror(errno));
    t->maps[f] = map;
    t->map_lens[f] = len;
    t->tokens[f] = out;
    if (max_id > t->max_id) t->max_id = max_id;
    t->first[f + 1] = t->first[f] + (int64_t)((n - 1) / (uint64_t)o->block);
    return DATA_OK;
}

/* Maps file f of the split: its layout, its ids checked, its windows counted. own: a
 * shard of the decoded cache (pacer's, outside the data roots), else a file of the data
 * set, opened through the roots' check (dataroot.h). One open for the layout and the
 * mapping: what is checked is what is mapped. */
static int map_file(const textdata_opts_t *o, const char *path, int own, data_tokens_t *t, int f, char *err,
                    size_t errlen)
{
    tokfile_layout_t lay;
    const int fd = own ? dataroot_open_own(path, err, errlen) : dataroot_open(path, err, errlen);
    if (fd < 0) return DATA_ENOENT;
    if (tokfile_fd_layout(fd, path, t->width, &lay, err, errlen) != 0) {
        close(fd);
        return DATA_EFORMAT;
    }
    const size_t len = (size_t)(lay.offset + lay.ntokens * (uint64_t)t->width);
    void *map = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (map == MAP_FAILED) return errmsg_code(err, errlen, DATA_ENOMEM, "%s: cannot map: %s", path, strerror(errno));
    t->maps[f] = map;
    t->map_lens[f] = len;
    t->tokens[f] = (const uint8_t *)map + lay.offset;
    int max_id = 255;
    if (t->width == 2 && tokfile_check_ids(t->tokens[f], lay.ntokens, t->vocab, path, &max_id, err, errlen) != 0)
        return DATA_ELABEL;
    if (t->width == 1) {
        max_id = 0;
        for (uint64_t k = 0; k < lay.ntokens && max_id < 255; k++)
            if (t->tokens[f][k] > max_id) max_id = t->tokens[f][k];
    }
    if (max_id > t->max_id) t->max_id = max_id;
    /* a window reads block + 1 tokens (its last target is the next window's first id) */
    t->first[f + 1] = t->first[f] + (int64_t)((lay.ntokens - 1) / (uint64_t)o->block);
    return DATA_OK;
}

static int load_split(const textdata_opts_t *o, const char *split, dataset_t *d, char *err, size_t errlen)
{
    memset(d, 0, sizeof *d);
    data_tokens_t *t = calloc(1, sizeof *t);
    char(*paths)[TOKFILE_PATH_MAX] = malloc((size_t)TOKFILE_MAX_SHARDS * TOKFILE_PATH_MAX);
    if (!t || !paths) {
        free(t);
        free(paths);
        return errmsg_code(err, errlen, DATA_ENOMEM, "%s: out of memory", o->path);
    }
    d->tok = t;
    t->block = o->block;
    t->vocab = textdata_vocab(o);
    t->width = o->format == CATALOG_FORMAT_TEXT && !tokenized(o) ? 1 : 2;
    int rc = DATA_OK;
    const int n = tokfile_split_files(o->path, split, o->format == CATALOG_FORMAT_TEXT ? 1 : 2, paths, err, errlen);
    if (n < 0) rc = DATA_ENOENT;
    else {
        t->tokens = calloc((size_t)n, sizeof *t->tokens);
        t->first = calloc((size_t)n + 1, sizeof *t->first);
        t->maps = calloc((size_t)n, sizeof *t->maps);
        t->map_lens = calloc((size_t)n, sizeof *t->map_lens);
        if (!t->tokens || !t->first || !t->maps || !t->map_lens)
            rc = errmsg_code(err, errlen, DATA_ENOMEM, "%s: out of memory", o->path);
        for (int f = 0; f < n && rc == DATA_OK; f++) {
            t->nfiles = f + 1; /* what dataset_free unmaps */
            rc = tokenized(o) ? tokenize_file(o, paths[f], t, f, err, errlen)
                              : map_file(o, paths[f], 0, t, f, err, errlen);
        }
        snprintf(d->source, sizeof d->source, "%s", paths[0]);
    }
    if (rc == DATA_OK && t->first[t->nfiles] < 1)
        rc = errmsg_code(err, errlen, DATA_EFORMAT, "%s: fewer than block_size + 1 = %d tokens in %s", o->path,
                         o->block + 1, split);
    if (rc == DATA_OK && t->first[t->nfiles] > INT_MAX)
        rc = errmsg_code(err, errlen, DATA_EFORMAT, "%s: more than %d windows of %d tokens in %s", o->path, INT_MAX,
                         o->block, split);
    free(paths);
    if (rc != DATA_OK) {
        dataset_free(d);
        return rc;
    }
    d->n = (int)t->first[t->nfiles];
    d->C = o->block;
    d->H = d->W = 1;
    d->num_classes = t->vocab;
    snprintf(d->label_source, sizeof d->label_source, "%s", d->source);
    return DATA_OK;
}

int textdata_load(const textdata_opts_t *o, dataset_t *train, dataset_t *test, char *err, size_t errlen)
{
    memset(train, 0, sizeof *train);
    memset(test, 0, sizeof *test);
    if (o->format != CATALOG_FORMAT_TEXT && o->format != CATALOG_FORMAT_TOKENS)
        return errmsg_code(err, errlen, DATA_EUNKNOWN, "%s: dataset.format %s is not text or tokens", o->path,
                           catalog_format_name(o->format));
    if (o->block < 1) return errmsg_code(err, errlen, DATA_EFORMAT, "dataset.block_size: %d, must be >= 1", o->block);
    if (o->format == CATALOG_FORMAT_TEXT && o->vocab != 0 && o->vocab != textdata_vocab(o))
        return errmsg_code(err, errlen, DATA_EFORMAT,
                           "dataset.vocab_size: %d, but text is read %s%s (vocabulary %d): leave it out", o->vocab,
                           tokenized(o) ? "with the tokenizer " : "as bytes",
                           tokenized(o) ? tokenizer_kind_name(o->tokenizer) : "", textdata_vocab(o));
    if (o->format == CATALOG_FORMAT_TOKENS && (o->vocab < 1 || o->vocab > 65536))
        return errmsg_code(err, errlen, DATA_EFORMAT,
                           "dataset.vocab_size: required with dataset.format tokens (1 to 65536: uint16 ids), got %d",
                           o->vocab);
    int rc = load_split(o, "train", train, err, errlen);
    if (rc == DATA_OK) rc = load_split(o, "val", test, err, errlen);
    if (rc != DATA_OK) dataset_free(train);
    return rc;
}
