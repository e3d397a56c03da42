/* coordinator/coordinator.h - the job service: the public API of pacer-coordinator.
 *
 * Two ways to open one:
 *   coordinator_start()  the daemon: owns (or starts) the Redis server, runs the
 *                        supervision tick on its own thread (queue -> launches (launcher.h),
 *                        restarts, cancels, heartbeats, batch plans, profiles);
 *   coordinator_open()   a client: the same API against the same Redis, no supervision
 *                        (the command-line mode and tests use it).
 * Everything a client can see lives in Redis (docs/REDIS.md), so both give the same
 * answers, and a job submitted through either is run by the daemon.
 *
 * Thread safety: every coord_* function may be called from any number of threads at
 * once (the HTTP layer's); each call borrows a Redis connection from a pool. Calls block
 * at most for a Redis round trip (2 s timeout), except coord_events_wait which waits up
 * to its timeout. No call exits the process; the caller must ignore SIGPIPE.
 *
 * Errors: functions return COORD_OK (0) or a negative COORD_E* code; coord_strerror()
 * names it, and functions with an err buffer put one line there for the client (for
 * COORD_EINVAL it names the field: "optimizer.lr: must be > 0"). HTTP mapping:
 * EINVAL 400, ENOTFOUND 404, ESTATE 409, EUNAVAIL 503, ELIMIT 429, EDENIED 403, anything
 * else 500.
 *
 * JSON results are new references (json_decref them). coord_get's "spec" and "summary"
 * members may be shared with a cache (finished jobs): read them, do not modify them.
 * Times are unix seconds (float).
 */
#ifndef PACER_COORDINATOR_H
#define PACER_COORDINATOR_H

#include <stddef.h>

#include <jansson.h>

#include "spec.h"
#include "users.h"

enum {
    COORD_OK = 0,
    COORD_EINVAL = -1,    /* bad request: invalid spec, bad argument */
    COORD_ENOTFOUND = -2, /* no such job */
    COORD_ESTATE = -3,    /* not possible in the job's state (e.g. cancel a finished job) */
    COORD_EUNAVAIL = -4,  /* Redis unreachable: try again later */
    COORD_EINTERNAL = -5, /* out of memory, I/O error */
    COORD_ENOFIT = -6,    /* a valid spec the cluster cannot run: more ranks than it admits */
    COORD_EDATA = -7,     /* a valid spec whose data set (dataset.path) cannot be trained on */
    COORD_ELIMIT = -8,    /* a count limit reached: the caller's (max_queued, max_models) or the
                             coordinator's (--max-queued, the catalog's uploads); 429 */
    COORD_EDENIED = -9,   /* not for this caller: a priority above their max_priority; 403 */
};
const char *coord_strerror(int code);

#define COORD_SPEC_MAX (1 << 20) /* largest spec text accepted by coord_submit */
#define COORD_ID_MAX 32

