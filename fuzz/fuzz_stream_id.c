/* fuzz/fuzz_stream_id.c - libFuzzer target for Redis stream ids as clients send them:
 * the Last-Event-ID header (sse_id_parse), ?since= and the ordering of ids
 * (jobstore_stream_id_parse, sse_stream_id_cmp). Build and run: make fuzz-stream_id.
 *
 * The property that matters (issue 13): an id is accepted exactly when Redis would
 * accept it, i.e. one or two runs of at most 20 decimal digits, each at most 2^64 - 1;
 * checked here against a reference that compares digit strings, not integers.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobstore.h"
#include "sse.h"

/* A run of digits whose value is at most 2^64 - 1, compared as text. */
static int part_ok(const char *s, size_t n)
{
    if (n == 0 || n > 20) return 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9') return 0;
    if (n < 20) return 1;
    return memcmp(s, "18446744073709551615", 20) <= 0;
}

static int reference_ok(const char *s)
{
    const char *dash = strchr(s, '-');
    if (!dash) return part_ok(s, strlen(s));
    return part_ok(s, (size_t)(dash - s)) && part_ok(dash + 1, strlen(dash + 1));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = 0;
    unsigned long long ms = 0, seq = 0;
    int ok = jobstore_stream_id_parse(text, &ms, &seq) == 0;
    if (ok != reference_ok(text)) abort();
    if (ok) {
        /* it reads back: the numbers printed, then parsed, are the same numbers */
        char buf[48];
        unsigned long long ms2 = 1, seq2 = 1;
        snprintf(buf, sizeof buf, "%llu-%llu", ms, seq);
        if (jobstore_stream_id_parse(buf, &ms2, &seq2) != 0 || ms2 != ms || seq2 != seq) abort();
        if (sse_stream_id_cmp(text, buf) != 0) abort();
    }
    char ev[48], m[48];
    if (sse_id_parse(text, ev, sizeof ev, m, sizeof m) == 0) {
        if (jobstore_stream_id_parse(ev, NULL, NULL) != 0) abort();
        if (m[0] && jobstore_stream_id_parse(m, NULL, NULL) != 0) abort();
    }
    /* ordering: antisymmetric against a few fixed ids and the input's halves */
    static const char *const FIXED[] = {"0", "1-0", "18446744073709551615-18446744073709551615", "bad"};
    for (size_t i = 0; i < sizeof FIXED / sizeof FIXED[0]; i++) {
        int a = sse_stream_id_cmp(text, FIXED[i]), b = sse_stream_id_cmp(FIXED[i], text);
        if ((a > 0) != (b < 0) || (a == 0) != (b == 0)) abort();
    }
    free(text);
    return 0;
}
