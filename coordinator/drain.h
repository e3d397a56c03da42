/* coordinator/drain.h - hosts taken away with notice, and the interruptions they cause.
 *
 * Interruptions: an attempt that ended with NOTICE_EXIT_STATUS (its ranks heard SIGTERM,
 * agreed on a step, checkpointed there and left: common/notice.h) is an interruption, not
 * a failure. The job's "interruptions" list ([{reason, host, at_step, checkpoint_step,
 * lost_steps, at}], the newest RUN_INTERRUPTIONS_KEPT), an event {"type":
 * "interruption"} (which webhooks deliver as job.interrupted) and a log line record it;
 * "interruptions_total" counts them all. */
#ifndef PACER_DRAIN_H
#define PACER_DRAIN_H

#include <pthread.h>

#include "run.h"

struct hosts_state; /* hosts.h */

#define RUN_INTERRUPTIONS_KEPT 20

/* r's attempt stopped on notice: reads and removes the worker's note beside the
 * checkpoint, records the interruption (why: "notice", or the drain's reason). A note
 * that is missing or wrong is said in the log, and the interruption recorded without
 * its figures (null). host: the host it names (NULL: the one in the note). */
void drain_interruption(coordinator_t *c, coord_run_t *r, const char *why, const char *host, double now);
/* Whether r's attempt, ended so, stopped on notice: exit 75, or any other end but success
 * with the worker's note there (mpirun told to terminate exits 1 after its ranks, which
 * heard the SIGTERM it forwards, checkpointed and left the note). */
int drain_noticed(coordinator_t *c, coord_run_t *r, sv_outcome_t oc, int code);
/* Removes a note an attempt stopped by the coordinator left (a cancel, a preemption, a
 * resize: their SIGTERM too is a notice to the ranks), so that no later attempt's end
 * reads it as its own. */
void drain_forget_note(coordinator_t *c, const coord_run_t *r);
/* The "interruptions" field of an adopted job (JSON run_persist wrote); anything else
 * leaves the list empty. */
void drain_adopt_interruptions(coord_run_t *r, const char *text, const char *total);

/* ---- drained hosts ----------------------------------------------------------------------
 * An admin drains a host (POST /api/v1/cluster/hosts/{name}/drain, coord_host_drain): the
 * drain is a field of KEY_DRAIN in Redis, so it outlives the daemon; the tick reads it
 * every second into host_t's drained fields. A drained host is not usable (hosts_usable),
 * and each job with ranks there is stopped with SIGTERM (KILL_DRAIN: a notice, its ranks
 * checkpoint at the next step), recorded as an interruption "drain" naming the host, and
 * relaunched at once on the hosts still usable. DELETE ends the drain. Under a launcher
 * whose resource manager drains nodes itself (Slurm: launcher_rm_drains), a node it drains
 * is drained here too when no admin's drain names it: reason "Slurm drains it: R",
 * deadline --slurm-drain-deadline after it was first seen; it ends when Slurm's does. */

/* Once a second: KEY_DRAIN, and every 2 s the resource manager's drains, into the host
 * table (a change is logged and published). */
void drain_hosts_tick(coordinator_t *c, double now);
/* The first of r's hosts that drains, or NULL. */
const char *drain_host_of(const struct hosts_state *hs, const coord_run_t *r);

/* After a drain's stop: the free usable slots r needs to run at once (a rigid job's world,
 * an elastic one's minimum, at most all the cluster's slots), when fewer are free than that
 * (it then waits QUEUED: jobstore_requeue_drained), else 0 (it relaunches on them).
 * slots_used: the slots every unfinished run holds (run_slots_used; passed in, as run.c
 * calls drain.c and not the other way round). */
int drain_wait_slots(const struct hosts_state *hs, const coord_run_t *r, int slots_used);
/* The QUEUED reason of r, requeued by its host's drain, waiting for need slots. */
void drain_queue_reason(const struct hosts_state *hs, const coord_run_t *r, int need, char *out, size_t len);
/* The draining hosts with their reasons, "a (maintenance), b" ("" none). */
void drain_hosts_text(const struct hosts_state *hs, char *out, size_t len);

/* The coordinator's drain state (c->drain). Drains and their ends through the API: the
 * caller bumps asked once KEY_DRAIN holds the change and waits on cond (under c->lock) until
 * the tick has read KEY_DRAIN that many times over (done), so that no placement after the
 * answer misses it. */
typedef struct drain_state {
    long asked, done;
    pthread_cond_t cond;
    double read_at;    /* when the tick last read the drains (drain_hosts_tick) */
    double rm_read_at; /* and the resource manager's own (rm_drain_read) */
} drain_state_t;

#endif