/* Daemon configuration; coord_config_defaults() fills the defaults of the --help text. */
typedef struct {
    const char *listen;            /* ADDR:PORT for the HTTP layer ("127.0.0.1:8080") */
    const char *redis_url;         /* NULL or "" = embedded redis-server in state_dir */
    const char *worker_redis_url;  /* URL given to workers; NULL = the one the coordinator uses */
    const char *state_dir;         /* "./var"; made absolute */
    const char *launcher;          /* "local", "hostfile", "slurm" (coordinator/launcher.h); NULL =
                                     hostfile when hostfile is set, else local */
    const char *hostfile;          /* hostfile launcher: the Open MPI hostfile */
    const char *slurm_mpi;         /* slurm: "pmix", "mpirun" or NULL = pmix when srun has it */
    const char *slurm_partition;   /* slurm: NULL = the default partition */
    const char *slurm_args;        /* slurm: extra sbatch options, blank-separated */
    const char *worker;            /* NULL = pacer-worker next to this executable */
    const char *sim;               /* pacer-sim, for jobs with simulate.enabled (the sim launcher);
                                     NULL = next to this executable */
    const char *sim_platforms;     /* the platform files such a job may name; NULL = sim/platforms
                                     beside this executable's directory, else ./sim/platforms */
    int sim_slots;                 /* simulations at a time (1) */
    const char *mpirun;            /* "mpirun" */
    const char *redis_server;      /* "redis-server" (embedded mode) */
    int max_restarts;              /* 3 */
    double heartbeat_timeout_s;    /* 60 */
    double restart_backoff_s;      /* 1: restart delays are 1, 2, 4, ... s */
    double kill_grace_s;           /* 5: SIGTERM to SIGKILL */
    double slurm_drain_deadline_s; /* 300: a node Slurm drains is a drain with this deadline */
    double tick_s;                 /* 0.2 */
    long default_checkpoint_steps; /* 50: used when the spec says 0 */
    int stop_jobs_on_exit;         /* 0: running jobs outlive the daemon and are re-adopted */
    double oversubscribe;          /* 4: a submission may ask for at most this many ranks per
                                     slot of the cluster (more is 422 at submission) */
    int refuse_oversubscribed;     /* 0: a job with more ranks than the cluster's slots is accepted
                                     with a warning (and runs oversubscribed); 1: 422 */
    int policy;                    /* policy_kind_t (coordinator/policy.h): POLICY_FIFO */
    double fair_half_life_s;       /* 3600: fair share's usage halves this often (<= 0: never) */
    double preempt_min_run_s;      /* 60: --policy fair preempts a job only after it ran this long
                                     (s; < 0: never preempts) */
    /* --policy hetero|agnostic (policy_hetero_t): a running job's allocation holds at least
     * hetero_min_run_s (600) between changes; a change costs hetero_resize_cost_s (30) of
     * progress; moves and grows must gain hetero_hysteresis (0.05); a job grown past its ask
     * (a spec's max_workers) runs at policy_grow_factor with hetero_grow_overhead (0.2) */
    double hetero_min_run_s, hetero_resize_cost_s, hetero_hysteresis, hetero_grow_overhead;
    const char *const *data_roots; /* --data-root: directories a spec's dataset.path must
                                     resolve under; none = COORD_DATA_ROOT_DEBIAN and
                                     STATE_DIR/data */
    int ndata_roots;
    const char *data_cache_dir; /* --data-cache-dir: where workers decode users' data sets
                                     (imagefolder, npz) once per host; NULL = STATE_DIR/data-cache */
    long keep_jobs;             /* 10000: job history kept (final jobs beyond it, oldest
                                     first, are deleted with their directory); 0 = all */
    double keep_jobs_age_s;     /* 0: also delete final jobs that finished longer ago than
                               this (with their directories); 0 = no age limit */
    double host_probe_s;        /* 5: a lost host is probed this often until it is back */
    double host_memory_mb;      /* memory of each host, MiB, for admission (422 when a job's ranks
                              on one host need more, common/memest.h); 0 = the local
                              launcher's MemTotal, unknown (not checked) for the others */
    const char *host_memory_of; /* --host-memory-mb-of "HOST=MB[,HOST=MB...]": the memory of
                                     these hosts, beside host_memory_mb's for the others
                                     (coordinator/hostmem.h); NULL = none */
    const char *preflight;      /* benchmark the hosts before a job's first launch (preflight.h):
                                     "auto" (NULL: when a usable host of 2+ has no profile for
                                     its model), "always", "off" */
    int preflight_steps;        /* 8: timed steps per host */
    const char *webhook_hosts;  /* --webhook-hosts: the hosts webhooks may call (webhook.h);
                                     NULL = WEBHOOK_HOSTS_DEFAULT */
    double preflight_timeout_s; /* 120: a round's benchmarks that take longer fail */
    /* Limits (common/users.h "limits"): jobs in the queue at once, whoever submits them
     * through the API (max_queued, 4096, at most COORD_QUEUE_MAX: the scheduler reads the
     * whole queue every tick), and a member's defaults, which an admin may override per
     * user: queued jobs (256), slots their running jobs hold (0: no limit), uploaded models
     * they own (CATALOG_ADDED_MAX / 8), the highest priority (USER_PRIO_NORMAL). */
    long max_queued;
    user_limits_t member;
} coord_config_t;

