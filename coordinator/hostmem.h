/* coordinator/hostmem.h - memory admission host by host: what each host has
 * (--host-memory-mb for every host, --host-memory-mb-of for named ones, the local
 * launcher's MemTotal) and whether a job's ranks fit the hosts they will be placed on.
 *
 * The ranks of a sharded job (algorithm.shard, common/shard_plan.h) need different
 * amounts: each keeps the optimizer state of its own range, and a split by weights or by
 * memory gives the ranges unequal lengths. Each host is checked for the ranks placed on
 * it, each for its own range (common/memest.h's memest_ranks, the estimate the worker's
 * own check uses), so a small host that takes a small share is not refused for the
 * largest share another host takes. Where the ranks go is Open MPI's by-slot mapping,
 * which the launchers use: rank 0 on the first host's first slot, the host's slots filled
 * before the next host's, in the launcher's order (the hostfile's, sinfo's); the local
 * launcher puts every rank on its one host. With split "memory" the worker weighs each
 * rank by what its host has available (MemAvailable shared by its ranks there): here by
 * the host's figure shared the same way, so the large shares land on the large hosts.
 *
 * Pure functions of their arguments (no coordinator state): api.c calls them with a copy
 * of the host table the tick keeps (coord_internal.h), and the unit tests directly. */
#ifndef PACER_HOSTMEM_H
#define PACER_HOSTMEM_H

#include <stddef.h>

#include "spec.h"

#define HOSTMEM_MB_MAX 1e9 /* a bound on one host's figure (MiB), as the daemon's numeric options */

typedef struct {
    char name[256];
    double bytes;
} hostmem_entry_t;

/* --host-memory-mb-of's "HOST=MB[,HOST=MB...]" (MB in MiB, a number > 0 up to
 * HOSTMEM_MB_MAX, in decimal) into out, at most max entries, *n of them. Returns 0, or -1
 * with err naming what is wrong: an entry without "=", a name empty, too long, or with a
 * blank, a control byte or "=", a name given twice, a figure that is not such a number,
 * an empty entry, more than max entries. */
int hostmem_parse(const char *text, hostmem_entry_t *out, int max, int *n, char *err, size_t errlen);

/* One host as admission sees it. */
typedef struct {
    char name[256];
    int slots;
    double bytes;  /* its memory; 0 = not known (its ranks are not checked) */
    char from[32]; /* where the figure came from: "--host-memory-mb-of", "--host-memory-mb",
                      "MemTotal" (named in a refusal) */
} hostmem_host_t;

/* Whether s's world ranks fit the memory of hosts[0..nhosts) (in the launcher's order;
 * all_here: the local launcher, every rank on hosts[0]). With no more ranks than slots,
 * by-slot placement puts each rank on a known host, and each host is checked for its
 * ranks' estimates (a sharded job's ranks each for its range). Oversubscribed, Open MPI
 * spreads the ranks beyond the slots by its own rules: each host is checked then for at
 * most ceil(world / slots) rounds of its slots, each rank the job's largest. Returns 1,
 * or 0 with err saying which host does not fit, its ranks, and every figure
 * (memest_check's message), or why there is no estimate (the model or data set gone from
 * the catalog: never let through unchecked). */
int hostmem_fits(const job_spec_t *s, int world, const hostmem_host_t *hosts, int nhosts, int all_here, char *err,
                 size_t errlen);

/* A host order for a sharded job with a list of weights (algorithm.shard.split [w0, ...],
 * one per rank of world), under by-slot placement, in which every host holds its ranks:
 * the given order when it does, else the ranks taken block by block (a host's slots at a
 * time, rank 0 first) each onto the smallest host left that holds the block, so that the
 * large shares land on the large hosts. order gets a permutation of 0..nhosts-1 (hosts
 * without a rank last, in the given order). Returns 1 when the given order holds (order is
 * the identity), 2 when order is another that holds, 0 when the job is not such a job,
 * has more ranks than slots, a host's memory is not known, an estimate is missing, or no
 * order was found (order the identity then). */
int hostmem_order(const job_spec_t *s, int world, const hostmem_host_t *hosts, int nhosts, int *order);

#endif
