/* coordinator/schedule.h - the scheduler of the daemon's tick: which queued jobs start, on
 * which hosts, and which running jobs make room for them. Every tick schedule_tick
 *   - reads the queue, each job's ask parsed once and cached (c->sched->qdemand),
 *   - picks the QUEUE_VIEW_MAX jobs the policy decides on, fairly (by priority, then each
 *     user's earliest first), with each owner's max_slots,
 *   - brings the users' fair-share usage up to date (--policy fair and after),
 *   - asks the policy (policy.h): admission, and with --policy hetero|agnostic the
 *     host-class plan (policy_plan over the hosts' classes and each job type's speed on
 *     them, hclass.h), whose shrinks, grows and moves of running jobs it applies,
 *   - preempts (stops or shrinks) running jobs for a job of a higher priority,
 *   - claims and launches the jobs it starts (run.h), and publishes the others' positions,
 *     reasons and estimated starts for the API (c->sched->queue_view).
 * Tick thread only. The policy is pure; this file is its I/O. */
#ifndef PACER_SCHEDULE_H
#define PACER_SCHEDULE_H

#include <jansson.h>
#include <pthread.h>

#include "coordinator.h"
#include "hclass.h"
#include "jobstore.h"
#include "spec.h"
#include "users.h"

/* What a queued job asks for, read from its record once (the scheduler's cache: c->sched->qdemand). */
typedef struct {
    char id[JOB_ID_MAX];
    int world, min_world, simulated, bad;
    int max_world;                 /* the most ranks it may grow to (spec_max_workers; world when it never grows) */
    int priority;                  /* POLICY_PRIO_* from the spec's priority */
    char owner[USER_NAME_MAX + 1]; /* the job hash's "owner" ("" none) */
    int requeued;                  /* preempted or drained before ("preempted_by", "drained_from" in its hash) */
    int drain_need;                /* requeued by a drain: the usable slots it waits for (0 none; drain.h) */
    char model[SPEC_NAME_MAX];     /* its type for --policy hetero|agnostic (hclass.h) */
    double work, submitted;        /* hetero: samples it trains (0 unknown), unix s (hclass_job_work) */
} sched_queued_t;

/* The coordinator's scheduler state (c->sched). */
typedef struct sched_state {
    /* The queue as the policy last saw it (coordinator/policy.h): queued job id -> its
     * `queue` object ({"position", "reason", "detail", "estimated_start"}), replaced whole
     * by the tick, read by the API (job_json); NULL in a client (coordinator_open), whose
     * jobs show no queue object. Under queue_lock. */
    pthread_mutex_t queue_lock;
    json_t *queue_view; /* owned */
    /* tick thread only */
    sched_queued_t *qdemand; /* what the queued jobs ask for, parsed once per job */
    int nqdemand;
    hclass_cache_t hcache; /* the profiles --policy hetero|agnostic classes hosts by (hclass.h) */
    double hplan_at;       /* when the tick last planned with classes */
    long owners_seen;      /* the users' owners_gen the tick's runs and qdemand were read at */
} sched_state_t;

/* One round of scheduling (above), at the end of the tick. */
void schedule_tick(coordinator_t *c, double now);

#endif