#define COORD_OVERSUBSCRIBE_DEFAULT 4.0
#define COORD_OVERSUBSCRIBE_MAX 1024.0
#define COORD_DATA_ROOTS_MAX 16
#define COORD_KEEP_JOBS_DEFAULT 10000
#define COORD_QUEUE_MAX 16384 /* the longest queue --max-queued allows (and the tick reads) */
#define COORD_MAX_QUEUED_DEFAULT 4096
#define COORD_MEMBER_MAX_QUEUED_DEFAULT 256
#define COORD_DATA_ROOT_DEBIAN "/usr/share/datasets"

void coord_config_defaults(coord_config_t *cfg);

typedef struct coordinator coordinator_t;

/* Starts the daemon. Returns COORD_OK, or an error with err set (bad configuration, the
 * embedded Redis does not start, another live coordinator holds the lock). An external
 * Redis that is down at start is not an error: the tick connects when it comes up. */
int coordinator_start(const coord_config_t *cfg, coordinator_t **out, char *err, size_t errlen);

/* A client on redis_url (NULL or "" = unix://STATE_DIR/redis.sock, the daemon's embedded
 * server; state_dir NULL = "./var"). Does not connect until the first call. */
int coordinator_open(const char *redis_url, const char *state_dir, coordinator_t **out, char *err, size_t errlen);

/* Daemon: stops the tick; leaves running jobs running (or stops them with
 * stop_jobs_on_exit: they resume when a coordinator starts again); releases the lock;
 * stops the embedded Redis. Client: closes. Frees c. Call it only once no other thread
 * is inside a coord_* call (stop the HTTP layer first). */
void coordinator_stop(coordinator_t *c);

/* The configured --listen address ("127.0.0.1:8080"). */
const char *coordinator_listen(const coordinator_t *c);

/* ---- jobs ------------------------------------------------------------------------------- */

/* Validates spec_json (common/spec.h), assigns an id ("j-<n>") and queues the job. The job
 * is in Redis before this returns. COORD_EINVAL with the parser's message in err. */
int coord_submit(coordinator_t *c, const char *spec_json, char *id, size_t idlen, char *err, size_t errlen);

/* The same for a spec the caller has parsed and validated (spec_parse or spec_from_json:
 * the HTTP layer decodes the body once). With job not NULL, *job receives the job as
 * coord_get would show it, built from what was written, not read back (a new reference;
 * NULL when out of memory). */
int coord_submit_spec(coordinator_t *c, const job_spec_t *s, char *id, size_t idlen, json_t **job, char *err,
                      size_t errlen);

/* Who asks, through the API: the owner of what they create and whose limits bind it
 * (common/users.h). user NULL: nobody (a coordinator without users: no owner, no limit of a
 * user's). */
typedef struct {
    const char *user;
    user_role_t role;
} coord_caller_t;

/* coord_submit_spec by a caller: the job is theirs (its hash's "owner", written with it),
 * and the daemon refuses it past a limit: COORD_ELIMIT with the queue at --max-queued or
 * the caller at their max_queued, COORD_EDENIED for a priority above their max_priority;
 * err names the limit and its value. */
int coord_submit_spec_by(coordinator_t *c, const job_spec_t *s, const coord_caller_t *by, char *id, size_t idlen,
                         json_t **job, char *err, size_t errlen);

/* Jobs, newest first: {"jobs": [summary...], "total": N, "offset": O, "limit": L} where
 * total counts the jobs that match state (NULL or "" = any; QUEUED, RUNNING, ...; an
 * unknown state is COORD_EINVAL). limit <= 0 means 50; at most 1000. A summary has id,
 * name, state, model, algorithm, workers, submitted, started, finished, restarts, reason,
 * simulated and owner (the submitter; absent for jobs from before users). */
