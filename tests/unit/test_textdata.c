/* tests/unit/test_textdata.c - text and token data sets (common/tokfile.h,
 * worker/textdata.h): the layouts of llm.c's shards and nanoGPT's arrays, windows and their
 * next-token targets, shards as one split, and every refusal naming its file: an id out of
 * range, a header that lies about its count or its version, an odd byte count, an empty
 * file, a split too short for one window, a missing split; and every file a job reads (text,
 * tokens, a tokenizer's files) opened through the data roots' check: a link out of them is
 * refused, and a FIFO is refused at once, never waited on. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <dirent.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "catalog.h"
#include "data.h"
#include "dataroot.h"
#include "bpe.h"
#include "dsprobe.h"
#include "test_util.h"
#include "textdata.h"
#include "tokenizer.h"
#include "tokfile.h"

static char g_dir[256];

static int setup(void **state)
{
    snprintf(g_dir, sizeof g_dir, "/tmp/pacer-textdata-%d", (int)getpid());
    rm_tree(g_dir);
    assert_int_equal(mkdir(g_dir, 0700), 0);
    return 0;
}

static int teardown(void **state)
{
    rm_tree(g_dir);
    return 0;
}

static void put(const char *name, const void *bytes, size_t n)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(bytes, 1, n, f), n);
    fclose(f);
}

/* uint16 ids, little-endian, after llm.c's header when header (count: what it says) */
static void put_ids(const char *name, const uint16_t *ids, size_t n, int header, uint32_t version, uint32_t count)
{
    uint8_t *buf = calloc(1, TOKFILE_HEADER_BYTES + 2 * n);
    size_t o = 0;
    if (header) {
        const uint32_t h[3] = {TOKFILE_MAGIC, version, count};
        for (int k = 0; k < 3; k++)
            for (int b = 0; b < 4; b++) buf[4 * k + b] = (uint8_t)(h[k] >> (8 * b));
        o = TOKFILE_HEADER_BYTES;
    }
    for (size_t i = 0; i < n; i++) buf[o + 2 * i] = (uint8_t)ids[i], buf[o + 2 * i + 1] = (uint8_t)(ids[i] >> 8);
    put(name, buf, o + 2 * n);
    free(buf);
}

static int load(catalog_format_t f, int block, int vocab, dataset_t *tr, dataset_t *te, char *err, size_t len)
{
    const textdata_opts_t o = {.format = f, .path = g_dir, .block = block, .vocab = vocab};
    return textdata_load(&o, tr, te, err, len);
}

/* Bytes as tokens: 21 bytes in windows of 4 -> 5 windows ((21 - 1) / 4), each target the
 * next byte, the last window's last target byte 20. */
static void test_text_windows(void **state)
{
    const char *text = "abcdefghijklmnopqrstu";
    put("train.txt", text, strlen(text));
    put("val.txt", "0123456789", 10);
    dataset_t tr, te;
    char err[512] = "";
    if (load(CATALOG_FORMAT_TEXT, 4, 0, &tr, &te, err, sizeof err) != DATA_OK) fail_msg("%s", err);
    assert_int_equal(tr.n, 5);
    assert_int_equal(te.n, 2);
    assert_int_equal(tr.C, 4);
    assert_int_equal(tr.num_classes, 256);
    assert_int_equal(dataset_check_shape(&tr, 4, 1, 1, 256, "gpt", err, sizeof err), DATA_OK);
    const int32_t idx[2] = {4, 1};
    float x[8];
    int32_t y[8];
    assert_int_equal(data_batch_gather(&tr, idx, 2, x, 8, y, 0, NULL), 0);
    for (int i = 0; i < 4; i++) {
        assert_true(x[i] == (float)text[16 + i]);
        assert_int_equal(y[i], text[17 + i]);
        assert_true(x[4 + i] == (float)text[4 + i]);
        assert_int_equal(y[4 + i], text[5 + i]);
    }
    /* a batch past the buffer, an index past the windows: nothing written, -1 */
    assert_int_equal(data_batch_gather(&tr, idx, 2, x, 7, y, 0, NULL), -1);
    const int32_t bad[1] = {5};
    assert_int_equal(data_batch_gather(&tr, bad, 1, x, 8, y, 0, NULL), -1);
    /* a model of another window or a smaller vocabulary */
    assert_int_equal(dataset_check_shape(&tr, 8, 1, 1, 256, "gpt", err, sizeof err), DATA_EFORMAT);
    assert_int_equal(dataset_check_shape(&tr, 4, 1, 1, 100, "gpt", err, sizeof err), DATA_ELABEL);
    assert_non_null(strstr(err, "token id 117, model gpt has a vocabulary of 100"));
    dataset_free(&tr);
    dataset_free(&te);
}

