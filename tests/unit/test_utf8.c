/* tests/unit/test_utf8.c - the one UTF-8 validator (common/utf8.h) on a table of spellings:
 * every length at its bounds, and every way a byte string fails to be UTF-8 (overlong
 * forms, surrogates, values past U+10FFFF, bytes that never begin a character, sequences
 * broken or cut short); utf8_sanitize's U+FFFD per maximal invalid subpart, its holding back
 * of a cut sequence while more may come, and its bound; and the paths from a model's bytes
 * to JSON: what utf8_sanitize writes is always a string jansson takes (pacer-generate's
 * lines, an eval_sample), and a worker's record whose eval_sample holds invalid bytes still
 * parses, with U+FFFD where they were. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "metrics.h"
#include "utf8.h"

#define R UTF8_REPLACEMENT

static const struct {
    const char *in;
    size_t n;
    size_t len;      /* utf8_char at in[0]: 0 when invalid */
    uint32_t cp;     /* its code point when valid */
    size_t prefix;   /* when invalid: the valid start of a sequence there */
    const char *out; /* utf8_sanitize(final) */
} CASES[] = {
    {"A", 1, 1, 'A', 0, "A"},
    {"\x7f", 1, 1, 0x7f, 0, "\x7f"},
    {"\xc2\x80", 2, 2, 0x80, 0, "\xc2\x80"},                     /* U+0080, the least of two bytes */
    {"\xdf\xbf", 2, 2, 0x7ff, 0, "\xdf\xbf"},                    /* U+07FF */
    {"\xe0\xa0\x80", 3, 3, 0x800, 0, "\xe0\xa0\x80"},            /* U+0800 */
    {"\xed\x9f\xbf", 3, 3, 0xd7ff, 0, "\xed\x9f\xbf"},           /* U+D7FF, below the surrogates */
    {"\xee\x80\x80", 3, 3, 0xe000, 0, "\xee\x80\x80"},           /* U+E000, above them */
    {"\xef\xbf\xbd", 3, 3, 0xfffd, 0, R},                        /* U+FFFD itself */
    {"\xef\xbf\xbf", 3, 3, 0xffff, 0, "\xef\xbf\xbf"},           /* U+FFFF */
    {"\xf0\x90\x80\x80", 4, 4, 0x10000, 0, "\xf0\x90\x80\x80"},  /* U+10000 */
    {"\xf4\x8f\xbf\xbf", 4, 4, 0x10ffff, 0, "\xf4\x8f\xbf\xbf"}, /* U+10FFFF, the last */
    /* overlong forms */
    {"\xc0\x80", 2, 0, 0, 0, R R},       /* U+0000 in two bytes */
    {"\xc1\xbf", 2, 0, 0, 0, R R},       /* U+007F in two bytes */
    {"\xe0\x80\x80", 3, 0, 0, 1, R R R}, /* U+0000 in three */
    {"\xe0\x9f\xbf", 3, 0, 0, 1, R R R}, /* U+07FF in three */
    {"\xf0\x80\x80\x80", 4, 0, 0, 1, R R R R},
    {"\xf0\x8f\xbf\xbf", 4, 0, 0, 1, R R R R}, /* U+FFFF in four */
    /* surrogates, lone or paired as CESU-8 writes them */
    {"\xed\xa0\x80", 3, 0, 0, 1, R R R},                   /* U+D800 */
    {"\xed\xbf\xbf", 3, 0, 0, 1, R R R},                   /* U+DFFF */
    {"\xed\xa0\xbd\xed\xb8\x80", 6, 0, 0, 1, R R R R R R}, /* U+1F600 as two surrogates */
    /* past U+10FFFF, and leads that begin nothing */
    {"\xf4\x90\x80\x80", 4, 0, 0, 1, R R R R}, /* U+110000 */
    {"\xf5\x80\x80\x80", 4, 0, 0, 0, R R R R},
    {"\xf8\x88\x80\x80\x80", 5, 0, 0, 0, R R R R R}, /* a five-byte form */
    {"\xff", 1, 0, 0, 0, R},
    {"\x80", 1, 0, 0, 0, R}, /* a continuation alone */
    {"\xbf\x80", 2, 0, 0, 0, R R},
    /* broken by a byte that does not continue it: one U+FFFD for the valid start */
    {"\xe2\x82"
     "A",
     3, 0, 0, 2, R "A"},
    {"\xf0\x9f\x98"
     "A",
     4, 0, 0, 3, R "A"},
    {"\xc3"
     "\xc3\xa9",
     3, 0, 0, 1, R "\xc3\xa9"},
    /* cut short by the end (final: one U+FFFD) */
    {"\xe2\x82", 2, 0, 0, 2, R},
    {"\xf0\x9f\x98", 3, 0, 0, 3, R},
    {"ok \xe2\x82\xac", 6, 1, 'o', 0, "ok \xe2\x82\xac"},
};