int coord_list(coordinator_t *c, const char *state, long offset, long limit, json_t **out);

/* One job: {"id", "name", "state", "model", "algorithm", "workers", "world",
 * "dynamic_batch", "simulated", "spec": {...}, "submitted", "started", "finished", "restarts",
 * "attempts", "reason", "pid", "exit_code", "log", "checkpoint_dir", "checkpoint",
 * "cancel_requested", "summary": {...} (the worker's summary file, once written),
 * "parent" (a retry: the job it retries), "retries": [ids of its retries, oldest first], "owner"}.
 * Fields not known yet are absent. */
int coord_get(coordinator_t *c, const char *id, json_t **out);

/* Cancels: a QUEUED job at once, a RUNNING/RESTARTING one within a tick or two plus the
 * kill grace period (SIGTERM to all its processes, SIGKILL after kill_grace_s). COORD_ESTATE
 * when it has already finished. */
int coord_cancel(coordinator_t *c, const char *id, char *err, size_t errlen);

/* Retries a finished job (SUCCEEDED, FAILED or CANCELLED): queues a new job with the
 * same spec, whose "parent" is id and whose id is appended to the parent's "retries"
 * (coord_get shows both). The retry starts from scratch: its checkpoints are its own.
 * COORD_ENOTFOUND for an unknown job, COORD_ESTATE for one that is queued or running
 * (cancel it first). lifecycle.c. */
int coord_retry(coordinator_t *c, const char *id, char *new_id, size_t idlen, char *err, size_t errlen);
/* The same by a caller: the retry is theirs and their limits apply (coord_submit_spec_by). */
int coord_retry_by(coordinator_t *c, const char *id, const coord_caller_t *by, char *new_id, size_t idlen, char *err,
                   size_t errlen);

/* Per rank: {"job": id, "world": W, "ranks": [{"rank", "host", "device", "role", "pid",
 * "heartbeat", "heartbeat_age_s", "samples_per_s", "compute_s", "comm_s", "idle_s",
 * "last_compute_s", "last_comm_s", "last_idle_s", "batch", "loss", "step", "epoch",
 * "samples", "slowdown", "plan_version", "test_accuracy", "test_loss", "updated",
 * "staleness": {"count", "sum", "sumsq", "mean", "p50", "p95", "max", "overflow",
 * "hist": [9]} (common/staleness.h)}], "staleness": {the job's: rank 0's, same shape},
 * "assignment": {"version", "batches", "time",
 * "source"} or null}. Ranks that have not reported yet appear with only "rank". */
int coord_nodes(coordinator_t *c, const char *id, json_t **out);

/* Metrics records from the job's stream after since (a stream id; NULL, "" or "0" = from
 * the start), at most limit (<= 0: 500; max 10000): {"job", "items": [{"id": stream id,
 * ...the record (worker/metrics.h JSON)}], "next": the last id returned (or since)}. */
int coord_metrics(coordinator_t *c, const char *id, const char *since, long limit, json_t **out);

/* The job's log (stdout + stderr of mpirun and every rank): with tail_lines > 0 the last
 * that many lines, else up to limit bytes (<= 0: 64 KiB; max 1 MiB) from byte offset.
 * {"job", "offset", "next_offset", "size", "text"} ("text" is valid UTF-8: invalid bytes
 * become '?'). An empty text when the job has not started. */
int coord_logs(coordinator_t *c, const char *id, long offset, long limit, long tail_lines, json_t **out);

/* The job's checkpoint file (STATE_DIR/jobs/{id}/checkpoints/{name}.ckpt) into path;
 * COORD_ENOTFOUND when the job is unknown or no checkpoint has been written yet. */
