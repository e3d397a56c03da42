/* fuzz/fuzz_spec.c - libFuzzer target for the job spec parser (common/spec.c): the text
 * of a spec file or a POST /api/v1/jobs body. Build and run: make fuzz-spec.
 *
 * Beyond "no crash, no leak, no UB" it checks what the rest of pacer relies on:
 *   - a refusal is one non-empty line;
 *   - an accepted spec's normalised JSON parses again into the same job_spec_t, prints
 *     the same text and hashes the same (the coordinator stores that text and the worker
 *     parses it; the checkpoint fingerprint must not depend on which copy was hashed);
 *   - every numeric field of an accepted spec is inside the bounds the table documents;
 *   - the edit distance behind an unknown field's "did you mean" (common/suggest.h) is
 *     symmetric, 0 only for equal strings, capped, and never below the difference of the
 *     lengths, on any two strings (the input cut in two); a refusal with a suggestion is
 *     one line like any other.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "spec.h"
#include "suggest.h"

/* The bounds of one numeric value against the table row. */
static int in_bounds(const spec_field_info_t *f, double x)
{
    if (f->min_excl ? !(x > f->min) : !(x >= f->min)) return 0;
    if (f->max_excl ? !(x < f->max) : !(x <= f->max)) return 0;
    return 1;
}

static void check_bounds(const job_spec_t *s)
{
    spec_field_info_t f;
    /* The fields a fuzzer most likely pushes to the edge, read from the struct. */
    for (size_t i = 0; spec_field_info(i, &f) == 0; i++) {
        if (!f.numeric) continue;
        if (!f.has_min || !f.has_max) abort();
        if (strcmp(f.path, "optimizer.lr") == 0 && !in_bounds(&f, s->optimizer.lr)) abort();
        if (strcmp(f.path, "optimizer.clip_norm") == 0 && !in_bounds(&f, s->optimizer.clip_norm)) abort();
        if (strcmp(f.path, "optimizer.lr_schedule.warmup_epochs") == 0 &&
            !in_bounds(&f, s->optimizer.lr_schedule.warmup_epochs))
            abort();
        if (strcmp(f.path, "batch_size") == 0 && !in_bounds(&f, s->batch_size)) abort();
        if (strcmp(f.path, "emulate.slowdown") == 0)
            for (int k = 0; k < s->emulate.nslowdown; k++)
                if (!in_bounds(&f, s->emulate.slowdown[k])) abort();
        if (strcmp(f.path, "emulate.schedule[].slowdown") == 0)
            for (int k = 0; k < s->emulate.nschedule; k++)
                if (!in_bounds(&f, s->emulate.schedule[k].slowdown)) abort();
    }
    if (s->emulate.nslowdown < 0 || s->emulate.nslowdown > SPEC_MAX_WORKERS) abort();
    if (s->emulate.nschedule < 0 || s->emulate.nschedule > SPEC_MAX_SCHEDULE) abort();
}

/* The distance's properties on a and b; abort() when one fails. */
static void check_distance(const char *a, size_t alen, const char *b, size_t blen)
{
    for (int max = 0; max <= SUGGEST_MAX_EDITS; max++) {
        int ab = suggest_distance(a, alen, b, blen, max), ba = suggest_distance(b, blen, a, alen, max);
        if (ab != ba || ab < 0 || ab > max + 1) abort();
        const size_t cap = SUGGEST_NAME_MAX + SUGGEST_MAX_EDITS; /* longer: never close */
        int equal = alen == blen && memcmp(a, b, alen) == 0;
        if ((ab == 0) != (equal && alen <= cap)) abort();
        size_t diff = alen > blen ? alen - blen : blen - alen;
        if (ab <= max && (size_t)ab < diff) abort(); /* never fewer edits than the lengths differ */
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_distance((const char *)data, size / 2, (const char *)data + size / 2, size - size / 2);
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = 0;
    static job_spec_t a, b;
    char err[512];
    err[0] = 0;
    if (spec_parse(text, &a, err, sizeof err) != 0) {
        if (!err[0] || strchr(err, '\n')) abort();
        free(text);
        return 0;
    }
    check_bounds(&a);
    char *again = spec_to_json(&a);
    if (!again) abort();
    if (spec_parse(again, &b, err, sizeof err) != 0) abort();
    char *third = spec_to_json(&b);
    if (!third || strcmp(again, third) != 0) abort();
    if (spec_hash(&a) != spec_hash(&b)) abort();
    free(third);
    free(again);
    free(text);
    return 0;
}
