/* coordinator/run.h - a job's run in the daemon, from the claim to its final state: the
 * launch, the supervision of its processes every tick (exit status, cancel requests,
 * heartbeats, batch plans, log size), restarts from checkpoints, adoption after a
 * coordinator restart, and what Redis shows about it. Tick thread only (and
 * coordinator_stop once that thread is gone). run.c tells the whole life and keeps the
 * run's record; the rest is one file a part: run_tick.c (a tick of supervision,
 * run_step), run_launch.c (an attempt's launch), run_elastic.c (elastic restarts and
 * resizes), run_adopt.c (a claimed or adopted job becoming a run). */
#ifndef PACER_RUN_H
#define PACER_RUN_H

#include <jansson.h>
#include <limits.h>

#include "coordinator.h"
#include "jobstore.h"
#include "launcher.h"
#include "netprobe.h"
#include "spec.h"
#include "supervise.h"
#include "users.h"

typedef enum {
    PH_ACTIVE,    /* the job runs (spawned or adopted) */
    PH_KILLING,   /* SIGTERM sent; SIGKILL at kill_deadline; once mpirun ended (or an
                     attempt ended on its own), draining: its slots held until its ranks
                     are gone (launcher_drain_poll) and the checkpoint fence is raised */
    PH_PROBING,   /* the attempt failed: are its hosts still there? (probe_deadline) */
    PH_BACKOFF,   /* RESTARTING: waiting for next_launch */
    PH_DONE,      /* final state decided; removed once Redis has it */
    PH_PREFLIGHT, /* before the first launch: a benchmark of the hosts runs (preflight.h) */
} run_phase_t;

/* KILL_RESIZE: a host is back and the job stops to grow (with notice where the launcher
 * has one: its ranks checkpoint at their next step; else it has just checkpointed).
 * KILL_STALL: its ranks wait and none trains (stall.h). */
/* KILL_PREEMPT: a job of a higher priority needs its slots (--policy fair, policy_preempt):
 * stopped with notice (its ranks checkpoint at their next step), then back in the queue
 * to resume from that checkpoint. */
/* KILL_DRAIN: a host of its attempt drains (drain.h): stopped with notice, it resumes
 * on the other hosts without using a restart. */
typedef enum { KILL_NONE, KILL_CANCEL, KILL_STALE, KILL_RESIZE, KILL_STALL, KILL_PREEMPT, KILL_DRAIN } kill_reason_t;

#define RUN_JPATH (PATH_MAX + 128) /* STATE_DIR/jobs/{id}/{leaf} always fits */
#define RUN_RESIZES_KEPT 20        /* resizes a job's record lists (the newest) */
/* How long a stop with notice other than a drain's (which has its own deadline) waits for
 * the ranks' step boundary before SIGKILL, when --kill-grace is shorter. */
#define RUN_NOTICE_STOP_S 60.0

