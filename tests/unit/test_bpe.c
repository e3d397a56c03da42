/* tests/unit/test_bpe.c - GPT-2's BPE (common/bpe.c) on a small vocabulary of its own: the
 * pre-tokenizer's splits, merging by rank, decode round-trips (invalid UTF-8 included), and
 * malformed vocab.json / merges.txt refused by name; the encoder's pieces (bpe_piece_len)
 * the pre-tokenizer's over the whole text, cut as before, on texts of long runs of every
 * class, while it reads a bounded window whatever the run's length (a run megabytes long
 * behind an unreadable page), and an encode stopped by its stop callback. The equality with
 * GPT-2's real tokenizer is tests/integration/bpe_oracle.sh. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "bpe.h"

/* GPT-2's bytes_to_unicode, as UTF-8, of byte b into out. */
static void byte_char(int b, char *out)
{
    int printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174, n = 0;
    for (int i = 0; i < b; i++) n += !((i >= 33 && i <= 126) || (i >= 161 && i <= 172) || i >= 174);
    unsigned cp = printable ? (unsigned)b : 256u + (unsigned)n;
    if (cp < 0x80) {
        out[0] = (char)cp, out[1] = 0;
    } else {
        out[0] = (char)(0xC0 | (cp >> 6)), out[1] = (char)(0x80 | (cp & 0x3F)), out[2] = 0;
    }
}

/* vocab.json of the 256 bytes (id = byte) and then extra (mapped strings, ids 256..). */
static char *vocab_json(const char *const *extra, int nextra)
{
    char *s = malloc(65536), c[4];
    size_t k = (size_t)sprintf(s, "{");
    for (int b = 0; b < 256; b++) {
        byte_char(b, c);
        k += (size_t)sprintf(s + k, "%s\"%s%s\": %d", b ? ", " : "", (b == '"' || b == '\\') ? "\\" : "", c, b);
    }
    for (int i = 0; i < nextra; i++) k += (size_t)sprintf(s + k, ", \"%s\": %d", extra[i], 256 + i);
    sprintf(s + k, "}");
    return s;
}

static const char *const EXTRA[] = {"ab", "bc", "abc",
                                    "\xc4\xa0"
                                    "a"}; /* 256..259; "Ġa" = " a" */
static const char MERGES[] = "#version: 0.2\nb c\na b\nab c\n\xc4\xa0 a\n";

static bpe_t *small(void)
{
    char *v = vocab_json(EXTRA, 4), err[256] = "";
    bpe_t *b = bpe_load(v, strlen(v), MERGES, strlen(MERGES), err, sizeof err);
    if (!b) fail_msg("%s", err);
    free(v);
    return b;
}

static void expect_pieces(const char *text, const char *const *pieces, int n)
{
    size_t len = strlen(text), pos = 0;
    for (int i = 0; i < n; i++) {
        size_t k = bpe_pretoken_len(text, len, pos);
        if (k != strlen(pieces[i]) || memcmp(text + pos, pieces[i], k) != 0)
            fail_msg("\"%s\": piece %d is \"%.*s\", want \"%s\"", text, i, (int)k, text + pos, pieces[i]);
        pos += k;
    }
    assert_int_equal(pos, len);
}

static void test_pretokens(void **st)
{
    (void)st;
    expect_pieces("Hello world", (const char *[]){"Hello", " world"}, 2);
    expect_pieces("I'm they'll 's", (const char *[]){"I", "'m", " they", "'ll", " '", "s"}, 6);
    expect_pieces("a  b", (const char *[]){"a", " ", " b"}, 3);
    expect_pieces("x   ", (const char *[]){"x", "   "}, 2);
    expect_pieces("12ab 34", (const char *[]){"12", "ab", " 34"}, 3);
    expect_pieces(" !!?x", (const char *[]){" !!?", "x"}, 2);
    expect_pieces("\t\n x", (const char *[]){"\t\n", " x"}, 2);
    expect_pieces("\xff\xfe!a", (const char *[]){"\xff\xfe!", "a"}, 2);
    expect_pieces("\xe6\x97\xa5\xe6\x9c\xac \xd9\xa3", (const char *[]){"\xe6\x97\xa5\xe6\x9c\xac", " \xd9\xa3"}, 2);
    /* only ASCII space joins a following word: an ideographic space stays on its own */
    expect_pieces("a\xe3\x80\x80\xe3\x80\x80"
                  "b",
                  (const char *[]){"a", "\xe3\x80\x80", "\xe3\x80\x80", "b"}, 4);
}