int coord_checkpoint_path(coordinator_t *c, const char *id, char *path, size_t len);
/* {"coordinator": {pid, host, started, heartbeat, version, state_dir, redis, worker,
 * worker_redis, hosts: [{name, slots}], slots, slots_used, running, simulator: {available,
 * reason, slots, platforms_dir, platforms: [file names]}} or null when no daemon
 * has run, "alive": whether its heartbeat is fresh, "queued", "active", "jobs",
 * "profiles": [{key, host, device, model, samples_per_s, updated, jobs}]}. */
int coord_cluster(coordinator_t *c, json_t **out);

/* The simulator's cluster file from the profiles (hclass_cluster_json, over the hosts of
 * the daemon's record and every profile). COORD_OK; COORD_EUNAVAIL when Redis does not
 * answer. */
int coord_cluster_classes(coordinator_t *c, json_t **out);

/* GET /healthz: whether Redis answers and takes a write (one SET of a key that expires,
 * KEY_HEALTHZ), which is what a submission needs. COORD_OK; COORD_EUNAVAIL when Redis
 * does not answer; COORD_ESTATE when it answers but refuses the write (a full disk's
 * MISCONF, OOM at maxmemory, NOREPLICAS, READONLY), with Redis's error line in err. */
int coord_health(coordinator_t *c, char *err, size_t errlen);

/* Daemon: learns the host list again (hostfile re-read, sinfo asked again, CPUs counted),
 * as SIGHUP does, and waits (30 s at most) until the tick has done it. Hosts that stay
 * keep their state; new hosts are probed; running jobs are not touched (a shrunk job
 * grows onto a new host at its next checkpoint). *out: {"hosts": [...as coord_cluster],
 * "slots", "added": [names], "removed": [names]}. COORD_EINVAL with err when the new list
 * cannot be read (the old one stays); COORD_ESTATE on a client handle (only the daemon
 * has a host list); COORD_EUNAVAIL when the tick did not answer in time. */
int coord_cluster_reload(coordinator_t *c, json_t **out, char *err, size_t errlen);
/* Drains the host name (coordinator/drain.h says what follows): deadline_s (> 0, at most a
 * week) from now, reason (at most 200 bytes) shown with it; a second drain replaces the
 * first. *out is the drain as stored. COORD_ENOTFOUND for a host the daemon does not list,
 * COORD_EINVAL naming a bad field, COORD_EUNAVAIL without Redis. */
int coord_host_drain(coordinator_t *c, const char *name, double deadline_s, const char *reason, json_t **out, char *err,
                     size_t errlen);
/* Ends the drain of name (none: COORD_OK all the same; an unknown host: COORD_ENOTFOUND). */
int coord_host_undrain(coordinator_t *c, const char *name, char *err, size_t errlen);

/* Daemon: benchmarks model (NULL or "" = "lenet5") on dataset (NULL or "" = the data set
 * the catalog trains the model on) on the named hosts (NULL/0 = every host that is not down) with the spec's
 * other defaults, as the pre-flight does
 * (coordinator/preflight.h), and returns at once: *out {"model", "hosts": [names],
 * "steps", "started"}; each host's "benchmark" in coord_cluster shows it running, then
 * its result, and its state follows. COORD_EINVAL with err for an unknown model or host,
 * or a host that is down; COORD_ESTATE when a round already runs, or on a client handle;
 * COORD_EUNAVAIL when the tick did not answer within 10 s. */
int coord_cluster_benchmark(coordinator_t *c, const char *model, const char *dataset, const char *const *hosts,
                            int nhosts, json_t **out, char *err, size_t errlen);

/* ---- the catalog (models.c; common/catalog.h) ----------------------------------------------
 * Nothing here touches Redis: the catalog is the process's. */

/* {"models": [Model]}: every model of the catalog, built-ins first. A Model is {"name",
 * "title", "source" ("builtin", "onnx", "uploaded"), "input": {"channels", "height", "width"},
 * "classes", "layers", "parameters", "buffers", "flops_per_sample" (forward),
 * "memory": {"model_bytes", "bytes_per_sample"} (common/memest.h), "dataset" (or null)}. */
