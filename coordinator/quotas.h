/* coordinator/quotas.h - what one user may hold of the shared coordinator (common/users.h,
 * "limits"), checked where a job or model is stored through the API: the queue's length
 * (--max-queued), a caller's queued jobs (max_queued), the priority they may ask for
 * (max_priority) and the uploaded models they own (max_models). The tick enforces the
 * fourth, the slots a user's running jobs hold (max_slots), in the policy (policy.h).
 *
 * A user's queued jobs are counted from KEY_USER_QUEUED, the ids jobstore_submit adds for
 * the owner, pruned of the jobs that ended whenever it is counted: the cost is the user's
 * own jobs, never the whole queue. The count and the job's store happen under one mutex
 * (coordinator's admit_lock), so parallel requests cannot pass a limit together.
 */
#ifndef PACER_QUOTAS_H
#define PACER_QUOTAS_H

#include <pthread.h>
#include <stdatomic.h>

#include <hiredis/hiredis.h>

#include "coordinator.h"
#include "jobstore.h"

/* Stores j (jobstore_submit) for by, whose limits allow it: its owner is by->user (none
 * when by or its user is NULL), and unless the coordinator is a client (no daemon: the
 * command line writes for the operator) the job is refused first when its spec's priority
 * (POLICY_PRIO_*) is above by's max_priority (COORD_EDENIED), when the ranks it asks for
 * (its world; 0 for a simulation, which holds no slot) exceed by's max_slots, so that it
 * would wait forever (COORD_ELIMIT), when the queue holds --max-queued jobs or by has max_queued jobs queued
 * (COORD_ELIMIT); err names the limit and its value. COORD_OK with id (and *hash:
 * jobstore_submit's) set. */
int quotas_submit(coordinator_t *c, redisContext *rc, job_new_t *j, const coord_caller_t *by, int priority, int ranks,
                  char *id, size_t idlen, json_t **hash, char *err, size_t errlen);

/* The uploaded models user owns (KEY_MODEL_OWNERS) into *n: COORD_OK or COORD_EUNAVAIL. */
int quotas_models_owned(redisContext *rc, const char *user, long *n);

/* The coordinator's users state (c->users). */
typedef struct coord_users {
    /* Admission: one submission through the API at a time is counted against the queue's
     * limits and stored, so that requests in parallel cannot pass a limit together. */
    pthread_mutex_t admit_lock;
    /* Bumped by a user's removal (users.c): the tick then reads its runs' and queued jobs'
     * owners again (schedule.c), so that a removed user's jobs count to nobody's limits. */
    atomic_long owners_gen;
    /* Called by coord_user_remove after a removal (webhook.c's webhooks_user_removed, set
     * when the daemon starts its webhooks): a callback, so that the users' store never
     * calls up into the webhooks that read it. NULL on a client handle. */
    void (*removed)(struct coordinator *c, const char *name);
} coord_users_t;

#endif