/* The chars tokenizer: each file tokenized into ids of the text's sorted characters (a
 * two-byte one among them), in windows as bytes are; the vocabulary is the tokenizer's. */
static void test_text_chars(void **state)
{
    const char *text = "baca\xc3\xa9"
                       "ab",
               *val = "abc\xc3\xa9"
                      "a"; /* train: b a c a é a b (7 characters) */
    put("train.txt", text, strlen(text));
    put("val.txt", val, strlen(val));
    const char *paths[2] = {NULL, NULL};
    char train[512], valp[512], err[512] = "";
    snprintf(train, sizeof train, "%s/train.txt", g_dir);
    snprintf(valp, sizeof valp, "%s/val.txt", g_dir);
    paths[0] = train, paths[1] = valp;
    tokenizer_t *tok = tokenizer_chars_build_files(paths, 2, err, sizeof err);
    if (!tok) fail_msg("%s", err);
    assert_int_equal(tokenizer_vocab_size(tok), 4); /* a b c é */
    const textdata_opts_t o = {.format = CATALOG_FORMAT_TEXT, .path = g_dir, .block = 3, .tokenizer = tok};
    dataset_t tr, te;
    if (textdata_load(&o, &tr, &te, err, sizeof err) != DATA_OK) fail_msg("%s", err);
    assert_int_equal(textdata_vocab(&o), 4);
    assert_int_equal(tr.num_classes, 4);
    assert_int_equal(tr.n, 2); /* (7 - 1) / 3 */
    assert_int_equal(te.n, 1); /* (5 - 1) / 3 */
    const int32_t idx[2] = {0, 1};
    float x[6];
    int32_t y[6];
    assert_int_equal(data_batch_gather(&tr, idx, 2, x, 6, y, 0, NULL), 0);
    const int want[7] = {1, 0, 2, 0, 3, 0, 1}; /* b a c a é a b */
    for (int i = 0; i < 3; i++) {
        assert_true(x[i] == (float)want[i]);
        assert_int_equal(y[i], want[i + 1]);
        assert_true(x[3 + i] == (float)want[3 + i]);
        assert_int_equal(y[3 + i], want[4 + i]);
    }
    assert_int_equal(dataset_check_shape(&tr, 3, 1, 1, 4, "gpt", err, sizeof err), DATA_OK);
    dataset_free(&tr);
    dataset_free(&te);
    /* a vocab_size that is not the tokenizer's */
    const textdata_opts_t o2 = {.format = CATALOG_FORMAT_TEXT, .path = g_dir, .block = 3, .vocab = 256, .tokenizer = tok};
    assert_int_equal(textdata_load(&o2, &tr, &te, err, sizeof err), DATA_EFORMAT);
    assert_non_null(strstr(err, "dataset.vocab_size: 256, but text is read with the tokenizer chars (vocabulary 4)"));
    tokenizer_free(tok);
}

/* Tokenized text kept in the cache directory as llm.c shards: the second load maps them
 * (the same windows), and a kept shard with an id past the vocabulary is made anew. */