int coord_models(coordinator_t *c, json_t **out);
/* One Model; COORD_ENOTFOUND when the catalog has no model of that name. A Model also has
 * "sha256": an uploaded model's content hash, null for any other. */
int coord_model(coordinator_t *c, const char *name, json_t **out);
/* PUT /api/v1/models/{name} (modelstore.c): stores len bytes of an ONNX file as the uploaded
 * model name, validated by `pacer-worker --check-onnx`. COORD_OK with *out the summary
 * {"name", "title", "source": "uploaded", "sha256", "input": [C, H, W], "classes",
 * "layers", "parameters", "buffers", "flops_per_sample", "bytes"} and *created 1 (new) or
 * 0 (replaced); COORD_EINVAL not an ONNX file (or a bad name); COORD_EDATA the importer
 * refuses it (err: its message, naming the node and operator); COORD_ESTATE a built-in
 * name, one a queued or running job uses, or one another upload stored after this request
 * began (since: its clock_mono_s(); 0 unknown): two uploads of a new name at once, one
 * wins, and a request never replaces what it could not have seen; COORD_ELIMIT the
 * catalog's uploads at CATALOG_ADDED_MAX, or by's models at their max_models (a new name);
 * COORD_EUNAVAIL Redis; COORD_EINTERNAL. A new model is by's (KEY_MODEL_OWNERS, written
 * under the store's lock; by NULL or without a user: no owner); a replacement keeps its
 * owner; *out has it as "owner". */
int coord_model_put(coordinator_t *c, const char *name, const void *data, size_t len, const coord_caller_t *by,
                    double since, json_t **out, int *created, char *err, size_t errlen);
/* DELETE /api/v1/models/{name}: COORD_OK, COORD_ENOTFOUND, COORD_ESTATE (built in, or in
 * use by a queued or running job; err says which), COORD_EUNAVAIL. */
int coord_model_delete(coordinator_t *c, const char *name, char *err, size_t errlen);
/* {"datasets": [Dataset], "data_roots": [dirs], "refused": [...]}: every data set of the
 * catalog, the built-ins and the image folders and .npz files under the data roots (synced
 * first: coord_userdata_sync), with its "name", "title", "source", "format", "input"
 * (null for an image folder), "classes", "train_samples", "test_samples", "augment",
 * "default_path" (what a spec without dataset.path reads; a user's: its folder or file),
 * "present" and "path": where this machine has its files (the default path, else DIR
 * under the first data root holding them), or null. "refused": {"name", "format", "path",
 * "error"} for what the roots hold that cannot be offered, and why. */
int coord_datasets(coordinator_t *c, json_t **out);
/* Brings the catalog's user data sets in step with the data roots (common/userdata.h's
 * userdata_refresh: a probe only when the roots changed since the last one, logged as
 * "data roots probed: ..."), so that a spec may name one by dataset.name. Called by
 * coord_datasets and before a submitted spec is parsed. refused may be NULL. */
void coord_userdata_sync(coordinator_t *c, json_t *refused);

/* ---- events (for Server-Sent Events) ------------------------------------------------------
 * Events come from Redis streams, so a subscriber misses nothing between two waits and
 * sees events of jobs submitted or run by any process:
 *   {"type": "state", "job", "state", "reason", "time"}      every state change
 *   {"type": "plan", "job", "version", "batches", "source", "time"}   new batch plans
 *   {"type": "metrics", "job", ...the metrics record}          (job subscriptions only)
 * Each event is delivered as {"id": stream id, "event": {...}}. */
typedef struct {
    char job[COORD_ID_MAX]; /* "" = state and plan events of every job */
    char events_id[48];     /* last pacer:events id seen */
    char metrics_id[48];    /* last metrics stream id seen (job subscriptions) */
} coord_cursor_t;

/* Positions cur at "now" for job (NULL or "" = all jobs; an unknown job is
 * COORD_ENOTFOUND). */
int coord_events_open(coordinator_t *c, const char *job, coord_cursor_t *cur);

