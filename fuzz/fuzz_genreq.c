/* fuzz/fuzz_genreq.c - libFuzzer target for a POST /api/v1/jobs/{id}/generate body
 * (genreq_parse, coordinator/textgen.h): a request from outside whose fields become a
 * process's arguments. Build and run: make fuzz-genreq.
 *
 * Properties beyond no crash / UB: a refusal says why (a body jansson refuses through
 * common/jsonbody.h, by its fault) and leaves no prompt; an accepted body has a prompt of 1
 * to GENREQ_PROMPT_MAX bytes without NUL, every number in its documented range (a
 * temperature 0 or normal, never subnormal), and a checkpoint name that cannot leave the
 * job's directory (no '/', no leading '.').
 */
#include <float.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "textgen.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    genreq_t r;
    char err[512] = "";
    if (genreq_parse((const char *)data, size, &r, err, sizeof err) != 0) {
        if (!err[0] || r.prompt) abort();
        return 0;
    }
    if (!r.prompt || r.prompt_len == 0 || r.prompt_len > GENREQ_PROMPT_MAX || strlen(r.prompt) != r.prompt_len) abort();
    if (r.max_tokens < 1 || r.max_tokens > GENREQ_MAX_TOKENS || r.top_k < 0 || r.top_k > GENREQ_TOP_K_MAX) abort();
    if (!(r.temperature >= 0 && r.temperature <= GENREQ_TEMPERATURE_MAX) || r.seed < 0) abort();
    /* never a subnormal: pacer-generate's --temperature parser refuses one */
    if (r.temperature > 0 && r.temperature < DBL_MIN) abort();
    if (!r.checkpoint[0] || strchr(r.checkpoint, '/') || r.checkpoint[0] == '.') abort();
    genreq_free(&r);
    return 0;
}