static void test_spellings(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        const unsigned char *in = (const unsigned char *)CASES[i].in;
        uint32_t cp = 0xdeadbeef;
        size_t pre = 99;
        const size_t len = utf8_char(in, CASES[i].n, &cp, &pre);
        if (len != CASES[i].len) fail_msg("case %zu: length %zu, want %zu", i, len, CASES[i].len);
        if (len && cp != CASES[i].cp) fail_msg("case %zu: U+%04X, want U+%04X", i, cp, CASES[i].cp);
        if (!len && pre != CASES[i].prefix) fail_msg("case %zu: prefix %zu, want %zu", i, pre, CASES[i].prefix);
        char out[64];
        assert_int_equal(utf8_sanitize(CASES[i].in, CASES[i].n, 1, out, sizeof out), CASES[i].n);
        if (strcmp(out, CASES[i].out) != 0) fail_msg("case %zu: sanitized to a wrong string", i);
        /* what reaches JSON: jansson takes it, and it round-trips */
        json_t *s = json_string(out);
        if (!s) fail_msg("case %zu: jansson refuses the sanitized text", i);
        char *dump = json_dumps(s, JSON_ENCODE_ANY);
        json_t *back = json_loads(dump, JSON_DECODE_ANY, NULL);
        assert_non_null(back);
        assert_string_equal(json_string_value(back), out);
        json_decref(back);
        free(dump);
        json_decref(s);
    }
}

/* A stream (pacer-generate's, token by token): a sequence cut short by the end is held
 * back while more may come, then completed or replaced; a character that does not fit is
 * never split. */
static void test_sanitize_stream(void **state)
{
    (void)state;
    char out[16];
    assert_int_equal(utf8_sanitize("ab\xe2\x82", 4, 0, out, sizeof out), 2);
    assert_string_equal(out, "ab");
    assert_int_equal(utf8_sanitize("\xe2\x82\xac", 3, 0, out, sizeof out), 3);
    assert_string_equal(out, "\xe2\x82\xac");
    assert_int_equal(utf8_sanitize("\xe2\x82"
                                   "A",
                                   3, 0, out, sizeof out),
                     3);
    assert_string_equal(out, R "A");
    /* an invalid lead is never held back: nothing can complete it */
    assert_int_equal(utf8_sanitize("\xed\xa0", 2, 0, out, sizeof out), 2);
    assert_string_equal(out, R R);
    /* bounded: whole characters only, the NUL counted */
    assert_int_equal(utf8_sanitize("a\xe2\x82\xac", 4, 1, out, 4), 1);
    assert_string_equal(out, "a");
    assert_int_equal(utf8_sanitize("a\xff", 2, 1, out, 5), 2);
    assert_string_equal(out, "a" R);
    assert_int_equal(utf8_sanitize("abc", 3, 1, out, 1), 0);
    assert_string_equal(out, "");
}

/* A worker's evaluation record whose eval_sample a model spelled with a surrogate, an
 * overlong form and a stray byte: its JSON parses (the record reaches Redis, the history
 * and the experiment's verdict), with U+FFFD where the invalid bytes were. */
static void test_record_with_invalid_bytes(void **state)
{
    (void)state;
    metrics_record_t r;
    memset(&r, 0, sizeof r);
    r.kind = METRICS_EPOCH;
    r.test_loss = r.test_accuracy = r.noise_scale = NAN;
    snprintf(r.eval_sample, sizeof r.eval_sample,
             "a\xed\xa0\x80"
             "b\xc0\xaf"
             "c\xff"
             "d\xe2\x82\xac");
    char buf[8192];
    assert_true(metrics_to_json(&r, "j", buf, sizeof buf) > 0);
    json_error_t je;
    json_t *rec = json_loads(buf, 0, &je);
    if (!rec) fail_msg("the record does not parse: %s", je.text);
    assert_string_equal(json_string_value(json_object_get(rec, "eval_sample")), "a" R R R "b" R R "c" R "d\xe2\x82\xac");
    json_decref(rec);
    /* every byte invalid, the whole sample: still within the record's bound */
    memset(r.eval_sample, 0xff, sizeof r.eval_sample - 1);
    r.eval_sample[sizeof r.eval_sample - 1] = '\0';
    char big[2048 + 6 * METRICS_SAMPLE_MAX];
    assert_true(metrics_to_json(&r, "j", big, sizeof big) > 0);
    rec = json_loads(big, 0, &je);
    if (!rec) fail_msg("the record of invalid bytes does not parse: %s", je.text);
    json_decref(rec);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spellings),
        cmocka_unit_test(test_sanitize_stream),
        cmocka_unit_test(test_record_with_invalid_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
