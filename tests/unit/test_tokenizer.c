/* tests/unit/test_tokenizer.c - the tokenizers behind one interface (common/tokenizer.c):
 * bytes, chars and bpe round trips, a character outside the chars vocabulary refused by
 * name, invalid UTF-8 refused with its offset, the saved file loaded back equal (and found
 * from a checkpoint's path), and malformed saved files refused by name. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tokenizer.h"

static void round_trip(const tokenizer_t *t, const char *text, size_t want_ids)
{
    uint32_t *ids;
    size_t n, len;
    char err[256] = "", *back;
    if (tokenizer_encode(t, text, strlen(text), &ids, &n, err, sizeof err) != 0) fail_msg("%s", err);
    assert_int_equal(n, want_ids);
    for (size_t i = 0; i < n; i++) assert_true(ids[i] < (uint32_t)tokenizer_vocab_size(t));
    if (tokenizer_decode(t, ids, n, &back, &len, err, sizeof err) != 0) fail_msg("%s", err);
    assert_int_equal(len, strlen(text));
    assert_memory_equal(back, text, len);
    free(ids);
    free(back);
}

static tokenizer_t *chars_of(const char *text)
{
    const char *texts[1] = {text}, *names[1] = {"train.txt"};
    size_t lens[1] = {strlen(text)};
    char err[256] = "";
    tokenizer_t *t = tokenizer_chars_build(texts, lens, names, 1, err, sizeof err);
    if (!t) fail_msg("%s", err);
    return t;
}

static void test_bytes(void **st)
{
    (void)st;
    tokenizer_t *t = tokenizer_bytes();
    assert_int_equal(tokenizer_vocab_size(t), 256);
    assert_string_equal(tokenizer_kind_name(t), "bytes");
    round_trip(t, "any \xff\xfe bytes", 12);
    uint32_t bad[2] = {65, 256};
    char err[256] = "", *out;
    size_t len;
    assert_int_equal(tokenizer_decode(t, bad, 2, &out, &len, err, sizeof err), -1);
    assert_non_null(strstr(err, "id 256 at index 1"));
    tokenizer_free(t);
}

static void test_chars(void **st)
{
    (void)st;
    /* "é" (U+00E9) and "日" (U+65E5) sort after the ASCII letters */
    tokenizer_t *t = chars_of("hello w\xc3\xa9rld \xe6\x97\xa5");
    assert_string_equal(tokenizer_kind_name(t), "chars");
    assert_int_equal(tokenizer_vocab_size(t), 10); /* ' ' d e h l o r w é 日 */
    uint32_t *ids;
    size_t n;
    char err[256] = "";
    assert_int_equal(tokenizer_encode(t, " dé日", 7, &ids, &n, err, sizeof err), 0);
    assert_int_equal(n, 4);
    assert_int_equal(ids[0], 0);
    assert_int_equal(ids[1], 1);
    assert_int_equal(ids[2], 8);
    assert_int_equal(ids[3], 9);
    free(ids);
    round_trip(t, "hello w\xc3\xa9rld", 11);
    /* a character the training text never had: named with its offset */
    assert_int_equal(tokenizer_encode(t, "hez", 3, &ids, &n, err, sizeof err), -1);
    assert_non_null(strstr(err, "'z' (U+007A) at byte 2"));
    assert_int_equal(tokenizer_encode(t, "h\xe2\x82\xac", 4, &ids, &n, err, sizeof err), -1);
    assert_non_null(strstr(err, "U+20AC at byte 1"));
    assert_int_equal(tokenizer_encode(t, "h\xc3", 2, &ids, &n, err, sizeof err), -1);
    assert_non_null(strstr(err, "byte 1 (0xC3) is not valid UTF-8"));
    uint32_t bad[1] = {10};
    char *out;
    size_t len;
    assert_int_equal(tokenizer_decode(t, bad, 1, &out, &len, err, sizeof err), -1);
    assert_non_null(strstr(err, "id 10 at index 0 is outside the vocabulary (vocab_size 10"));
    tokenizer_free(t);
}

static void test_chars_refusals(void **st)
{
    (void)st;
    const char *texts[2] = {"ok", "a\xed\xa0\x80"}, *names[2] = {"train.txt", "val.txt"}; /* a surrogate */
    size_t lens[2] = {2, 4};
    char err[256] = "";
    assert_null(tokenizer_chars_build(texts, lens, names, 2, err, sizeof err));
    assert_non_null(strstr(err, "val.txt: byte 1 (0xED) is not valid UTF-8"));
    lens[0] = 0;
    assert_null(tokenizer_chars_build(texts, lens, names, 1, err, sizeof err));
    assert_non_null(strstr(err, "empty"));
}

/* GPT-2's bytes_to_unicode, as UTF-8, of byte b into out (as tests/unit/test_bpe.c). */
static void byte_char(int b, char *out)
{
    int printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174, n = 0;
    for (int i = 0; i < b; i++) n += !((i >= 33 && i <= 126) || (i >= 161 && i <= 172) || i >= 174);
    unsigned cp = printable ? (unsigned)b : 256u + (unsigned)n;
    if (cp < 0x80) out[0] = (char)cp, out[1] = 0;
    else out[0] = (char)(0xC0 | (cp >> 6)), out[1] = (char)(0x80 | (cp & 0x3F)), out[2] = 0;
}

static void write_file(const char *path, const char *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    fclose(f);
}

