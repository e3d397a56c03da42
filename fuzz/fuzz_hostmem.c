/* fuzz/fuzz_hostmem.c - libFuzzer target for pacer-coordinator's --host-memory-mb-of list
 * and the memory admission it feeds (coordinator/hostmem.h). Build and run: make
 * fuzz-hostmem.
 *
 * Input: the option's text (at most 8 hosts). Properties beyond no crash / UB:
 *  - a refusal is one line that names the option;
 *  - an accepted list has 1..8 entries, each a name of 1..255 printable bytes without
 *    blanks, ',' or '=', given once, and a figure above 0 up to HOSTMEM_MB_MAX MiB; printed
 *    back as HOST=MB (%.17g) it parses to the same entries;
 *  - hostmem_fits over those hosts (slots 1..4 from the input's bytes, one host of unknown
 *    memory when the first byte is odd) for a sharded LeNet-5 job of 1..8 ranks, split
 *    [1, 3, ...], memory or even, placed by slot or all on the first host, with as many or
 *    more ranks than slots: 1 or 0, and 0 with a one-line message naming a host;
 *  - hostmem_order: a permutation of the hosts, the identity unless it answers 2, and the
 *    hosts in its order hold the ranks when it answers 1 or 2.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "hostmem.h"
#include "spec.h"

#define MAX_HOSTS 8

static void check_entries(const hostmem_entry_t *e, int n)
{
    if (n < 1 || n > MAX_HOSTS) abort();
    for (int i = 0; i < n; i++) {
        size_t len = strlen(e[i].name);
        if (len < 1 || len >= sizeof e[i].name) abort();
        for (size_t k = 0; k < len; k++) {
            unsigned char ch = (unsigned char)e[i].name[k];
            if (ch <= ' ' || ch >= 0x7f || ch == '=' || ch == ',') abort();
        }
        if (!(e[i].bytes > 0) || e[i].bytes > HOSTMEM_MB_MAX * 1024.0 * 1024.0) abort();
        for (int k = 0; k < i; k++)
            if (strcmp(e[k].name, e[i].name) == 0) abort();
    }
}

/* Printed back and parsed again: the same names and figures. */
static void check_round_trip(const hostmem_entry_t *e, int n)
{
    char text[MAX_HOSTS * 300];
    size_t used = 0;
    for (int i = 0; i < n; i++)
        used += (size_t)snprintf(text + used, sizeof text - used, "%s%s=%.17g", i ? "," : "", e[i].name,
                                 e[i].bytes / (1024.0 * 1024.0));
    hostmem_entry_t again[MAX_HOSTS];
    int m = 0;
    char err[512];
    if (hostmem_parse(text, again, MAX_HOSTS, &m, err, sizeof err) != 0 || m != n) abort();
    for (int i = 0; i < n; i++)
        if (strcmp(again[i].name, e[i].name) != 0 || again[i].bytes != e[i].bytes) abort();
}

/* A model of 64 M parameters (an import's figures on LeNet-5's data), whose AdamW state
 * outweighs its data, so that the ranks' shares decide where they fit (610 to 854 MiB a
 * rank on two ranks split [1, 3]). */
static void add_model(void)
{
    static int done;
    if (done) return;
    catalog_model_t m;
    char err[256];
    if (catalog_model_get("lenet5", &m) != 0) abort();
    snprintf(m.name, sizeof m.name, "fz-big");
    m.source = CATALOG_ONNX;
    m.head_in = 0;
    m.params = 64000000;
    m.acts_per_sample = m.dacts_per_sample = 1000;
    if (catalog_model_add(&m, err, sizeof err) != 0) abort();
    done = 1;
}

static void check_fits(const hostmem_entry_t *e, int n, const uint8_t *data, size_t size)
{
    add_model();
    static const char *const splits[] = {"[1, 3, 1, 3, 1, 3, 1, 3]", "\"memory\"", "\"even\""};
    const unsigned b0 = size ? data[0] : 0, b1 = size > 1 ? data[1] : 0;
    const int workers = 1 + (int)(b1 % 8), which = (int)((b0 >> 1) % 3);
    char split[64];
    if (which == 0) { /* the list's first `workers` weights */
        snprintf(split, sizeof split, "[1");
        for (int i = 1; i < workers; i++) strcat(split, i % 2 ? ", 3" : ", 1");
        strcat(split, "]");
    } else {
        snprintf(split, sizeof split, "%s", splits[which]);
    }
    char text[512];
    snprintf(text, sizeof text,
             "{\"name\": \"f\", \"model\": \"%s\", \"dataset\": {\"name\": \"fashion-mnist\", "
             "\"train_subset\": 1000, \"test_subset\": 1000}, "
             "\"optimizer\": {\"kind\": \"adamw\"}, \"algorithm\": {\"name\": \"ssgd\", \"shard\": {\"stage\": %d, "
             "\"split\": %s}}, \"workers\": %d}",
             b0 & 0x20 ? "lenet5" : "fz-big", 1 + (int)(b0 >> 3 & 1), split, workers);
    job_spec_t *s = malloc(sizeof *s);
    char err[1024];
    if (!s) return;
    if (spec_parse(text, s, err, sizeof err) != 0) abort(); /* the harness's own spec */
    hostmem_host_t h[MAX_HOSTS];
    memset(h, 0, sizeof h);
    for (int i = 0; i < n; i++) {
        snprintf(h[i].name, sizeof h[i].name, "%s", e[i].name);
        h[i].slots = 1 + (int)((unsigned char)e[i].name[0] % 4);
        h[i].bytes = (b0 & 1) && i == n - 1 ? 0 : e[i].bytes;
        snprintf(h[i].from, sizeof h[i].from, "--host-memory-mb-of");
    }
    err[0] = 0;
    int ok = hostmem_fits(s, workers, h, n, (int)(b0 >> 4 & 1), err, sizeof err);
    if (ok != 0 && ok != 1) abort();
    if (!ok && (!strstr(err, "host ") || strchr(err, '\n'))) abort();
    /* the hostfile launcher's order: a permutation, under which the hosts hold the ranks */
    int order[MAX_HOSTS], seen[MAX_HOSTS] = {0};
    const int how = hostmem_order(s, workers, h, n, order);
    if (how < 0 || how > 2 || (how == 1 && !hostmem_fits(s, workers, h, n, 0, err, sizeof err))) abort();
    for (int i = 0; i < n; i++) {
        if (order[i] < 0 || order[i] >= n || seen[order[i]]++) abort();
        if (how != 2 && order[i] != i) abort();
    }
    if (how == 2) {
        hostmem_host_t moved[MAX_HOSTS];
        for (int i = 0; i < n; i++) moved[i] = h[order[i]];
        if (!hostmem_fits(s, workers, moved, n, 0, err, sizeof err)) abort();
    }
    free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = 0;
    hostmem_entry_t e[MAX_HOSTS];
    int n = -1;
    char err[512] = "";
    if (hostmem_parse(text, e, MAX_HOSTS, &n, err, sizeof err) != 0) {
        if (!strstr(err, "--host-memory-mb-of") || strchr(err, '\n')) abort();
        free(text);
        return 0;
    }
    check_entries(e, n);
    check_round_trip(e, n);
    check_fits(e, n, data, size);
    free(text);
    return 0;
}