/* One job the daemon runs (tick thread only). */
typedef struct {
    char id[JOB_ID_MAX];
    job_spec_t *spec; /* as submitted (normalised) */
    int world;        /* processes of the current (or next) attempt */
    int full_world;   /* what the spec asks: workers, + 1 with a parameter server */
    int min_world;    /* the fewest it can run as: min_workers, + 1 with a parameter server */
    /* Elastic restarts: the hosts the attempt may use (the usable ones at its launch),
     * the failed attempt's outcome while its hosts are probed, why the next launch
     * changes the world, the resizes so far, and the checkpoint a grow waits for. */
    char **hosts;
    int nhosts;
    sv_outcome_t probe_oc;
    int probe_code;
    double probe_deadline;
    /* The network probe of the attempt's hosts (netprobe.h), after the remote-shell
     * probes found none down: 0 not yet, 1 running, 2 done (or not wanted). */
    int np_state;
    netprobe_t np;
    char resize_reason[320];
    int resizes;
    json_t *resize_log;     /* the newest RUN_RESIZES_KEPT: [{from, to, reason, hosts, time}] */
    int grow_armed;         /* a grow is possible: a check later (a notice) or at the next checkpoint */
    long long grow_ckpt[3]; /* the checkpoint file then (mtime ns, inode, size) */
    int stop_notice; /* run_kill's next stop is a notice (launcher_notice): a grow's, a shrink's for a preemption */
    double last_grow_check;
    run_phase_t phase;
    launch_handle_t h;    /* the attempt's processes (launcher.h); zero between attempts */
    launcher_t *launcher; /* the daemon's launcher, or its sim launcher for a simulated job */
    int simulated;        /* spec->simulate.enabled: runs under pacer-sim (launch_sim.c) */
    double launched_at;   /* heartbeat grace starts here */
    int restarts, attempts;
    double next_launch;
    kill_reason_t kill_reason;
    int stale_rank; /* the rank whose heartbeat is stale (-1: none), until the next launch */
    double stale_s;
    char stale_host[64];  /* its host as it reported it ("" = unknown) */
    char drain_host[256]; /* KILL_DRAIN: the drained host it leaves */
    /* Stalls (stall.h): when the job was first seen stalled (0: it is not), what it shows
     * while a rank waits (the job's "stall" field; NULL: none) and its key, and at a
     * KILL_STALL what the ranks did and the host its silent ranks are on ("" = none, or
     * several). */
    double stall_seen;
    json_t *stall;
    char stall_sig[256];
    char stall_text[320];
    char silent_host[64];
    /* Restarts not spent blindly: the host that went silent in the last stopped attempts
     * (supervise.h), and the hosts this job leaves out for having done so twice in a row. */
    sv_silent_t silent;
    char **benched;
    int nbenched;
    double kill_deadline;
    int sigkilled;
    /* The attempt has ended (launcher_poll) and its ranks are being waited for (draining):
     * how it ended, kept for what comes after (attempt_over), and the fence generation it
     * ran under (raised past it once its ranks are gone; fence_deadline: give up retrying
     * the lock). */
    int draining;
    launch_drain_t drain;
    sv_outcome_t end_oc;
    int end_code;
    char end_lost[512];
    long long fence;
    double fence_deadline;
    job_state_t state;       /* the state Redis should show */
    job_state_t saved_state; /* the state Redis was last told (events on change) */
    char reason[768];
    int exit_code; /* -1 = unknown */
    double started, finished;
    int dirty; /* Redis does not show this run's latest fields yet */
    int cancel_requested;
    double last_plan, last_log_check;
    int first_launch;   /* no launch yet: the initial batch plan is due */
    int preflight_done; /* the pre-flight round started for it has been asked for */
    int redis_reported; /* the worker's Redis sink was seen (a node hash exists) */
    /* Collapse (worker/health.h): the current attempt's health as the job shows it
     * (compact JSON from run_health; "" unknown), whether its collapse was announced
     * (an event, a log line: once per attempt), the learning-rate factor of the
     * attempts (0.5 per collapse restart), and for the launch after a collapse the step
     * the resumed checkpoint must precede (--resume-before; 0: plain --resume). */
    char health[512];
    int collapse_announced;
    long collapse_since;        /* the announced collapse's since_step */
    char last_health_seen[512]; /* the node hash's health text last parsed */
    char collapse_why[400];     /* and its reason */
    double lr_scale;
    long resume_before;
    /* Measured progress (the node hash of a training rank: step, total_steps), for the
     * estimate of when it ends (schedule.c, coordinator/policy.h); 0 = not measured. */
    long long progress_step, progress_total;
    long long launch_progress; /* progress_step when the attempt was launched (grow_check) */
    /* Its owner (the job hash's "owner"; "" for jobs from before users): whose fair-share
     * usage its slots count to (schedule.c, --policy fair). */
    char owner[USER_NAME_MAX + 1];
    /* Preemption: the job it is stopped for (KILL_PREEMPT), and whether this run is a
     * preempted job claimed again (its directory, checkpoints included, is its own). */
    char preempted_by[JOB_ID_MAX];
    int requeued;
    /* A shrink instead of a stop (policy_preempt_elastic): the most ranks its attempts
     * may use until slots are free again (grow_check lifts it); 0 = no cap. */
    int world_cap;
    /* A grow past its ask (hplan_apply, --policy hetero): the policy lent it idle slots, and
     * its attempts run on up to this many ranks, more than full_world (at most run_max_world);
     * 0 = none. A shrink, the take-back, sets it again (to 0 at or below full_world). */
    int world_grow;
    int shrinking; /* stopped by shrink_for: its next resize names preempted_by */
    /* --policy hetero|agnostic: the hosts its decision placed it on (its attempts use only
     * those of them that are usable; none: any usable host), and the placement as the API
     * shows it ({"hosts_by_class": {class: [host]}, "reason"}; NULL: not placed). */
    char **place;
    int nplace;
    json_t *placement;
    /* The policy changed its placement (run.c, hplan_apply: shrunk, grown or moved): stopped
     * to relaunch from its checkpoint on the new hosts; its next launch records the change
     * as a resize even at the same world (a move), and clears it (so does a launch that
     * finds no usable host: it then holds nothing). While set, the tick starts
     * no job and changes no other (one change at a time: the slots are not free yet). */
    int hplan;
    /* Stops with notice (drain.h): the newest RUN_INTERRUPTIONS_KEPT [{reason, host,
     * at_step, checkpoint_step, lost_steps, at}], and how many there were in all. */
    json_t *interruptions;
    int interruptions_total;
    /* What the job is worth to --policy hetero's placement (policy_hjob_t.worth): a trial
     * of an ASHA search, rf^(rungs it passed), set by each experiment tick
     * (experiment.c); 0: a job like any other (1). */
    double worth;
} coord_run_t;