static void expect_ids(const bpe_t *b, const char *text, const uint32_t *want, size_t n)
{
    uint32_t *ids;
    size_t got;
    char err[128], *back;
    size_t blen;
    assert_int_equal(bpe_encode(b, text, strlen(text), &ids, &got, err, sizeof err), 0);
    assert_int_equal(got, n);
    for (size_t i = 0; i < n; i++) assert_int_equal(ids[i], want[i]);
    assert_int_equal(bpe_decode(b, ids, got, &back, &blen, err, sizeof err), 0);
    assert_int_equal(blen, strlen(text));
    assert_memory_equal(back, text, blen);
    free(ids);
    free(back);
}

static void test_merge_by_rank(void **st)
{
    (void)st;
    bpe_t *b = small();
    assert_int_equal(bpe_vocab_size(b), 260);
    expect_ids(b, "abc", (uint32_t[]){'a', 257}, 2); /* "b c" outranks "a b" */
    expect_ids(b, "ab", (uint32_t[]){256}, 1);
    expect_ids(b, " a ab", (uint32_t[]){259, ' ', 256}, 3);
    expect_ids(b, "\xff\x80z", (uint32_t[]){255, 128, 'z'}, 3);
    bpe_free(b);
}

static void test_decode_bounds(void **st)
{
    (void)st;
    bpe_t *b = small();
    char all[256], err[128], *out;
    size_t len, n;
    uint32_t *ids;
    for (int i = 0; i < 256; i++) all[i] = (char)(i + 1);
    assert_int_equal(bpe_encode(b, all, 255, &ids, &n, err, sizeof err), 0);
    assert_int_equal(bpe_decode(b, ids, n, &out, &len, err, sizeof err), 0);
    assert_int_equal(len, 255);
    assert_memory_equal(out, all, 255);
    free(out);
    free(ids);
    uint32_t bad[] = {1, 260};
    assert_int_equal(bpe_decode(b, bad, 2, &out, &len, err, sizeof err), -1);
    assert_non_null(strstr(err, "id 260 at token 1 is outside the vocabulary"));
    bpe_free(b);
}

static void expect_refused(const char *vocab, const char *merges, const char *want)
{
    char err[256] = "";
    bpe_t *b = bpe_load(vocab, strlen(vocab), merges, strlen(merges), err, sizeof err);
    if (b || !strstr(err, want)) fail_msg("want an error with \"%s\", got \"%s\"", want, err);
}

