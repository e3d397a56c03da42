/* coordinator/hostmem.c - see hostmem.h. */
#include "hostmem.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errmsg.h"
#include "memest.h"

/* in as a message may quote it: at most 80 bytes, a control or non-ASCII byte as '?' (a
 * refusal stays one line of text). */
static const char *shown(const char *in, char *out)
{
    size_t i = 0;
    for (; in[i] && i < 80; i++) out[i] = (unsigned char)in[i] < ' ' || (unsigned char)in[i] >= 0x7f ? '?' : in[i];
    out[i] = 0;
    return out;
}

/* One "HOST=MB" of --host-memory-mb-of into e (item is changed). 0, or -1 with err. */
static int parse_entry(char *item, hostmem_entry_t *e, char *err, size_t errlen)
{
    char q[81];
    char *eq = strchr(item, '=');
    if (!eq) {
        errmsg(err, errlen, "--host-memory-mb-of: \"%s\" is not HOST=MB", shown(item, q));
        return -1;
    }
    *eq = 0;
    const char *name = item, *val = eq + 1;
    int plain = 1; /* a host name as a hostfile or sinfo gives it: no blanks, controls or '=' */
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) plain &= *p > ' ' && *p < 0x7f;
    if (!*name || strlen(name) >= sizeof e->name || !plain) {
        errmsg(err, errlen,
               "--host-memory-mb-of: \"%s\": the host name must be 1 to %zu printable bytes without blanks or '='",
               shown(name, q), sizeof e->name - 1);
        return -1;
    }
    char *end = NULL;
    errno = 0;
    double mb = strtod(val, &end);
    if (!*val || strspn(val, "0123456789.eE+-") != strlen(val) || errno || end == val || *end || !isfinite(mb) ||
        !(mb > 0) || mb > HOSTMEM_MB_MAX) {
        errmsg(err, errlen, "--host-memory-mb-of: %.80s: \"%s\" is not a number of MiB above 0 up to %.0f", name,
               shown(val, q), HOSTMEM_MB_MAX);
        return -1;
    }
    snprintf(e->name, sizeof e->name, "%s", name);
    e->bytes = mb * 1024.0 * 1024.0;
    return 0;
}

int hostmem_parse(const char *text, hostmem_entry_t *out, int max, int *n, char *err, size_t errlen)
{
    *n = 0;
    const char *p = text ? text : "";
    for (;;) {
        const char *comma = strchr(p, ',');
        const size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char item[400];
        if (len == 0 || len >= sizeof item) {
            char q[81];
            errmsg(err, errlen, "--host-memory-mb-of: %s entry in \"%s\" (HOST=MB[,HOST=MB...])",
                   len ? "a too long" : "an empty", shown(text ? text : "", q));
            return -1;
        }
        if (*n == max) {
            errmsg(err, errlen, "--host-memory-mb-of: more than %d hosts", max);
            return -1;
        }
        memcpy(item, p, len);
        item[len] = 0;
        if (parse_entry(item, &out[*n], err, errlen) != 0) return -1;
        for (int i = 0; i < *n; i++)
            if (strcmp(out[i].name, out[*n].name) == 0) {
                errmsg(err, errlen, "--host-memory-mb-of: host %.200s is given twice", out[i].name);
                return -1;
            }
        ++*n;
        if (!comma) return 0;
        p = comma + 1;
    }
}

/* "rank 3" or "ranks 0, 1, 2" (the first few, then "..."), of the k ranks in ids. */
static const char *ranks_text(const int *ids, int k, char *out, size_t len)
{
    size_t used = (size_t)snprintf(out, len, "rank%s", k == 1 ? "" : "s");
    for (int i = 0; i < k && used < len; i++) {
        if (i == 8) {
            snprintf(out + used, len - used, ", ... (%d)", k);
            break;
        }
        used += (size_t)snprintf(out + used, len - used, "%s%d", i ? ", " : " ", ids[i]);
    }
    return out;
}

/* Host h for the k ranks in ids, each with its own estimate (a sharded job's range;
 * mem: split "memory"'s weights, NULL otherwise; all_here: the local launcher placed
 * them). 1 when they fit, else 0 with err. */
static int host_fits(const job_spec_t *s, const hostmem_host_t *h, const int *ids, int k, const double *mem,
                     int all_here, char *err, size_t errlen)
{
    memest_t e;
    if (memest_ranks(s, s->workers, ids, k, mem, &e, err, errlen) != 0) return 0;
    char where[sizeof h->name + 200], which[120];
    snprintf(where, sizeof where, "host %s (%s), where %s puts %s", h->name, h->from,
             all_here ? "the local launcher" : "by-slot placement", ranks_text(ids, k, which, sizeof which));
    return memest_check(&e, k, h->bytes, where, err, errlen) == 0;
}

/* Oversubscribed: each host for at most ceil(world / slots) rounds of its slots, each
 * rank the job's largest (memest_host_rank). */
static int fits_bound(const job_spec_t *s, int world, long total, const hostmem_host_t *hosts, int nhosts, char *err,
                      size_t errlen)
{
    const long rounds = (world + total - 1) / total;
    for (int i = 0; i < nhosts; i++) {
        const hostmem_host_t *h = &hosts[i];
        if (!(h->bytes > 0) || h->slots < 1) continue;
        const long most = rounds * h->slots;
        const int k = most < world ? (int)most : world;
        memest_t e;
        if (memest_host_rank(s, s->workers, k, &e, err, errlen) != 0) return 0;
        char where[sizeof h->name + 200];
        snprintf(where, sizeof where, "host %s (%s), which may get %d of the %d ranks (more than the %ld slots)",
                 h->name, h->from, k, world, total);
        if (memest_check(&e, k, h->bytes, where, err, errlen) != 0) return 0;
    }
    return 1;
}

