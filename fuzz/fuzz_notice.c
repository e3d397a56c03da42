/* fuzz/fuzz_notice.c - libFuzzer target for the reader of the note a worker leaves when it
 * stops on notice (notice_parse, common/notice.h): DIR/NAME.notice lies in a directory
 * that ranks on other hosts write, so its text is input from outside for the coordinator.
 * Build and run: make fuzz-notice.
 *
 * Properties beyond no crash / UB: an accepted note has every field in its documented
 * bounds and a host of printable ASCII, and it writes back (notice_write's JSON) to text
 * that parses to the same note.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "notice.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    notice_t n, again;
    char err[256];
    if (notice_parse((const char *)data, size, &n, err, sizeof err) != 0) {
        if (!err[0]) abort(); /* a refusal always says why */
        return 0;
    }
    if (n.signal < 1 || n.signal > 64 || n.rank < 0 || n.at_step < 0 || n.checkpoint_step < -1 ||
        n.checkpoint_step > n.at_step + 1)
        abort();
    size_t hl = strnlen(n.host, sizeof n.host);
    if (hl == sizeof n.host) abort();
    for (size_t i = 0; i < hl; i++)
        if (n.host[i] < 0x21 || n.host[i] > 0x7e) abort();
    json_t *o = json_pack("{s:i, s:i, s:s, s:I, s:I}", "signal", n.signal, "rank", n.rank, "host", n.host, "at_step",
                          (json_int_t)n.at_step, "checkpoint_step", (json_int_t)n.checkpoint_step);
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (!text) abort();
    if (notice_parse(text, strlen(text), &again, err, sizeof err) != 0 || memcmp(&n, &again, sizeof n) != 0) abort();
    free(text);
    return 0;
}