static void test_refusals(void **st)
{
    (void)st;
    char *v = vocab_json(EXTRA, 4);
    expect_refused("{\"a\": 0", MERGES, "vocab.json");
    expect_refused("[1, 2]", MERGES, "not a JSON object");
    expect_refused("{\"a\": -1}", MERGES, "is not an integer in");
    expect_refused("{\"a\": 5000000}", MERGES, "is not an integer in");
    expect_refused("{\"a\": 0, \"b\": 0}", MERGES, "appears twice");
    expect_refused("{\"\\u0001\": 0}", MERGES, "not in GPT-2's byte alphabet");
    expect_refused("{\"a\": 0}", MERGES, "byte 0x00 has no token");
    expect_refused(v, "#version: 0.2\nab\n", "merges.txt line 1: not two tokens");
    expect_refused(v, "a b\nx y\n", "merges.txt line 2: \"x y\" or its merge is not in vocab.json");
    char err[128];
    assert_null(bpe_load(v, BPE_MAX_FILE_BYTES + 1u, MERGES, 1, err, sizeof err));
    assert_non_null(strstr(err, "over"));
    assert_null(bpe_load_files("/nonexistent/vocab.json", "/nonexistent/m", err, sizeof err));
    assert_non_null(strstr(err, "/nonexistent/vocab.json"));
    char *hf = malloc(strlen(v) + 200);
    sprintf(hf, "{\"model\": {\"type\": \"BPE\", \"vocab\": %s, \"merges\": [\"b c\", [\"a\", \"b\"]]}}", v);
    bpe_t *b = bpe_load_hf(hf, strlen(hf), err, sizeof err);
    assert_non_null(b);
    assert_int_equal(bpe_vocab_size(b), 260);
    bpe_free(b);
    const char *bad_hf[][2] = {
        {"{\"model\": {\"type\": \"WordPiece\"}}", "not a BPE model"},
        {"{\"model\": {\"type\": \"BPE\", \"vocab\": {}, \"merges\": [[\"a\"]]}}", "model.merges[0]"},
        {"{\"model\": {\"type\": \"BPE\", \"vocab\": {}, \"merges\": [7]}}", "model.merges[0]"},
        {"{\"model\"", "tokenizer.json"},
    };
    for (size_t i = 0; i < sizeof bad_hf / sizeof bad_hf[0]; i++) {
        err[0] = 0;
        assert_null(bpe_load_hf(bad_hf[i][0], strlen(bad_hf[i][0]), err, sizeof err));
        if (!strstr(err, bad_hf[i][1])) fail_msg("want \"%s\", got \"%s\"", bad_hf[i][1], err);
    }
    free(hf);
    free(v);
}

/* A pre-token longer than BPE_MAX_PRETOKEN is cut (at a code point) and still round-trips. */
static void test_long_pretoken(void **st)
{
    (void)st;
    bpe_t *b = small();
    size_t n = 3 * BPE_MAX_PRETOKEN + 1;
    char *text = malloc(n + 1);
    for (size_t i = 0; i < n; i++) text[i] = "ab"[i % 2];
    text[n] = 0;
    uint32_t *ids;
    size_t k, len;
    char err[128], *back;
    assert_int_equal(bpe_encode(b, text, n, &ids, &k, err, sizeof err), 0);
    assert_int_equal(bpe_decode(b, ids, k, &back, &len, err, sizeof err), 0);
    assert_int_equal(len, n);
    assert_memory_equal(back, text, n);
    free(ids), free(back), free(text);
    bpe_free(b);
}

/* The piece as the encoder took it before it was bounded: the pre-token over the whole text,
 * cut at BPE_MAX_PRETOKEN on a code point. */
static size_t old_piece(const char *text, size_t len, size_t pos)
{
    size_t piece = bpe_pretoken_len(text, len, pos);
    if (piece > BPE_MAX_PRETOKEN) {
        piece = BPE_MAX_PRETOKEN;
        while (piece > 1 && ((unsigned char)text[pos + piece] & 0xC0) == 0x80) piece--;
    }
    return piece;
}

/* The bounded pieces are the old ones: texts of runs of every class (letters, digits,
 * ASCII and three-byte spaces, punctuation, two- and four-byte letters, invalid bytes)
 * of lengths around the window's edges and far past it, in a fixed random order. */
