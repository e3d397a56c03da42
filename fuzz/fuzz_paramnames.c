/* fuzz/fuzz_paramnames.c - libFuzzer target for the parameter names of an uploaded model
 * (common/param_names.h: param_names_from_json), read from `pacer-worker --check-onnx`'s
 * summary (a child process's output) and from STATE_DIR/models/SHA256.params.json at every
 * submission that has freeze or lora.targets. Build and run: make fuzz-paramnames.
 *
 * Properties: any bytes give 1, 0 or -1 (with a message) and never a crash, leak or
 * overread; accepted names (none: a model of no parameters) are within the bounds (count,
 * bytes, printable ASCII) and come
 * back the same through param_names_json; checking a spec's globs against them answers
 * 0 or -1 with a message naming the field.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "param_names.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *j = json_loadb((const char *)data, size, 0, NULL);
    if (!j) return 0;
    param_names_t p, q;
    char err[1024] = "";
    const int rc = param_names_from_json(j, &p, err, sizeof err);
    json_decref(j);
    if (rc < -1 || rc > 1) abort();
    if (rc < 0 && !err[0]) abort(); /* a refusal says why */
    if (rc <= 0) {
        if (p.text || p.n) abort(); /* nothing kept */
        return 0;
    }
    /* empty lists: a model of no parameters, its names known (no text then) */
    if (p.n > PARAM_NAMES_MAX || p.len > PARAM_NAMES_BYTES || (p.n == 0) != (p.len == 0) ||
        (p.n && strlen(p.text) != p.len))
        abort();
    for (size_t i = 0; i < p.len; i++)
        if (p.text[i] != '\n' && (p.text[i] < 0x20 || p.text[i] > 0x7e)) abort();
    json_t *back = param_names_json(&p);
    if (!back || param_names_from_json(back, &q, err, sizeof err) != 1) abort();
    if (q.n != p.n || q.len != p.len || (p.n && strcmp(q.text, p.text) != 0) ||
        (p.n && memcmp(q.product, p.product, p.n) != 0))
        abort();
    json_decref(back);
    param_names_free(&q);
    static job_spec_t s; /* the globs: the first name's first bytes, and a pattern */
    const char *first = p.n ? p.text : "";
    snprintf(s.freeze, sizeof s.freeze, "%.*s*\n*[", (int)strcspn(first, "\n") / 2, first);
    snprintf(s.lora.targets, sizeof s.lora.targets, "*.w?ight");
    err[0] = '\0';
    const int c = param_names_check(&s, &p, "m", err, sizeof err);
    if (c != 0 && (c != -1 || (!strstr(err, "freeze: ") && !strstr(err, "lora.targets: ")))) abort();
    param_names_free(&p);
    return 0;
}
