/* coordinator/stall.h - a job whose ranks wait and none trains: the policy
 * that reads the ranks' waiting reports and heartbeats, and the words that say it.
 *
 * A rank waiting in a collective far longer than its steps take says so in its node hash
 * (worker/waitmark.h: waiting, waiting_peer, waiting_since). A rank is silent when its
 * heartbeat is older than STALL_SILENT_S (the heartbeat comes every 0.25 s: 40 missed).
 * The job is stalled when at least one rank waits and every other rank waits too or is
 * silent: no rank is training, computing, evaluating or writing a checkpoint (those beat
 * and do not wait), so nothing can end the wait but a peer that is gone or cut off. A
 * stall that lasts STALL_CONFIRM_S (seen on every tick of that span, so one late
 * heartbeat on a loaded machine meeting the others' wait is not enough) stops the attempt
 * (run_tick.c: KILL_STALL), long before the heartbeat timeout when a rank's heartbeat still
 * comes (its host lost the job's network, not the coordinator's) or soon after a silent
 * rank's peers noticed.
 *
 * While any rank waits the job shows it (its "stall" field, pacer get, the job page):
 *   "ranks 0, 1 waiting in barrier for 12 s; rank 2 (pw3) silent for 15 s"
 * Pure functions: unit-tested without processes.
 */
#ifndef PACER_STALL_H
#define PACER_STALL_H

#include <jansson.h>
#include <stddef.h>

#define STALL_SILENT_S 10.0
#define STALL_CONFIRM_S 5.0

/* One rank as its node hash shows it. */
typedef struct {
    int rank;
    char host[64];        /* "" when it never said */
    double heartbeat;     /* unix time of its last beat, or the attempt's start when later
                            (a rank that never beat is silent from the start on) */
    char waiting[24];     /* what it waits in ("" = not waiting) */
    int peer;             /* the rank it waits on, -1 = every rank of the collective */
    double waiting_since; /* unix time */
} stall_rank_t;

typedef struct {
    int waiting; /* ranks that wait */
    int silent;  /* ranks that are silent (and do not wait) */
    int stalled; /* waiting > 0 and every rank waits or is silent */
} stall_verdict_t;

/* The verdict over ranks[0..n) at now. */
void stall_assess(const stall_rank_t *ranks, int n, double now, stall_verdict_t *v);

/* What the job shows while a rank waits (NULL when none does; new reference):
 *   {"since": first seen, "waiting": [{"rank", "host", "op", "peer", "since"}],
 *    "silent": [{"rank", "host", "heartbeat"}]}
 * host null when unknown, peer null for every rank. since: when the coordinator first saw
 * these ranks so (kept by the caller while the same ranks wait and are silent). */
json_t *stall_json(const stall_rank_t *ranks, int n, double now, double since);

/* A key of which ranks wait in what and which are silent: it changes when the object
 * above would change other than in its times. */
void stall_signature(const stall_rank_t *ranks, int n, double now, char *out, size_t len);

/* The sentence for a stall object at now: "ranks 0, 1 waiting in barrier for 12 s;
 * rank 2 (pw3) silent for 15 s". Groups ranks by what they wait in (and on); a waiting
 * group's time is its longest wait. "" for NULL or anything that is not such an object. */
void stall_text(const json_t *stall, double now, char *out, size_t len);

#endif