static void test_text_chars_cache(void **state)
{
    put("train.txt", "abcabcabcab", 11);
    put("val.txt", "cabca", 5);
    char train[512], valp[512], cache[512], err[512] = "";
    snprintf(train, sizeof train, "%s/train.txt", g_dir);
    snprintf(valp, sizeof valp, "%s/val.txt", g_dir);
    snprintf(cache, sizeof cache, "%s/cache", g_dir);
    const char *paths[2] = {train, valp};
    tokenizer_t *tok = tokenizer_chars_build_files(paths, 2, err, sizeof err);
    if (!tok) fail_msg("%s", err);
    const textdata_opts_t o = {
        .format = CATALOG_FORMAT_TEXT, .path = g_dir, .block = 2, .tokenizer = tok, .cache_dir = cache};
    float x[2][10];
    int32_t y[2][10];
    const int32_t idx[5] = {0, 1, 2, 3, 4};
    for (int round = 0; round < 3; round++) {
        dataset_t tr, te;
        if (textdata_load(&o, &tr, &te, err, sizeof err) != DATA_OK) fail_msg("round %d: %s", round, err);
        assert_int_equal(tr.n, 5);
        assert_int_equal(data_batch_gather(&tr, idx, 5, x[round > 0], 10, y[round > 0], 0, NULL), 0);
        dataset_free(&tr);
        dataset_free(&te);
        if (round > 0) {
            assert_memory_equal(x[0], x[1], sizeof x[0]);
            assert_memory_equal(y[0], y[1], sizeof y[0]);
        }
        /* two shards kept, one a split; then one spoiled: an id of 999 */
        DIR *d = opendir(cache);
        assert_non_null(d);
        int kept = 0;
        char spoil[1024] = "";
        for (struct dirent *e; (e = readdir(d));)
            if (strncmp(e->d_name, "tokens-", 7) == 0) {
                kept++;
                snprintf(spoil, sizeof spoil, "%s/%s", cache, e->d_name);
            }
        closedir(d);
        assert_int_equal(kept, 2);
        if (round == 1) {
            const uint16_t bad[11] = {999, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0};
            FILE *f = fopen(spoil, "r+b");
            assert_non_null(f);
            assert_int_equal(fseek(f, TOKFILE_HEADER_BYTES, SEEK_SET), 0);
            assert_int_equal(fwrite(bad, 2, 1, f), 1);
            fclose(f);
        }
    }
    tokenizer_free(tok);
}

/* llm.c's header and nanoGPT's headerless array read alike; shards train_*.bin in name
 * order are one split, windows never crossing a file. */
static void test_token_shards(void **state)
{
    uint16_t a[9], b[7];
    for (int i = 0; i < 9; i++) a[i] = (uint16_t)(1000 + i);
    for (int i = 0; i < 7; i++) b[i] = (uint16_t)(2000 + i);
    put_ids("train_000002.bin", b, 7, 0, 0, 0); /* nanoGPT: (7 - 1) / 3 = 2 windows */
    put_ids("train_000001.bin", a, 9, 1, 1, 9); /* llm.c: (9 - 1) / 3 = 2 windows */
    put_ids("val.bin", a, 5, 1, 1, 5);
    dataset_t tr, te;
    char err[512] = "";
    if (load(CATALOG_FORMAT_TOKENS, 3, 50257, &tr, &te, err, sizeof err) != DATA_OK) fail_msg("%s", err);
    assert_int_equal(tr.n, 4);
    assert_int_equal(te.n, 1);
    assert_int_equal(tr.tok->max_id, 2006);
    const int32_t idx[2] = {1, 2};
    float x[6];
    int32_t y[6];
    assert_int_equal(data_batch_gather(&tr, idx, 2, x, 6, y, 0, NULL), 0);
    /* window 1: a[3..5] -> a[4..6]; window 2 is the second file's first: b[0..2] -> b[1..3] */
    for (int i = 0; i < 3; i++) {
        assert_true(x[i] == (float)a[3 + i]);
        assert_int_equal(y[i], a[4 + i]);
        assert_true(x[3 + i] == (float)b[i]);
        assert_int_equal(y[3 + i], b[1 + i]);
    }
    dsprobe_t p;
    if (dsprobe("tokens", g_dir, "nhwc", &p, err, sizeof err) != 0) fail_msg("%s", err);
    assert_int_equal(p.ntrain, 16);
    assert_int_equal(p.ntest, 5);
    dataset_free(&tr);
    dataset_free(&te);
}