static void test_pieces_as_before(void **st)
{
    (void)st;
    static const char *const UNITS[] = {"a",    "7",  " ", "\n", "!", "\xc3\xa9", "\xe3\x80\x80", "\xf0\x9d\x90\x80",
                                        "\xff", "'s", " a"};
    static const size_t RUNS[] = {1, 2, 3, 100, 1360, 2047, 4094, 4095, 4096, 4097, 4100, 4111, 4112, 4113, 9000};
    const size_t cap = 1u << 20;
    char *text = malloc(cap);
    unsigned seed = 12345;
    for (int round = 0; round < 40; round++) {
        size_t len = 0;
        while (len < cap - 4 * 9000 - 64) {
            seed = seed * 1103515245u + 12345u;
            const char *u = UNITS[(seed >> 8) % (sizeof UNITS / sizeof UNITS[0])];
            const size_t run = RUNS[(seed >> 16) % (sizeof RUNS / sizeof RUNS[0])], ul = strlen(u);
            for (size_t i = 0; i < run && len + ul < cap; i++) memcpy(text + len, u, ul), len += ul;
            if ((seed >> 24) % 4 == 0) break; /* texts of every length, a few long */
        }
        for (size_t pos = 0; pos < len;) {
            const size_t want = old_piece(text, len, pos), got = bpe_piece_len(text, len, pos);
            if (got != want) fail_msg("round %d, byte %zu of %zu: piece %zu, want %zu", round, pos, len, got, want);
            pos += got;
        }
    }
    free(text);
}

/* The pre-tokenizer's work for one piece is bounded: a run of one class 64 MiB long (of
 * which only the first 16 KiB can be read: a read past the window faults) gives a piece of
 * BPE_MAX_PRETOKEN bytes, so encoding such a run is linear, not quadratic. */
static void test_piece_window_bounded(void **st)
{
    (void)st;
    const size_t reserve = 64u << 20, readable = 16u << 10;
    static const char *const UNITS[] = {"a", "7", " ", "!", "\xe3\x80\x80", "\xff"};
    char *text = mmap(NULL, reserve, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(text != MAP_FAILED);
    assert_int_equal(mprotect(text, readable, PROT_READ | PROT_WRITE), 0);
    for (size_t u = 0; u < sizeof UNITS / sizeof UNITS[0]; u++) {
        const size_t ul = strlen(UNITS[u]);
        for (size_t i = 0; i + ul <= readable; i += ul) memcpy(text + i, UNITS[u], ul);
        size_t piece = bpe_piece_len(text, reserve, 0);
        if (piece > BPE_MAX_PRETOKEN || piece <= BPE_MAX_PRETOKEN - 4) fail_msg("unit %zu: piece %zu", u, piece);
        /* and after a leading space (" ?X+") */
        text[0] = ' ';
        for (size_t i = 1; i + ul <= readable; i += ul) memcpy(text + i, UNITS[u], ul);
        piece = bpe_piece_len(text, reserve, 0);
        if (piece > BPE_MAX_PRETOKEN || piece <= BPE_MAX_PRETOKEN - 4)
            fail_msg("unit %zu after a space: %zu", u, piece);
    }
    munmap(text, reserve);
}

static int stop_now(void) { return 15; }

/* A long encode asks its stop callback every BPE_STOP_EVERY bytes and gives up when told. */
static void test_encode_stops(void **st)
{
    (void)st;
    bpe_t *b = small();
    const size_t n = 3 * BPE_STOP_EVERY;
    char *text = malloc(n);
    for (size_t i = 0; i < n; i++) text[i] = "abc "[i % 4];
    uint32_t *ids = NULL;
    size_t k = 0;
    char err[128];
    assert_int_equal(bpe_encode_until(b, text, n, stop_now, &ids, &k, err, sizeof err), BPE_STOPPED);
    assert_non_null(strstr(err, "signal 15 heard"));
    assert_null(ids);
    assert_int_equal(bpe_encode_until(b, text, n, NULL, &ids, &k, err, sizeof err), 0);
    free(ids), free(text);
    bpe_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pretokens),
        cmocka_unit_test(test_merge_by_rank),
        cmocka_unit_test(test_decode_bounds),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_long_pretoken),
        cmocka_unit_test(test_pieces_as_before),
        cmocka_unit_test(test_piece_window_bounded),
        cmocka_unit_test(test_encode_stops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
