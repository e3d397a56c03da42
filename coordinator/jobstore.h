/* coordinator/jobstore.h - the coordinator's Redis schema: job states, the job hash, the
 * queue, the event stream, and a small pool of connections for callers that run on
 * threads of their own (the HTTP layer, the CLI). Key names: common/redis_keys.h.
 *
 * docs/REDIS.md describes every key. State changes that race with clients (claiming a
 * queued job, cancelling one) are single Lua scripts, so a job is never both claimed
 * and cancelled; the daemon is the only writer of the state of a job it has claimed.
 *
 * All functions take a connected context and return 0 on success or a negative
 * JS_* code. JS_EREDIS means the connection is broken (a NULL reply): the caller drops
 * the context and reconnects with backoff.
 */
#ifndef PACER_JOBSTORE_H
#define PACER_JOBSTORE_H

#include <stddef.h>

#include <hiredis/hiredis.h>
#include <jansson.h>
#include <pthread.h>

#include "redis_keys.h"
#include "redis_url.h"

enum {
    JS_OK = 0,
    JS_EREDIS = -1,    /* connection broken or server error */
    JS_ENOTFOUND = -2, /* no such job */
    JS_ESTATE = -3,    /* the job is not in a state that allows this */
    JS_ENOMEM = -4,
};

typedef enum {
    JOB_QUEUED = 0,
    JOB_RUNNING,
    JOB_SUCCEEDED,
    JOB_FAILED,
    JOB_CANCELLED,
    JOB_RESTARTING,
    JOB_NSTATES
} job_state_t;

#define JOB_ID_MAX 32
#define JOB_RETRIES_MAX 100

const char *job_state_name(job_state_t s);
/* Case-insensitive; returns 0 or -1. */
int job_state_parse(const char *name, job_state_t *out);
int job_state_terminal(job_state_t s);

#define EVENTS_MAXLEN 10000
#define JOB_KEYS_TTL_S (7 * 24 * 3600) /* metrics and node keys of a finished job */

/* 1 when id looks like a job id ("j-" and digits): ids are part of key names and paths,
 * so anything else is refused before it reaches Redis or the file system. */
int job_id_valid(const char *id);

/* ---- connection pool ----------------------------------------------------------------- */

typedef struct jobstore_pool jobstore_pool_t;

jobstore_pool_t *jobstore_pool_new(const redis_url_t *url);
void jobstore_pool_free(jobstore_pool_t *p);
/* A context used by one thread at a time; NULL with err when Redis is unreachable. */
redisContext *jobstore_pool_get(jobstore_pool_t *p, char *err, size_t errlen);
/* Gives it back; a broken one (or broken != 0) is freed instead. */
void jobstore_pool_put(jobstore_pool_t *p, redisContext *c, int broken);

/* ---- jobs ------------------------------------------------------------------------------ */

typedef struct {
    const char *spec_json; /* normalised spec */
    const char *name, *model, *algorithm;
    int workers, world;
    int dynamic_batch;
    int simulated;      /* simulate.enabled: run by the sim launcher */
    const char *parent; /* a retry: the job it retries (NULL = a new job) */
    /* Who submitted it (NULL = nobody recorded): its hash's "owner"; with counted, its id
     * joins KEY_USER_QUEUED of the owner too (the count of their queued jobs, quotas.c:
     * kept only for users with a max_queued, who prune it whenever they are counted). */
    const char *owner;
    int counted;
} job_new_t;

/* INCR pacer:seq, then in one MULTI/EXEC: the job hash (state QUEUED), pacer:jobs,
 * pacer:queue and a "submitted" event. The id is valid only when 0 is returned. A retry
 * (j->parent) also gets "parent", and its id is appended to the parent's "retries" (a
 * comma-separated list of at most JOB_RETRIES_MAX ids, the oldest dropped first) in the
 * same transaction. hash (may be NULL) receives the fields written, as jobstore_get would
 * return them (a new reference; NULL when out of memory), so a caller need not read the
 * job back. */
int jobstore_submit(redisContext *c, const job_new_t *j, char *id, size_t idlen, json_t **hash);

/* HGETALL of the job hash as a JSON object of strings (new reference). */
int jobstore_get(redisContext *c, const char *id, json_t **out);