/* Each bad file is refused by name with what is wrong, before any window is read. */
static void test_token_refusals(void **state)
{
    uint16_t ids[10];
    for (int i = 0; i < 10; i++) ids[i] = (uint16_t)i;
    char err[512];
    dataset_t tr, te;
    static const struct {
        int header;
        uint32_t version, count;
        size_t n;
        int vocab;
        const char *want;
    } CASES[] = {
        {0, 0, 0, 10, 9, "train.bin: id 9 at token 9 is outside the vocabulary (vocab_size 9)"},
        {1, 1, 12, 10, 100, "train.bin: header says 12 tokens, the file holds 20 bytes after it (10 tokens)"},
        {1, 2, 10, 10, 100, "train.bin: llm.c header version 2"},
        {1, 1, 0, 0, 100, "train.bin: header says 0 tokens"},
    };
    for (size_t c = 0; c < sizeof CASES / sizeof CASES[0]; c++) {
        put_ids("train.bin", ids, CASES[c].n, CASES[c].header, CASES[c].version, CASES[c].count);
        put_ids("val.bin", ids, 10, 0, 0, 0);
        err[0] = '\0';
        assert_int_not_equal(load(CATALOG_FORMAT_TOKENS, 2, CASES[c].vocab, &tr, &te, err, sizeof err), DATA_OK);
        if (!strstr(err, CASES[c].want)) fail_msg("case %zu: '%s', want '%s'", c, err, CASES[c].want);
        assert_null(tr.tok);
    }
    put("train.bin", "abc", 3);
    assert_int_not_equal(load(CATALOG_FORMAT_TOKENS, 2, 100, &tr, &te, err, sizeof err), DATA_OK);
    assert_non_null(strstr(err, "train.bin: 3 bytes, an odd count"));
    put("train.bin", "", 0);
    assert_int_not_equal(load(CATALOG_FORMAT_TOKENS, 2, 100, &tr, &te, err, sizeof err), DATA_OK);
    assert_non_null(strstr(err, "train.bin: empty file"));
    put_ids("train.bin", ids, 3, 0, 0, 0);
    assert_int_not_equal(load(CATALOG_FORMAT_TOKENS, 4, 100, &tr, &te, err, sizeof err), DATA_OK);
    assert_non_null(strstr(err, "fewer than block_size + 1 = 5 tokens in train"));
    assert_int_not_equal(load(CATALOG_FORMAT_TOKENS, 2, 0, &tr, &te, err, sizeof err), DATA_OK);
    assert_non_null(strstr(err, "dataset.vocab_size: required with dataset.format tokens"));
    /* a split that is not there */
    char path[512];
    snprintf(path, sizeof path, "%s/val.bin", g_dir);
    unlink(path);
    put_ids("train.bin", ids, 10, 0, 0, 0);
    assert_int_not_equal(load(CATALOG_FORMAT_TOKENS, 2, 100, &tr, &te, err, sizeof err), DATA_OK);
    assert_non_null(strstr(err, "neither val.bin nor val_*.bin"));
    snprintf(path, sizeof path, "%s/val.txt", g_dir);
    assert_int_not_equal(load(CATALOG_FORMAT_TEXT, 2, 0, &tr, &te, err, sizeof err), DATA_OK);
    assert_non_null(strstr(err, "train.txt"));
    assert_int_not_equal(load(CATALOG_FORMAT_TEXT, 2, 300, &tr, &te, err, sizeof err), DATA_OK);
    assert_non_null(strstr(err, "dataset.vocab_size: 300, but text is read as bytes"));
}

/* The parsers alone, on bytes (what the fuzzer drives): a magic with too few bytes for a
 * header is refused, a headerless even file is ids. */
static void test_layout_parser(void **state)
{
    uint8_t head[16] = {0};
    const uint32_t magic = TOKFILE_MAGIC;
    memcpy(head, &magic, 4);
    tokfile_layout_t l;
    char err[256];
    assert_int_equal(tokfile_layout(head, 16, 16, 2, "f", &l, err, sizeof err), -1);
    assert_non_null(strstr(err, "f: llm.c header (magic 20240520) cut short"));
    head[0] = 1;
    assert_int_equal(tokfile_layout(head, 16, 16, 2, "f", &l, err, sizeof err), 0);
    assert_int_equal(l.ntokens, 8);
    assert_int_equal(l.header, 0);
    assert_int_equal(tokfile_layout(head, 16, 17, 1, "f", &l, err, sizeof err), 0);
    assert_int_equal(l.ntokens, 17);
    const uint8_t ids[4] = {0xff, 0xff, 1, 0};
    int mx = -1;
    assert_int_equal(tokfile_check_ids(ids + 2, 1, 2, "f", &mx, err, sizeof err), 0);
    assert_int_equal(mx, 1);
    assert_int_equal(tokfile_check_ids(ids, 2, 65535, "f", &mx, err, sizeof err), -1);
    assert_non_null(strstr(err, "f: id 65535 at token 0"));
}

