/* fuzz/fuzz_slurm.c - libFuzzer target for the slurm launcher's readers of Slurm's
 * answers (coordinator/launcher.h): `scontrol show job -o` (launch_slurm_parse_job) and
 * `sinfo --format=%N|%t|%E` (launch_slurm_parse_drains). Their text comes from slurmctld,
 * and a node's drain reason is whatever an admin typed. Build and run: make fuzz-slurm.
 *
 * Properties beyond no crash / UB: every string written is terminated inside its buffer;
 * the drains are at most max, each with a non-empty name without '|' or newline, a reason
 * without control characters, and no name twice.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "launcher.h"

static void check_drains(const char *text, int max)
{
    launch_rm_drain_t d[8];
    int n = launch_slurm_parse_drains(text, d, max);
    if (n < 0 || n > max) abort();
    for (int i = 0; i < n; i++) {
        size_t nl = strnlen(d[i].name, sizeof d[i].name), rl = strnlen(d[i].reason, sizeof d[i].reason);
        if (nl == 0 || nl == sizeof d[i].name || rl == sizeof d[i].reason) abort();
        if (strchr(d[i].name, '|') || strchr(d[i].name, '\n')) abort();
        for (size_t k = 0; k < rl; k++)
            if ((unsigned char)d[i].reason[k] < 0x20) abort();
        for (int j = 0; j < i; j++)
            if (strcmp(d[i].name, d[j].name) == 0) abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = 0;
    char state[32], nodes[64];
    int st = 0, sig = 0;
    if (launch_slurm_parse_job(text, state, sizeof state, &st, &sig, nodes, sizeof nodes) == 0 &&
        (strnlen(state, sizeof state) == sizeof state || strnlen(nodes, sizeof nodes) == sizeof nodes))
        abort();
    check_drains(text, 8);
    check_drains(text, 1);
    free(text);
    return 0;
}