/* Cancel: a QUEUED job becomes CANCELLED at once (and leaves the queue); a RUNNING or
 * RESTARTING one gets cancel_requested, which the daemon acts on. *state_out (may be
 * NULL) is the state found. JS_ESTATE when the job has already finished. */
int jobstore_cancel(redisContext *c, const char *id, job_state_t *state_out);

/* The first max ids of the queue, in order, into ids (*n of them; anything that is not a
 * job id is skipped). */
int jobstore_queue_ids(redisContext *c, char (*ids)[JOB_ID_MAX], int max, int *n);
/* Claims id from the queue, wherever the policy found it (coordinator/policy.h: fifo
 * claims the head, fair may backfill): LREM, QUEUED -> RUNNING with started time, SADD
 * pacer:active, event. Returns 1 claimed, 0 not (it left the queue meanwhile, or was not
 * QUEUED any more: then it is only removed from the queue), or a JS_* code. */
int jobstore_claim(redisContext *c, const char *id, double now);
/* A preempted job back at the queue's front (--policy fair, run.c): RUNNING or RESTARTING
 * -> QUEUED with reason "preempted by BY at T", preempted_by = BY and preempted_at = now
 * in its hash, out of pacer:active, LPUSH onto pacer:queue, event. Returns 1, 0 when it is
 * in another state (a cancel won), or a JS_* code. */
int jobstore_requeue(redisContext *c, const char *id, const char *by, const char *reason, double now);
/* A job stopped because a host of its attempt drains, with fewer slots usable than the
 * need it runs on (coordinator/drain.h): back at the queue's front as jobstore_requeue,
 * with drained_from = host and drain_need = need in its hash (the scheduler holds it
 * while fewer slots than that are usable). */
int jobstore_requeue_drained(redisContext *c, const char *id, const char *host, int need, const char *reason,
                             double now);

/* Writes the fields (name/value pairs, nkv names) of the job hash; when state is not
 * NULL also the state, an event with reason, and pacer:active membership. One
 * MULTI/EXEC. */
int jobstore_update(redisContext *c, const char *id, const char *state, const char *reason, const char *const *kv,
                    int nkv);

/* XADD pacer:events MAXLEN ~ EVENTS_MAXLEN * json <ev> (ev borrowed). */
int jobstore_event(redisContext *c, json_t *ev);

/* Sets JOB_KEYS_TTL_S on the finished job's metrics, node, staleness and assignment
 * keys (the job hash itself is kept). */
int jobstore_expire_job_keys(redisContext *c, const char *id, int world);

/* Job history retention: when pacer:jobs holds more than keep ids, looks at the oldest
 * (at most max of them) and deletes those that are final (hash and pacer:jobs member; a
 * job still queued or running is kept whatever its age); then, with before > 0, final
 * jobs that finished before that time (seconds since the epoch), looking at no more
 * than the max - deleted oldest submitted before it. Writes the deleted ids into ids
 * (max entries of JOB_ID_MAX), *n their count. keep <= 0: no count limit. Bounded: one
 * ZCARD, a ZRANGE and a ZRANGEBYSCORE of at most max, one script call per id. */
int jobstore_prune(redisContext *c, long keep, double before, int max, char (*ids)[JOB_ID_MAX], int *n);

/* Parses a Redis stream id "MS-SEQ" (or "MS", SEQ = 0): decimal digits only, each part
 * at most 20 digits and at most 2^64 - 1, as Redis's own parser requires. An id that
 * passes here is one Redis accepts, so a client's id out of range is a 400 at the API,
 * never an error reply from Redis (which the event streams would read as Redis being
 * down, and retry forever). ms and seq may be NULL. Returns 0, or -1 when malformed. */
int jobstore_stream_id_parse(const char *s, unsigned long long *ms, unsigned long long *seq);

/* Reply helpers shared by the coordinator files. */
int reply_ok(const redisReply *r);                        /* not NULL and not an error */
long long reply_int(const redisReply *r, long long dflt); /* integer or numeric string */
double reply_double(const redisReply *r, double dflt);
const char *reply_str(const redisReply *r); /* string/status text or NULL */

#endif