/* The coordinator's runs (c->runs->list): one per job it runs; tick thread only. */
typedef struct coord_runs {
    coord_run_t **list;
    int n, cap;
} coord_runs_t;

/* The slots of c->hosts->list[host] r holds: its ranks fill its hosts (its placement, else the
 * hosts of its attempt, else all) in the launcher's order, a host's slots at a time (Open
 * MPI's by-slot mapping; ranks beyond the slots hold no more). 0 for a simulation or a
 * job that has ended. For the policy's snapshot and the Cluster page (hosts_json). */
int run_holds(const coordinator_t *c, const coord_run_t *r, int host);


void run_free(coord_run_t *r);
/* Slots (ranks) of the real runs that are not done. */
int run_slots_used(const coordinator_t *c);
/* Simulations (the sim launcher's slots) that are not done. */
int run_sims_used(const coordinator_t *c);
/* Has r's attempt ended? launcher_poll with r's exit-code file and log (coordinator_stop
 * uses it to wait for the jobs it stops). */
void run_poll(coordinator_t *c, coord_run_t *r, double now, launch_status_t *st);
/* Writes what Redis should show about r (r->dirty stays set when it cannot). */
void run_persist(coordinator_t *c, coord_run_t *r);
/* A health object from outside (rank 0's node hash, the summary file: worker/health.h)
 * as the job shows it, a new object: {"state": "ok"} or {"state": "collapsed",
 * "since_step" (>= 0), "at_step", "reason"}, only those fields, the reason one line of at
 * most 399 bytes (control characters as '?'). NULL when in is not one. */
json_t *run_health_clean(json_t *in);
/* Sets r's state and reason and persists them. */
void run_set_state(coordinator_t *c, coord_run_t *r, job_state_t s, const char *reason);
/* Stops r's network probe if one runs (the daemon stops). */
void run_stop_probes(coordinator_t *c, coord_run_t *r);


/* ---- for the scheduler (schedule.c), which calls down into a run, never the reverse ---- */

/* The most ranks r may run as (spec_worlds). */
int run_max_world(const coord_run_t *r);
/* Whether r's checkpoint file exists (a stop loses nothing beyond it). */
int run_has_checkpoint(coordinator_t *c, const coord_run_t *r);

/* A job just claimed (QUEUED -> RUNNING): what it asks for, and why its record could not
 * be read when bad (err: the reason it fails with). */
typedef struct {
    const char *id;
    int world, min_world;
    const char *owner; /* "" none */
    int requeued;      /* preempted before: its directory is its own */
    int bad;
    const char *err;
} run_claim_t;
/* Stops r's attempt for why (SIGTERM now, SIGKILL after --kill-grace); what follows the
 * stop (a relaunch, a requeue, the end) is run_step's, by the reason. */
void run_kill(coordinator_t *c, coord_run_t *r, kill_reason_t why, double now);

/* ---- for the run's own files (run_elastic.c, run_launch.c, run_tick.c, run_adopt.c) ---- */

/* Workers of an attempt of `world` processes (less the parameter server's rank, if any). */
int workers_of(const coord_run_t *r, int world);
/* The hosts r's attempt may use (copies; -1 when out of memory), and as JSON. */
int run_set_hosts(coord_run_t *r, const char *const *names, int n);
json_t *run_hosts_json(const coord_run_t *r);
/* A new run of job id, and which launcher runs it (the sim launcher for a simulated job;
 * NULL when this daemon has none). */
coord_run_t *run_new(coordinator_t *c, const char *id);
void run_bind(coordinator_t *c, coord_run_t *r);
/* A simulated job on a daemon that cannot simulate: failed, the reason names the field. */
void fail_unsimulated(coordinator_t *c, coord_run_t *r, double now);
/* The current attempt's health (in: borrowed, from rank 0's node hash or the summary), a
 * collapse announced once per attempt. */
void run_health(coordinator_t *c, coord_run_t *r, json_t *in, double now);
/* What the job shows about waiting ranks: nothing once its attempt is over. */
void clear_stall(coord_run_t *r);
/* The job's processes have ended (or must be treated so): decide what comes next.
 * code: the exit status or signal, or for SV_STALE the stale rank. */
void finish_attempt(coordinator_t *c, coord_run_t *r, sv_outcome_t oc, int code, double now);
/* A just-claimed job's directory that an earlier job of the same id left, moved aside
 * (-1 with the reason in err). */
int move_aside(coordinator_t *c, const coord_run_t *r, const char *dir, char *err, size_t errlen);
/* The checkpoint file's identity (mtime in ns, inode, size; zeros when absent). */
void ckpt_ident(coordinator_t *c, const coord_run_t *r, long long out[3]);

#endif
