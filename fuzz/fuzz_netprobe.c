/* fuzz/fuzz_netprobe.c - libFuzzer target for what the coordinator reads back of issue
 * 30's checks: the network probe's output (netprobe_parse, netprobe_verdict: ranks'
 * lines printed on other hosts) and a job's stall object as Redis returns it (stall_text,
 * which the API words for every GET). Build and run: make fuzz-netprobe.
 *
 * Input: a first byte choosing the number of hosts (1..8), then the text. Properties
 * beyond no crash / UB:
 *  - netprobe_parse counts exactly the hosts it marks lined, and marks heard/sent only in
 *    the rows of lined hosts;
 *  - netprobe_verdict fails only lined hosts, never every lined host when two or more
 *    printed, and each failing host has a reason, NUL-terminated within 200 bytes;
 *  - stall_text writes a NUL-terminated sentence within its buffer, also a tiny one.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "../coordinator/netprobe.h" /* not worker/netprobe.h, found first on the path */
#include "stall.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    int n = 1 + data[0] % 8;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    static const char *const NAMES[8] = {"pw1", "pw2", "pw3", "pw4", "pw5", "pw6", "pw7", "pw8"};
    int lined[8], ok[8], failing[8];
    unsigned char heard[64], sent[64];
    char why[8][200];
    int got = netprobe_parse(text, len, n, NAMES, lined, heard, sent);
    int count = 0;
    for (int h = 0; h < n; h++) {
        count += lined[h] != 0;
        for (int p = 0; !lined[h] && p < n; p++)
            if (heard[h * n + p] || sent[h * n + p]) abort();
    }
    if (count != got) abort();
    netprobe_verdict(n, NAMES, lined, heard, sent, ok, failing, why);
    int nfail = 0;
    for (int h = 0; h < n; h++) {
        if (failing[h] && !lined[h]) abort();
        if (failing[h] && (!why[h][0] || !memchr(why[h], 0, 200))) abort();
        nfail += failing[h];
    }
    if (got >= 2 && nfail == got) abort();

    json_t *j = json_loadb(text, len, JSON_DECODE_ANY, NULL);
    char out[320], tiny[4];
    stall_text(j, 1e9, out, sizeof out);
    if (!memchr(out, 0, sizeof out)) abort();
    stall_text(j, 1e9, tiny, sizeof tiny);
    if (!memchr(tiny, 0, sizeof tiny)) abort();
    json_decref(j);
    return 0;
}
