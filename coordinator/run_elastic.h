/* coordinator/run_elastic.h - elastic restarts and resizes of a job's run (run_elastic.c):
 * an attempt that fails on a multi-host launcher has its hosts probed (the remote shell,
 * then the network probe, netprobe.h) before the restart policy decides; a lost host makes
 * a relaunch at once, without using a restart, on the hosts that remain; a job on fewer
 * ranks than its spec asks grows when hosts come back (grow_check); each change of world
 * is a resize: logged, an event, the job's "resizes". Tick thread only. */
#ifndef PACER_RUN_ELASTIC_H
#define PACER_RUN_ELASTIC_H

#include "run.h"

struct hosts_state; /* hosts.h */

/* The hosts r may use now (their slots in *slots), and narrowed to a placed job's. */
int run_usable(const struct hosts_state *hs, const coord_run_t *r, const char **names, int *slots, int *kept_all);
int placed_only(const struct hosts_state *hs, const coord_run_t *r, const char **names, int n, int *usable_slots,
                int *all_slots);
/* The cluster's unusable hosts as text ("pw3 down"). */
void unusable_hosts(const struct hosts_state *hs, char *out, size_t len);
/* A change of r's world from -> to: recorded (record, event, log); the node and staleness
 * hashes of ranks [to, from) dropped. */
void record_resize(coordinator_t *c, coord_run_t *r, int from, int to, const char *reason, double now);
void drop_rank_keys(coordinator_t *c, coord_run_t *r, int from, int to);
/* Whether an attempt that ended so may have lost a host; the silent-host rule's note. */
int should_probe(const coordinator_t *c, const coord_run_t *r, sv_outcome_t oc, int code);
void note_silent(coord_run_t *r, const char *host);
/* A failed attempt's hosts probed (PH_PROBING), and what follows the probes. */
void begin_probing(coordinator_t *c, coord_run_t *r, sv_outcome_t oc, int code, const char *lost, double now);
void after_probing(coordinator_t *c, coord_run_t *r, double now);
/* Relaunch at once on the hosts usable now, without using a restart. */
void relaunch_soon(coordinator_t *c, coord_run_t *r, sv_outcome_t oc, int code, const char *reason, double now);
/* PH_ACTIVE, once a second: a job on fewer ranks than its spec asks grows when more
 * slots are usable again. */
void grow_check(coordinator_t *c, coord_run_t *r, double now);

#endif