/* vocab.json of the 256 bytes and "ab" (256), merges.txt with "a b". */
static tokenizer_t *small_bpe(const char *dir)
{
    char *v = malloc(65536), c[4], vp[512], mp[512], err[256] = "";
    size_t k = (size_t)sprintf(v, "{");
    for (int b = 0; b < 256; b++) {
        byte_char(b, c);
        k += (size_t)sprintf(v + k, "%s\"%s%s\": %d", b ? ", " : "", (b == '"' || b == '\\') ? "\\" : "", c, b);
    }
    k += (size_t)sprintf(v + k, ", \"ab\": 256}");
    snprintf(vp, sizeof vp, "%s/vocab.json", dir);
    snprintf(mp, sizeof mp, "%s/merges.txt", dir);
    write_file(vp, v, k);
    write_file(mp, "#version: 0.2\na b\n", 18);
    free(v);
    tokenizer_t *t = tokenizer_for_dataset("bpe", dir, vp, mp, "", err, sizeof err);
    if (!t) fail_msg("%s", err);
    return t;
}

static char *tmpdir(void)
{
    static char dir[64];
    snprintf(dir, sizeof dir, "/tmp/test_tokenizer.XXXXXX");
    assert_non_null(mkdtemp(dir));
    return dir;
}

static void test_bpe(void **st)
{
    (void)st;
    const char *dir = tmpdir();
    tokenizer_t *t = small_bpe(dir);
    assert_string_equal(tokenizer_kind_name(t), "bpe");
    assert_int_equal(tokenizer_vocab_size(t), 257);
    round_trip(t, "ab abc", 4); /* ab; then " abc": space, ab, c */
    tokenizer_free(t);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

/* Saved next to a job's checkpoints, loaded from the checkpoint's path: the same ids. */
static void save_load(tokenizer_t *t, const char *dir)
{
    char path[512], ckpt[512], err[256] = "";
    assert_int_equal(tokenizer_path_for_job(path, sizeof path, dir, "job.1"), 0);
    if (tokenizer_save(t, path, err, sizeof err) != 0) fail_msg("%s", err);
    snprintf(ckpt, sizeof ckpt, "%s/job.1.step40-epoch2.ckpt", dir);
    tokenizer_t *back = tokenizer_load_for_checkpoint(ckpt, err, sizeof err);
    if (!back) fail_msg("%s", err);
    assert_true(tokenizer_equal(t, back));
    tokenizer_free(back);
    snprintf(ckpt, sizeof ckpt, "%s/job.1.ckpt", dir);
    back = tokenizer_load_for_checkpoint(ckpt, err, sizeof err);
    assert_non_null(back);
    assert_true(tokenizer_equal(t, back));
    tokenizer_free(back);
    unlink(path);
}

static void test_save_load(void **st)
{
    (void)st;
    const char *dir = tmpdir();
    tokenizer_t *t = chars_of("first\nsecond \xe6\x97\xa5\n");
    save_load(t, dir);
    tokenizer_free(t);
    t = tokenizer_bytes();
    save_load(t, dir);
    tokenizer_free(t);
    t = small_bpe(dir);
    save_load(t, dir);
    /* a checkpoint with no tokenizer file beside it: a bytes job's */
    char ckpt[512], err[256] = "";
    snprintf(ckpt, sizeof ckpt, "%s/other.ckpt", dir);
    tokenizer_t *b = tokenizer_load_for_checkpoint(ckpt, err, sizeof err);
    assert_non_null(b);
    assert_string_equal(tokenizer_kind_name(b), "bytes");
    assert_false(tokenizer_equal(t, b));
    tokenizer_free(b);
    tokenizer_free(t);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

static void expect_refused(const char *file, size_t len, const char *want)
{
    char err[256] = "";
    tokenizer_t *t = tokenizer_parse(file, len, "t.tokenizer", err, sizeof err);
    if (t) fail_msg("accepted: %.*s", (int)len, file);
    if (!strstr(err, want)) fail_msg("\"%s\" does not say \"%s\"", err, want);
}

static void test_parse_refusals(void **st)
{
    (void)st;
    const char ok[] = "pacer-tokenizer 1\nkind chars\nchars 3\nabc\n";
    char err[256] = "";
    tokenizer_t *t = tokenizer_parse(ok, sizeof ok - 1, "t.tokenizer", err, sizeof err);
    if (!t) fail_msg("%s", err);
    assert_int_equal(tokenizer_vocab_size(t), 3);
    tokenizer_free(t);
    expect_refused("", 0, "not a pacer tokenizer file");
    expect_refused("pacer-tokenizer 2\nkind bytes\n", 29, "not a pacer tokenizer file");
    expect_refused("pacer-tokenizer 1\nkind words\n", 29, "kind words is not");
    expect_refused("pacer-tokenizer 1\nkind chars\nchars 9\nabc\n", 41, "section chars says 9 bytes");
    expect_refused("pacer-tokenizer 1\nkind chars\nchars 3\nbac\n", 41, "must increase");
    expect_refused("pacer-tokenizer 1\nkind chars\nchars 3\na\xff"
                   "c\n",
                   41, "byte 1 is not valid UTF-8");
    expect_refused("pacer-tokenizer 1\nkind chars\nchars 0\n\n", 38, "empty");
    expect_refused("pacer-tokenizer 1\nkind bytes\nextra", 34, "bytes after the last section");
    expect_refused("pacer-tokenizer 1\nkind bpe\nvocab 2\n{}\n", 38, "merges LENGTH");
    expect_refused("pacer-tokenizer 1\nkind bpe\nvocab 99999999999\n", 45, "vocab LENGTH");
    /* a length spelt with a leading zero: the writer never spells it so, and an accepted
     * file must write back byte for byte (fuzz_tokenizer's finding) */
    expect_refused("pacer-tokenizer 1\nkind chars\nchars 03\nabc\n", 42, "no leading zero");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bytes), cmocka_unit_test(test_chars),     cmocka_unit_test(test_chars_refusals),
        cmocka_unit_test(test_bpe),   cmocka_unit_test(test_save_load), cmocka_unit_test(test_parse_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