/* Every way a job's files are read, in the worker (textdata_load, the tokenizers) and in
 * the coordinator's submission (dsprobe), on a data set at g_dir/root/set whose file named
 * `name` is what make() puts there; each must fail naming set/NAME and saying want. */
static void expect_refused_everywhere(const char *name, const char *want)
{
    char set[512], file[600], other[600], err[1024];
    snprintf(set, sizeof set, "%s/root/set", g_dir);
    snprintf(file, sizeof file, "%s/%s", set, name);
    char named[600];
    snprintf(named, sizeof named, "set/%s: %s", name, want);
    dataset_t tr, te;
    const int text = strcmp(name, "train.txt") == 0 || strcmp(name, "val.txt") == 0,
              tokens = strstr(name, ".bin") != NULL;
    if (text || tokens) {
        const textdata_opts_t o = {.format = text ? CATALOG_FORMAT_TEXT : CATALOG_FORMAT_TOKENS,
                                   .path = set,
                                   .block = 2,
                                   .vocab = text ? 0 : 100};
        err[0] = 0;
        assert_int_not_equal(textdata_load(&o, &tr, &te, err, sizeof err), DATA_OK);
        if (!strstr(err, named)) fail_msg("%s, textdata_load: '%s', want '%s'", name, err, named);
        dsprobe_t p;
        err[0] = 0;
        assert_int_equal(dsprobe(text ? "text" : "tokens", set, "", &p, err, sizeof err), -1);
        if (!strstr(err, named)) fail_msg("%s, dsprobe: '%s', want '%s'", name, err, named);
    }
    if (text) { /* the chars tokenizer reads the text to build its vocabulary, then tokenizes it */
        snprintf(other, sizeof other, "%s/val.txt", set);
        const char *paths[2] = {file, other};
        err[0] = 0;
        assert_null(tokenizer_chars_build_files(paths, 2, err, sizeof err));
        if (!strstr(err, named)) fail_msg("%s, chars: '%s', want '%s'", name, err, named);
        const char *abc[1] = {"abc"};
        const size_t abclen[1] = {3};
        tokenizer_t *tok = tokenizer_chars_build(abc, abclen, NULL, 1, err, sizeof err);
        assert_non_null(tok);
        const textdata_opts_t o = {.format = CATALOG_FORMAT_TEXT, .path = set, .block = 2, .tokenizer = tok};
        err[0] = 0;
        assert_int_not_equal(textdata_load(&o, &tr, &te, err, sizeof err), DATA_OK);
        tokenizer_free(tok);
        if (!strstr(err, named)) fail_msg("%s, tokenized: '%s', want '%s'", name, err, named);
    }
    if (strcmp(name, "vocab.json") == 0 || strcmp(name, "merges.txt") == 0) {
        char vocab[600], merges[600];
        snprintf(vocab, sizeof vocab, "%s/vocab.json", set);
        snprintf(merges, sizeof merges, "%s/merges.txt", set);
        err[0] = 0;
        assert_null(tokenizer_bpe_files(vocab, merges, err, sizeof err));
        if (!strstr(err, named)) fail_msg("%s, bpe: '%s', want '%s'", name, err, named);
        err[0] = 0;
        assert_null(tokenizer_bpe_hf_file(file, err, sizeof err));
        if (!strstr(err, named)) fail_msg("%s, tokenizer.json: '%s', want '%s'", name, err, named);
        err[0] = 0;
        assert_null(bpe_load_files(vocab, merges, err, sizeof err));
        if (!strstr(err, named)) fail_msg("%s, bpe_load_files: '%s', want '%s'", name, err, named);
    }
    if (strcmp(name, "tokens.tokenizer") == 0) {
        err[0] = 0;
        assert_null(tokenizer_load(file, err, sizeof err));
        if (!strstr(err, named)) fail_msg("%s, tokenizer_load: '%s', want '%s'", name, err, named);
    }
}