/* Split "memory": each rank weighed by its host's figure shared by the job's ranks there
 * (what the worker does with MemAvailable). NULL when not such a split or a host's figure
 * is not known (the split is then taken as even, as shard_weights does). */
static double *memory_split(const job_spec_t *s, int world, const int *host_of, const int *count,
                            const hostmem_host_t *hosts)
{
    if (s->algorithm.shard.stage <= 0 || strcmp(s->algorithm.shard.split, "memory") != 0 || world < s->workers)
        return NULL;
    double *mem = calloc((size_t)world, sizeof *mem);
    for (int r = 0; mem && r < world; r++) {
        const hostmem_host_t *h = &hosts[host_of[r]];
        if (!(h->bytes > 0)) {
            free(mem);
            return NULL;
        }
        mem[r] = h->bytes / count[host_of[r]];
    }
    return mem;
}

int hostmem_fits(const job_spec_t *s, int world, const hostmem_host_t *hosts, int nhosts, int all_here, char *err,
                 size_t errlen)
{
    long total = 0;
    int known = 0;
    for (int i = 0; i < nhosts; i++) {
        total += hosts[i].slots > 0 ? hosts[i].slots : 0;
        known |= hosts[i].bytes > 0;
    }
    if (nhosts < 1 || world < 1 || !known) return 1;
    if (all_here) total = world; /* every rank on hosts[0] */
    else if (total < 1 || world > total) return fits_bound(s, world, total > 0 ? total : 1, hosts, nhosts, err, errlen);
    int *host_of = malloc((size_t)world * sizeof *host_of), *ids = malloc((size_t)world * sizeof *ids);
    int *count = calloc((size_t)nhosts, sizeof *count);
    if (!host_of || !ids || !count) {
        free(host_of);
        free(ids);
        free(count);
        errmsg(err, errlen, "out of memory");
        return 0;
    }
    /* by slot: hosts[0]'s slots first, then hosts[1]'s, ... */
    for (int r = 0, i = 0, used = 0; r < world; r++) {
        while (!all_here && used >= hosts[i].slots) {
            i++;
            used = 0;
        }
        host_of[r] = i;
        count[i]++;
        used++;
    }
    double *mem = memory_split(s, world, host_of, count, hosts);
    int ok = 1;
    for (int i = 0; ok && i < nhosts; i++) {
        if (!(hosts[i].bytes > 0) || count[i] == 0) continue;
        int k = 0;
        for (int r = 0; r < world; r++)
            if (host_of[r] == i) ids[k++] = r;
        ok = host_fits(s, &hosts[i], ids, k, mem, all_here, err, errlen);
    }
    free(mem);
    free(host_of);
    free(ids);
    free(count);
    return ok;
}

/* The greedy order of hostmem_order over need[0..world): 1 when every block found a host. */
static int greedy_order(const double *need, int world, const hostmem_host_t *hosts, int nhosts, int *order)
{
    char *used = calloc((size_t)nhosts, 1);
    if (!used) return 0;
    int k = 0, r0 = 0;
    while (r0 < world) {
        int best = -1;
        for (int i = 0; i < nhosts; i++) {
            if (used[i] || hosts[i].slots < 1) continue;
            const int end = r0 + hosts[i].slots < world ? r0 + hosts[i].slots : world;
            double sum = 0;
            for (int r = r0; r < end; r++) sum += need[r];
            if (sum <= hosts[i].bytes && (best < 0 || hosts[i].bytes < hosts[best].bytes)) best = i;
        }
        if (best < 0) break;
        used[best] = 1;
        order[k++] = best;
        r0 += hosts[best].slots;
    }
    const int found = r0 >= world;
    for (int i = 0; i < nhosts; i++)
        if (!used[i]) order[k++] = i;
    free(used);
    return found;
}

int hostmem_order(const job_spec_t *s, int world, const hostmem_host_t *hosts, int nhosts, int *order)
{
    for (int i = 0; i < nhosts; i++) order[i] = i;
    long total = 0;
    int known = nhosts > 0;
    for (int i = 0; i < nhosts; i++) {
        total += hosts[i].slots > 0 ? hosts[i].slots : 0;
        known &= hosts[i].bytes > 0;
    }
    if (s->algorithm.shard.stage <= 0 || strcmp(s->algorithm.shard.split, "weights") != 0 ||
        s->algorithm.shard.nweights != world || world < 2 || world > SPEC_MAX_WORKERS || world > total || !known)
        return 0;
    char err[512];
    if (hostmem_fits(s, world, hosts, nhosts, 0, err, sizeof err)) return 1;
    double need[SPEC_MAX_WORKERS];
    for (int r = 0; r < world; r++) {
        memest_t e;
        if (memest_rank_of(s, world, r, NULL, &e, err, sizeof err) != 0) return 0;
        need[r] = e.rank_bytes;
    }
    int *tmp = malloc((size_t)nhosts * sizeof *tmp);
    if (!tmp) return 0;
    int found = greedy_order(need, world, hosts, nhosts, tmp);
    if (found) memcpy(order, tmp, (size_t)nhosts * sizeof *order);
    free(tmp);
    return found ? 2 : 0;
}