/* Waits up to timeout_ms (0 = do not wait; capped at 30000) for events after cur, and
 * returns at most max (<= 0: 100) of them as a JSON array (empty on timeout), advancing
 * cur. Blocks one pooled connection while it waits. */
int coord_events_wait(coordinator_t *c, coord_cursor_t *cur, int timeout_ms, int max, json_t **out);

/* ---- users (users.c; common/users.h) -------------------------------------------------------------
 * Records live in Redis (KEY_USERS), a model's uploader in KEY_MODEL_OWNERS, a job's in
 * its hash ("owner"). The daemon's own token is the user "admin" and has no record. */

/* A new user with a new token (into token, at least USER_TOKEN_LEN + 1 bytes; shown once,
 * only its salted hash is stored); *out its public record (users_record_public).
 * expires_in_s 0 = never. COORD_EINVAL bad name; COORD_ESTATE the name exists or is
 * "admin"; COORD_EUNAVAIL. */
int coord_user_add(coordinator_t *c, const char *name, user_role_t role, double expires_in_s, const char *by,
                   char *token, size_t toklen, json_t **out, char *err, size_t errlen);
/* One record: COORD_OK, COORD_ENOTFOUND (also a damaged record), COORD_EUNAVAIL. */
int coord_user_get(coordinator_t *c, const char *name, user_record_t *out);
/* {"users": [public records, each with "limits": the effective ones (users_limits_json)]}. */
int coord_user_list(coordinator_t *c, json_t **out);
/* Removes a user: their token stops working at once, and what they owned (jobs, uploaded
 * models) is owned by "NAME#removed-N" from then on (users_removed_owner), never by a later
 * user of the name; their queue count and fair-share usage go. COORD_ENOTFOUND,
 * COORD_ESTATE ("admin"). */
int coord_user_remove(coordinator_t *c, const char *name, char *err, size_t errlen);
/* A new token for an existing user; the old one stops working (one token per user). */
int coord_user_token_new(coordinator_t *c, const char *name, char *token, size_t toklen, char *err, size_t errlen);
/* PUT /api/v1/users/{name}: sets what u names of user name's record, their fair-share weight
 * (--policy fair) and limits (common/users.h), and answers its public record with the
 * effective limits. COORD_ENOTFOUND (no such user), COORD_ESTATE (admin: no record). */
int coord_user_update(coordinator_t *c, const char *name, const user_update_t *u, json_t **out, char *err,
                      size_t errlen);
/* The limits that bind by (users_limits_effective with the daemon's member defaults; by NULL
 * or without a user: none). COORD_OK, COORD_EUNAVAIL; a user without a record (removed since
 * the request was checked) gets the member defaults. */
int coord_limits_of(coordinator_t *c, const coord_caller_t *by, user_limits_t *out);
/* A job's owner into owner ("" when none is recorded; one that does not fit len reads as
 * "#unknown", never a user's name) and whether the job exists. Owners are at most
 * USER_OWNER_MAX bytes: a user's name, or a removed user's (users_removed_owner). A job's
 * owner is written with the job (coord_submit_spec_by, coord_retry_by). */
int coord_job_owner(coordinator_t *c, const char *id, char *owner, size_t len, int *exists);
/* An uploaded model's owner (owner NULL or "": forget it; coord_model_put and
 * coord_model_delete write it under the store's lock), and the owner read back ("" when
 * none; as coord_job_owner when it does not fit). */
int coord_model_owner_set(coordinator_t *c, const char *name, const char *owner);
int coord_model_owner(coordinator_t *c, const char *name, char *owner, size_t len);
/* {model name: owner} of every uploaded model with a recorded owner. */
int coord_model_owners(coordinator_t *c, json_t **out);
/* Appends {"type": "audit", "user", "role", "method", "path", "target", "status", "time"}
 * to KEY_EVENTS: who changed what, when, and the answer's status. */
int coord_audit(coordinator_t *c, const char *user, const char *role, const char *method, const char *path,
                const char *target, int status);

#endif