/* A fresh data set under the root: every file regular and valid (text, tokens, a
 * tokenizer's), then the one named replaced by what kind says: a link to a file outside
 * the roots ("link") or a FIFO ("fifo"). */
static void make_set(const char *name, const char *kind)
{
    char dir[512], path[600], secret[512];
    uint16_t ids[10];
    for (int i = 0; i < 10; i++) ids[i] = (uint16_t)i;
    snprintf(dir, sizeof dir, "%s/root/set", g_dir);
    rm_tree(dir);
    assert_int_equal(mkdir(dir, 0700), 0);
    put("root/set/train.txt", "abcabcabcab", 11);
    put("root/set/val.txt", "cabca", 5);
    put_ids("root/set/train.bin", ids, 10, 0, 0, 0);
    put_ids("root/set/val.bin", ids, 10, 0, 0, 0);
    put("root/set/vocab.json", "{}", 2);
    put("root/set/merges.txt", "#version: 0.2\n", 14);
    put("root/set/tokens.tokenizer", "x", 1);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    assert_int_equal(unlink(path), 0);
    snprintf(secret, sizeof secret, "%s/secret", g_dir);
    if (strcmp(kind, "link") == 0) assert_int_equal(symlink(secret, path), 0);
    else assert_int_equal(mkfifo(path, 0600), 0);
}

/* A file of a job's data set that is a link out of the data roots is refused by name,
 * whichever file it is, and nothing of what it leads to is told; a FIFO is refused at
 * once, by name, instead of blocking the reader (a submission's HTTP thread, a worker): an
 * open of one that blocked would hang here until the alarm ends the test. */
static void test_files_checked_open(void **state)
{
    char root[512], err[512];
    snprintf(root, sizeof root, "%s/root", g_dir);
    assert_int_equal(mkdir(root, 0700), 0);
    put("secret", "the private text of another user\n", 33);
    char secret[512];
    snprintf(secret, sizeof secret, "%s/secret", g_dir);
    assert_int_equal(chmod(secret, 0600), 0);
    const char *roots[1] = {root};
    assert_int_equal(dataroot_set(roots, 1, err, sizeof err), 0);
    static const char *const NAMES[] = {"train.txt",  "val.txt",    "train.bin",
                                        "vocab.json", "merges.txt", "tokens.tokenizer"};
    alarm(60);
    for (size_t i = 0; i < sizeof NAMES / sizeof NAMES[0]; i++) {
        make_set(NAMES[i], "link");
        expect_refused_everywhere(NAMES[i], "a file that leaves the data roots");
        make_set(NAMES[i], "fifo");
        expect_refused_everywhere(NAMES[i], "a FIFO, not a regular file");
    }
    /* the same set, every file regular, reads */
    make_set("tokens.tokenizer", "link");
    dataset_t tr, te;
    char set[512];
    snprintf(set, sizeof set, "%s/root/set", g_dir);
    const textdata_opts_t o = {.format = CATALOG_FORMAT_TEXT, .path = set, .block = 2};
    if (textdata_load(&o, &tr, &te, err, sizeof err) != DATA_OK) fail_msg("%s", err);
    dataset_free(&tr);
    dataset_free(&te);
    alarm(0);
    assert_int_equal(dataroot_set(NULL, 0, err, sizeof err), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_text_windows, setup, teardown),
        cmocka_unit_test_setup_teardown(test_text_chars, setup, teardown),
        cmocka_unit_test_setup_teardown(test_text_chars_cache, setup, teardown),
        cmocka_unit_test_setup_teardown(test_token_shards, setup, teardown),
        cmocka_unit_test_setup_teardown(test_token_refusals, setup, teardown),
        cmocka_unit_test(test_layout_parser),
        cmocka_unit_test_setup_teardown(test_files_checked_open, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
