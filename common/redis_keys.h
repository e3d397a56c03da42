/* common/redis_keys.h - the name of every Redis key pacer uses, in one place. The worker's
 * sink (worker/redis_report.c) writes some, the coordinator (jobstore.c, dynbatch.c, the
 * tick, the API) the rest; docs/REDIS.md says who writes and reads each and what it
 * holds. A name with arguments is a printf format taking them in the order of its
 * documented pattern: {id} a job id (%s), {rank} an MPI rank (%d), {host}, {device} and
 * {model} strings.
 *
 * REDIS_KEYS lists every key with the pattern docs/REDIS.md writes for it; a unit test
 * (test_common) checks that each format matches its pattern and that docs/REDIS.md names
 * exactly these keys.
 */
#ifndef PACER_REDIS_KEYS_H
#define PACER_REDIS_KEYS_H

#define KEY_SEQ "pacer:seq"
#define KEY_JOBS "pacer:jobs"
#define KEY_QUEUE "pacer:queue"
#define KEY_ACTIVE "pacer:active"
#define KEY_EVENTS "pacer:events"
#define KEY_JOB "pacer:job:%s"
#define KEY_JOB_METRICS "pacer:job:%s:metrics"
#define KEY_JOB_METRICS_COARSE "pacer:job:%s:metrics:coarse"
#define KEY_JOB_NODE "pacer:job:%s:node:%d"
#define KEY_JOB_STALENESS "pacer:job:%s:staleness:%d"
#define KEY_JOB_ASSIGNMENT "pacer:job:%s:assignment"
#define KEY_PROFILE "pacer:profile:%s:%s:%s" /* jobs fold into it; benchmarks overwrite it */
#define KEY_PROFILES "pacer:profiles"
#define KEY_COORD "pacer:coordinator"
/* Drained hosts (coordinator/drain.h): host name -> {"deadline", "reason", "since"}. */
#define KEY_DRAIN "pacer:drain"
#define KEY_LOCK "pacer:coordinator:lock"
/* The bytes of an uploaded ONNX model (coordinator/modelstore.c writes it at the upload
 * and again at start when missing; a worker that cannot open the stored file reads it). */
#define KEY_MODEL "pacer:model:%s"
/* GET /healthz's write probe (coord_health): the time of the last one, expiring. */
#define KEY_HEALTHZ "pacer:healthz"
#define KEY_USERS "pacer:users"               /* user name -> record (common/users.h) */
#define KEY_MODEL_OWNERS "pacer:model-owners" /* uploaded model name -> its uploader */
/* Fair share (--policy fair, coordinator/run.c): user name -> decayed slot-seconds as of
 * the field FAIRSHARE_AT (unix s; '@' starts no user name). */
#define KEY_FAIRSHARE "pacer:fairshare"
#define FAIRSHARE_AT "@at"
/* Limits (common/users.h): the jobs a user submitted that may still be queued (a set of ids,
 * added at the submission, pruned of ended jobs when counted), and the count of user
 * removals, whose number names a removed user's things ("NAME#removed-N"). */
#define KEY_USER_QUEUED "pacer:user:%s:queued"
#define KEY_USER_REMOVALS "pacer:user-removals"
/* Experiments (coordinator/experiment.h): their ids' counter, all of them by submission
 * time, those the tick still drives, and each one's hash. */
#define KEY_EXPERIMENT_SEQ "pacer:experiment-seq"
#define KEY_EXPERIMENTS "pacer:experiments"
#define KEY_EXPERIMENTS_ACTIVE "pacer:experiments:active"
#define KEY_EXPERIMENT "pacer:experiment:%s"

#define REDIS_KEYS(X)                                          \
    X(KEY_SEQ, "pacer:seq")                                    \
    X(KEY_JOBS, "pacer:jobs")                                  \
    X(KEY_QUEUE, "pacer:queue")                                \
    X(KEY_ACTIVE, "pacer:active")                              \
    X(KEY_EVENTS, "pacer:events")                              \
    X(KEY_JOB, "pacer:job:{id}")                               \
    X(KEY_JOB_METRICS, "pacer:job:{id}:metrics")               \
    X(KEY_JOB_METRICS_COARSE, "pacer:job:{id}:metrics:coarse") \
    X(KEY_JOB_NODE, "pacer:job:{id}:node:{rank}")              \
    X(KEY_JOB_STALENESS, "pacer:job:{id}:staleness:{rank}")    \
    X(KEY_JOB_ASSIGNMENT, "pacer:job:{id}:assignment")         \
    X(KEY_PROFILE, "pacer:profile:{host}:{device}:{model}")    \
    X(KEY_PROFILES, "pacer:profiles")                          \
    X(KEY_COORD, "pacer:coordinator")                          \
    X(KEY_LOCK, "pacer:coordinator:lock")                      \
    X(KEY_MODEL, "pacer:model:{sha256}")                       \
    X(KEY_HEALTHZ, "pacer:healthz")                            \
    X(KEY_USERS, "pacer:users")                                \
    X(KEY_MODEL_OWNERS, "pacer:model-owners")                  \
    X(KEY_FAIRSHARE, "pacer:fairshare")                        \
    X(KEY_USER_QUEUED, "pacer:user:{user}:queued")             \
    X(KEY_USER_REMOVALS, "pacer:user-removals")                \
    X(KEY_EXPERIMENT_SEQ, "pacer:experiment-seq")              \
    X(KEY_EXPERIMENTS, "pacer:experiments")                    \
    X(KEY_EXPERIMENTS_ACTIVE, "pacer:experiments:active")      \
    X(KEY_EXPERIMENT, "pacer:experiment:{experiment}")

/* Fields of KEY_JOB_NODE that more than one room reads by name: a GPU rank's device
 * utilisation and memory (worker/nvml.h samples them, the worker's sink writes them, the
 * API and GET /metrics read them; absent on CPU ranks and without NVML). */
#define NODE_GPU_UTIL_PCT "gpu_util_pct"
#define NODE_GPU_MEM_USED "gpu_mem_used_bytes"
#define NODE_GPU_MEM_TOTAL "gpu_mem_total_bytes"
/* The collapse detector's verdict (worker/health.h) as JSON, {"state": "ok"} or {"state":
 * "collapsed", "since_step", "at_step", "reason"}: written by rank 0's sink, read by the
 * coordinator's tick, which turns a collapse into an event and the job's "health". */
#define NODE_HEALTH "health"
/* A rank waiting in a collective far longer than its steps take (worker/waitmark.h): what
 * it waits in, the rank it waits on ("" = every rank of the collective), since when
 * (unix time) and the limit it passed; absent while it does not. The worker's sink writes
 * them, the coordinator (coordinator/stall.h) and the API read them. */
#define NODE_WAITING "waiting"
#define NODE_WAITING_PEER "waiting_peer"
#define NODE_WAITING_SINCE "waiting_since"
#define NODE_WAITING_LIMIT_S "waiting_limit_s"

#endif
