/* coordinator/hosts.h - the cluster's hosts as the daemon sees them: the launcher's list
 * (this machine, a hostfile's hosts, sinfo's nodes) with a state each, which elastic
 * restarts, pre-flight benchmarks and the Cluster page read.
 *
 *   up       ranks may run there (a host is up until something shows otherwise)
 *   slow     up, but its last benchmark was much slower than the median of its peers
 *            (HOSTS_SLOW_RATIO): used, with the smaller batches its profile earns
 *   failing  its last benchmark failed (data set missing, a worker that crashes there):
 *            not used until a benchmark passes there; or the network probe found it cut
 *            off from the job's network (netprobe.h; net_failing): not used until a probe
 *            with a usable host, every --host-probe seconds, passes
 *   down     a probe (launcher.h) could not reach it, or Slurm said it failed: not used;
 *            probed again every --host-probe seconds, and up when a probe passes and the
 *            resource manager would place ranks there again
 *
 * A state change is logged, written to pacer:events ({"type": "host"}), and shown in
 * pacer:coordinator's "hosts". The tick thread owns all of it (daemon.c runs
 * hosts_tick every tick; run_elastic.c asks for probes when an attempt fails). The two pure
 * functions at the end are the policy, unit-tested without processes.
 */
#ifndef PACER_HOSTS_H
#define PACER_HOSTS_H

#include <jansson.h>
#include <pthread.h>

#include "hostmem.h"
#include "launcher.h"
#include "netprobe.h"
#include "spec.h"

typedef enum { HOST_UP, HOST_SLOW, HOST_FAILING, HOST_DOWN } host_state_t;
const char *host_state_name(host_state_t s);

#define HOSTS_SLOW_RATIO 0.5 /* slower than half the median speed: "slow" */

/* The last benchmark of a host (pre-flight, or asked for through the API). */
typedef struct {
    int running; /* a benchmark is under way */
    double time; /* when the last one ended (0: never) */
    char model[SPEC_NAME_MAX], device[16];
    double samples_per_s; /* 0 when it failed */
    double ratio;         /* samples_per_s / the median of the hosts benchmarked with it;
                             NaN until its round has ended */
    char error[256];      /* why it failed ("" when it did not) */
} host_bench_t;

typedef struct {
    char name[256];
    int slots;
    host_state_t state;
    char reason[256];  /* why it is in its state ("" for up) */
    double since;      /* when it entered it */
    double checked;    /* when a probe last answered */
    double next_probe; /* down: when to look again */
    int probing;
    launch_probe_t probe;
    host_bench_t bench;
    /* Failing for the job's network (a network probe's verdict, not a benchmark's), and
     * the probe that checks it again (NP_IDLE when none runs). */
    int net_failing;
    netprobe_t np;
    /* An admin's drain (drain.h; kept in Redis, read every second): no new ranks here,
     * and the jobs with ranks here stop with notice and go elsewhere. */
    int drained;
    double drain_deadline; /* unix s by which its jobs are to be gone */
    char drain_reason[256];
    /* The resource manager's own drain (launcher_rm_drains: Slurm's DRAIN state), taken
     * as a drain when no admin's is set: since when it has been seen, and its reason. */
    int rm_drained;
    double rm_drain_since;
    char rm_drain_reason[200];
} host_t;

struct coordinator;

struct coordinator;

/* The coordinator's hosts (c->hosts->list): the cluster's hosts and their states, their slots,
 * the memory admission sees, and the reloads of the list. */
typedef struct hosts_state {
    host_t *list; /* the cluster's hosts and their states */
    int n;
    /* Called by hosts_set_state after a change (daemon.c's coord_publish_info, set at
     * start): a callback, so that hosts.c, below the tick, never calls up into it. */
    void (*changed)(struct coordinator *c, double now);
    int slots_total, slots_usable; /* all their slots; those of up and slow hosts */
    int slots_max;                 /* the most slots one host has (memory admission) */
    double memory;                 /* bytes per host for admission; 0 = unknown (set at start) */
    char memory_from[24];          /* where the figure came from: "MemTotal", "--host-memory-mb" */
    hostmem_entry_t *mem_of;       /* --host-memory-mb-of's figures (set at start) */
    int nmem_of;
    /* The hosts as memory admission sees them (hostmem.h): written by the tick after the
     * host list changed (daemon.c), copied by a submission; under c->lock. */
    hostmem_host_t *admit;
    int nadmit;
    /* Reloads of the host list (SIGHUP, POST /api/v1/cluster/reload): a caller bumps
     * reload_asked and waits on reload_cond (under c->lock) until the tick has done that
     * many. */
    long reload_asked, reload_done;
    pthread_cond_t reload_cond;
    char reload_err[512];  /* the last reload's error ("" = it worked) */
    json_t *reload_result; /* and what it found (owned; replaced each time) */
    long netprobe_seq;     /* network probes started (their directories' numbers) */
} hosts_state_t;

/* Takes the launcher's host list (after open or a reload): hosts that stay keep their
 * state; new ones are up and probed; removed ones are dropped. added/removed (may be
 * NULL) get the names, blank-separated. Recomputes the usable slots. Returns 0, or -1
 * when out of memory (the table is unchanged). */
int hosts_sync(struct coordinator *c, double now, char *added, size_t addlen, char *removed, size_t remlen);
void hosts_free(struct coordinator *c);
host_t *hosts_find(const hosts_state_t *hs, const char *name);

/* One tick: answers of running probes, and new probes of down hosts that are due. */
void hosts_tick(struct coordinator *c, double now);
/* Starts a probe of name now, unless one runs. */
void hosts_probe(struct coordinator *c, const char *name, double now);
/* Whether a probe of name still runs. */
int hosts_probing(const hosts_state_t *hs, const char *name);
/* Changes a host's state (logged, an event, and c->hosts->changed: daemon.c publishes
 * pacer:coordinator at once). Any change clears net_failing: the network probe sets it
 * after its own. */
void hosts_set_state(struct coordinator *c, host_t *h, host_state_t st, const char *reason, double now);

/* hs->slots_total, slots_usable and slots_max again (after a host's drain changed). */
void hosts_recount(hosts_state_t *hs);

/* The usable hosts (up or slow, not drained), in the launcher's order: their names into names (at
 * most max) and their slots summed into *slots. Returns the count. */
int hosts_usable(const hosts_state_t *hs, const char **names, int max, int *slots);

/* [{name, slots, state, reason, since, checked, benchmark: {...} or null}] (new ref); the
 * jobs on each host are the caller's to add (the runs are above this file). */
json_t *hosts_json(const hosts_state_t *hs);

/* ---- policy (pure) ------------------------------------------------------------------- */

/* The processes an attempt runs as when usable of the cluster's total slots are left:
 * all `full` (the spec's) while they fit; fewer when not, keeping the ratio of ranks to
 * slots a job that oversubscribes the whole cluster already has; never below min (the
 * spec's min_workers, + 1 with a parameter server: min ranks oversubscribed when fewer
 * slots are usable). 0 when no slot is usable. */
int hosts_elastic_world(int full, int min, int total_slots, int usable_slots);

/* Benchmark verdicts: speed[i] <= 0 failed. ratio[i] = speed / the median of the ones
 * that did not fail (0 for a failure); slow[i] = 1 when ratio < HOSTS_SLOW_RATIO. */
void hosts_classify(const double *speed, int n, double *ratio, int *slow);

#endif
