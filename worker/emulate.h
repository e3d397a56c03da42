/* worker/emulate.h - whether an emulated heterogeneous cluster is faithful on this
 * machine.
 *
 * emulate.slowdown[i] = f makes worker i's step take f times its undisturbed step
 * (step.c, worker_compute_grad): the rank computes for u and sleeps for (f - 1) u, so
 * it keeps a core busy 1/f of its time (threads/f with several CPU threads). That is
 * only what f promises while the ranks of a host together ask for no more cores than
 * they have: demand = sum over the host's worker ranks of threads / f (the smallest f a
 * rank's schedule reaches), plus the parameter server's measured busy fraction at the
 * end. cores = the union of the host's ranks' CPU affinity masks, at most the online
 * CPUs. Ranks are grouped by machine (comm_split_machine: the kernel they run on, so
 * network namespaces and containers of one machine count as one host).
 * When demand exceeds cores on some host the worker says so at start-up, and the
 * summary's "emulation" says {"faithful": false, "demand_cores", "cores", "polite_wait"}
 * (the host with the largest demand / cores; how rank 0 waited). The same check tells the ranks of an oversubscribed host
 * to wait for messages without spinning (worker_t.polite_wait, comm_wait), as does
 * PACER_POLITE_WAIT=1 on a host shared with work the job cannot see. And the
 * ranks of a host that emulate with the same batch size take one undisturbed step cost,
 * the smallest any of them calibrated, so that cores of unequal speed do not skew f.
 */
#ifndef PACER_EMULATE_H
#define PACER_EMULATE_H

#include <jansson.h>

#include "worker.h"

/* Collective over MPI_COMM_WORLD when w->use_mpi (every rank calls it once, after set-up,
 * before training); fills w->emulation and w->polite_wait, and prints one line per
 * unfaithful host. Returns 0, or -1 when out of memory. */
int emulate_check(worker_t *w);

/* Rank 0, at the end: the summary's "emulation" object, with the parameter server's
 * busy fraction (when rank 0 is the PS) added to its host's demand. New reference. */
json_t *emulate_summary_json(const worker_t *w);

#endif
