/* daemon/main.c - pacer-coordinator: the job daemon, and a command-line client of the
 * same Redis for scripts and tests.
 *
 *   pacer-coordinator [options]              run the daemon until SIGTERM/SIGINT
 *   pacer-coordinator COMMAND [ARGS] [options]   submit, status, list, cancel, wait, logs,
 *                                                nodes, metrics, cluster
 *
 * Options and commands are tables; --help is printed from them. The client commands
 * call the coordinator.h API on a client handle (coordinator_open), exactly what the
 * HTTP layer calls on the daemon's handle.
 *
 * Exit status of commands: 0 ok; 1 the job ended other than SUCCEEDED (wait) or an
 * internal error; 2 usage, invalid spec, unknown job or a state that does not allow it;
 * 3 wait timed out; 4 Redis unreachable.
 */
#include <errno.h>
#include <ftw.h>
#include <getopt.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auth.h"
#include "clock.h"
#include "clog.h"
#include "coordinator.h"
#include "numarg.h"
#include "policy.h"
#include "server.h"
#include "tls.h"
#include "version.h"

enum {
    O_LISTEN = 1000,
    O_REDIS,
    O_WORKER_REDIS,
    O_STATE_DIR,
    O_HOSTFILE,
    O_WORKER,
    O_MPIRUN,
    O_REDIS_SERVER,
    O_MAX_RESTARTS,
    O_HEARTBEAT,
    O_BACKOFF,
    O_GRACE,
    O_SLURM_DRAIN_DEADLINE,
    O_CKPT_STEPS,
    O_STOP_JOBS,
    O_TIMEOUT,
    O_STATE,
    O_TAIL,
    O_LIMIT,
    O_SINCE,
    O_JSON,
    O_HELP,
    O_VERSION,
    O_TOKEN_FILE,
    O_AUTH_READS,
    O_STATIC_DIR,
    O_HTTP_THREADS,
    O_SSE_MAX,
    O_API_CACHE,
    O_LAUNCHER,
    O_SLURM_MPI,
    O_SLURM_PARTITION,
    O_SLURM_ARGS,
    O_SIM,
    O_SIM_PLATFORMS,
    O_SIM_SLOTS,
    O_PUBLIC_READS,
    O_VIEWERS_GENERATE,
    O_ALLOWED_HOST,
    O_SSE_PER_CLIENT,
    O_CONNS_PER_CLIENT,
    O_HEADER_TIMEOUT,
    O_MAX_MODEL_BYTES,
    O_OVERSUBSCRIBE,
    O_REFUSE_OVERSUB,
    O_POLICY,
    O_FAIR_HALF_LIFE,
    O_PREEMPT_MIN_RUN,
    O_HETERO_MIN_RUN,
    O_HETERO_RESIZE_COST,
    O_HETERO_HYSTERESIS,
    O_HETERO_GROW_OVERHEAD,
    O_DATA_ROOT,
    O_DATA_CACHE,
    O_KEEP_JOBS,
    O_HOST_PROBE,
    O_HOST_MEMORY,
    O_HOST_MEMORY_OF,
    O_KEEP_JOBS_AGE,
    O_PREFLIGHT,
    O_PREFLIGHT_STEPS,
    O_WEBHOOK_HOSTS,
    O_PREFLIGHT_TIMEOUT,
    O_TLS_CERT,
    O_TLS_KEY,
    O_MAX_QUEUED,
    O_MEMBER_MAX_QUEUED,
    O_MEMBER_MAX_SLOTS,
    O_MEMBER_MAX_MODELS,
    O_MEMBER_MAX_PRIORITY,
};

typedef struct {
    const char *name;
    int has_arg;
    const char *arg;
    const char *help;
    int id;
} opt_row_t;

static const opt_row_t OPTIONS[] = {
    {"listen", 1, "ADDR:PORT", "address of the HTTP API (default 127.0.0.1:8080; port 0 = any free port)", O_LISTEN},
    {"token-file", 1, "FILE",
     "API bearer token (default $PACER_TOKEN); required off loopback; every API call "
     "needs it (/healthz and the dashboard's files do not); without one the API is open "
     "to local users and answers only a loopback Host",
     O_TOKEN_FILE},
    {"public-reads", 0, NULL, "with a token: the read-only API endpoints do not need it", O_PUBLIC_READS},
    {"viewers-generate", 0, NULL,
     "every user, viewers included, may generate text from any job (POST /api/v1/jobs/ID/generate, which "
     "spends the cluster's CPU); default: only the job's owner and admins (a viewer's call is 403)",
     O_VIEWERS_GENERATE},
    {"auth-reads", 0, NULL, "reads need the token (the default; kept for older scripts)", O_AUTH_READS},
    {"allowed-host", 1, "NAME",
     "without a token: also answer requests whose Host is NAME (repeatable; a name "
     "a reverse proxy or tunnel uses); others get 421",
     O_ALLOWED_HOST},
    {"tls-cert", 1, "FILE",
     "serve the API, the dashboard and the event streams over HTTPS with this PEM certificate "
     "(chain); needs --tls-key",
     O_TLS_CERT},
    {"tls-key", 1, "FILE", "the certificate's PEM private key (mode 600: refused when group or others may read it)",
     O_TLS_KEY},
    {"static-dir", 1, "DIR", "dashboard files (default: static/ next to this executable, else ./static)", O_STATIC_DIR},
    {"http-threads", 1, "N", "HTTP worker threads (default 4)", O_HTTP_THREADS},
    {"sse-max", 1, "N", "concurrent Server-Sent Events streams (default 64)", O_SSE_MAX},
    {"sse-per-client", 1, "N", "concurrent event streams per client address (default 8; 429 beyond)", O_SSE_PER_CLIENT},
    {"max-conns-per-client", 1, "N",
     "connections one client address may hold (default 32; more are closed at "
     "once)",
     O_CONNS_PER_CLIENT},
    {"header-timeout", 1, "S",
     "close a connection whose request headers are not complete S seconds after it "
     "was opened or its previous request ended, however slowly it sends (default 10)",
     O_HEADER_TIMEOUT},
    {"data-root", 1, "DIR",
     "a job's dataset.path must resolve under DIR (repeatable; default " COORD_DATA_ROOT_DEBIAN
     " and STATE_DIR/data, each from when it exists); others are 400",
     O_DATA_ROOT},
    {"data-cache-dir", 1, "DIR",
     "where workers decode a job's own data set (dataset.format imagefolder, npz) once per host, for "
     "every later job and rank there to map (default STATE_DIR/data-cache)",
     O_DATA_CACHE},
    {"keep-jobs", 1, "N",
     "job history: delete the oldest finished jobs beyond N, with their directories "
     "(default 10000; 0 = keep all)",
     O_KEEP_JOBS},
    {"keep-jobs-age", 1, "AGE",
     "job history: also delete finished jobs that ended longer than AGE ago, with "
     "their directories; seconds, or a number with s, m, h or d (7d) (default 0 = "
     "no age limit)",
     O_KEEP_JOBS_AGE},
    {"host-memory-mb", 1, "MB",
     "refuse (422) a job whose ranks on one host need more memory than MB by the "
     "estimate (model, activations for the largest batch, data sets) (default: "
     "MemTotal with the local launcher; not checked for other launchers)",
     O_HOST_MEMORY},
    {"host-memory-mb-of", 1, "HOST=MB,...",
     "the memory of these hosts (of the launcher's), for the same check: each host "
     "is checked for the ranks by-slot placement puts there, a sharded job's ranks "
     "each for its own share (the others: --host-memory-mb's)",
     O_HOST_MEMORY_OF},
    {"oversubscribe-factor", 1, "X",
     "refuse (422) a job with more ranks than the cluster's slots times X "
     "(default 4; simulated jobs are not counted)",
     O_OVERSUBSCRIBE},
    {"refuse-oversubscribed", 0, NULL,
     "refuse (422) a job with more ranks than the cluster's slots (default: accept it, "
     "with a warning in the answer and on its page, and run it oversubscribed)",
     O_REFUSE_OVERSUB},
    {"policy", 1, "NAME",
     "the scheduling policy: which queued job starts next (coordinator/policy.h): "
     "fifo (the default): arrival order, no backfilling; fair: the spec's priority (high, normal, low), "
     "then fair share between users (decayed slot-seconds over the user's weight, lowest first), "
     "then arrival order, and backfilling of jobs that fit without delaying the head's estimated start; "
     "hetero: fair's admission, then each started job placed on the host classes (hosts grouped by their "
     "measured speed) where it gains most for its model; agnostic: the same with every host alike",
     O_POLICY},
    {"max-queued", 1, "N",
     "jobs the queue may hold, whoever submits them through the API: one more is refused (429) "
     "(default 4096, at most 16384)",
     O_MAX_QUEUED},
    {"member-max-queued", 1, "N",
     "a member's jobs in the queue at once, unless an admin set theirs (PUT /api/v1/users/NAME "
     "{\"max_queued\": N}): one more is refused (429) (default 256; 0 = no limit)",
     O_MEMBER_MAX_QUEUED},
    {"member-max-slots", 1, "N",
     "slots (ranks) a member's running jobs may hold at once, unless an admin set theirs (max_slots): "
     "a job past it waits in the queue (default 0 = no limit)",
     O_MEMBER_MAX_SLOTS},
    {"member-max-models", 1, "N",
     "uploaded models a member may own, unless an admin set theirs (max_models): one more is refused (429) "
     "(default 32, an eighth of the catalog's 256; 0 = no limit)",
     O_MEMBER_MAX_MODELS},
    {"member-max-priority", 1, "P",
     "the highest spec priority a member may submit (low, normal, high), unless an admin set theirs "
     "(max_priority): above it is refused (403) (default normal; admins: high)",
     O_MEMBER_MAX_PRIORITY},
    {"fair-half-life", 1, "T",
     "--policy fair: a user's recorded usage (slot-seconds) halves every T; seconds, or a number with "
     "s, m, h or d (default 1h; 0 = never decays)",
     O_FAIR_HALF_LIFE},
    {"preempt-min-run", 1, "T",
     "--policy fair: a running job may be preempted (stopped, requeued, resumed from its checkpoint) "
     "for a higher-priority one only after running T; seconds, or a number with s, m, h or d "
     "(default 60)",
     O_PREEMPT_MIN_RUN},
    {"hetero-min-run", 1, "T",
     "--policy hetero|agnostic: a running job's hosts do not change (shrunk to admit another, grown "
     "back, moved to other host classes) before it has held them T; seconds, or a number with s, m, h "
     "or d (default 600)",
     O_HETERO_MIN_RUN},
    {"hetero-resize-cost", 1, "T",
     "--policy hetero|agnostic: the progress a resize or a move costs (a restart from the checkpoint), "
     "which its gain over --hetero-min-run must pay back; seconds, or a number with s, m, h or d "
     "(default 30)",
     O_HETERO_RESIZE_COST},
    {"hetero-hysteresis", 1, "F",
     "--policy hetero|agnostic: a move must raise the moved jobs' normalised throughput by "
     "this fraction at least, a grow add this fraction of the job's slots (default 0.05)",
     O_HETERO_HYSTERESIS},
    {"hetero-grow-overhead", 1, "F",
     "--policy hetero|agnostic: the fixed share of a step of a job grown past its ask (a spec's "
     "max_workers), which more ranks do not shrink: the policy weighs a grow by Amdahl's law with it; "
     "0 to 0.99, 0 = linear (default 0.2)",
     O_HETERO_GROW_OVERHEAD},
    {"max-model-bytes", 1, "N",
     "largest ONNX model PUT /api/v1/models/{name} takes, in bytes (default 67108864 = 64 MiB); "
     "larger uploads are 413",
     O_MAX_MODEL_BYTES},
    {"api-cache-ms", 1, "MS", "reuse GET /api/v1/jobs/{id} answers this long (default 500; 0 = off)", O_API_CACHE},
    {"redis", 1, "URL",
     "Redis: redis://host:port[/db] or unix:///path (default $REDIS_URL; daemon without "
     "either: an embedded redis-server on STATE_DIR/redis.sock)",
     O_REDIS},
    {"worker-redis", 1, "URL", "the Redis URL given to workers (default: the coordinator's)", O_WORKER_REDIS},
    {"state-dir", 1, "DIR", "jobs, logs, checkpoints and the embedded Redis (default ./var)", O_STATE_DIR},
    {"launcher", 1, "KIND",
     "how jobs start: local (mpirun here, one slot per CPU), hostfile (mpirun over "
     "--hostfile), slurm (one sbatch job per attempt; needs slurm-client) "
     "(default: hostfile with --hostfile, else local)",
     O_LAUNCHER},
    {"hostfile", 1, "FILE", "Open MPI hostfile for --launcher hostfile", O_HOSTFILE},
    {"slurm-mpi", 1, "HOW",
     "slurm: start ranks with srun --mpi=pmix (pmix) or mpirun in the allocation "
     "(mpirun) (default: pmix when srun --mpi=list has it)",
     O_SLURM_MPI},
    {"slurm-partition", 1, "NAME", "slurm: submit to this partition (default: the cluster's default)",
     O_SLURM_PARTITION},
    {"slurm-drain-deadline", 1, "S",
     "slurm: a node Slurm drains (scontrol update state=drain) is drained here with this deadline for its "
     "jobs to checkpoint and leave (default 300)",
     O_SLURM_DRAIN_DEADLINE},
    {"slurm-args", 1, "OPTS", "slurm: extra sbatch options, blank-separated (e.g. \"--ntasks-per-node=1\")",
     O_SLURM_ARGS},
    {"host-probe", 1, "S",
     "probe a lost host this often until it answers again (default 5); the host list "
     "itself is read again on SIGHUP or POST /api/v1/cluster/reload",
     O_HOST_PROBE},
    {"preflight", 1, "WHEN",
     "benchmark the hosts before a job's first launch: auto (when a usable host of two "
     "or more has no profile for the job's model), always, off (default auto); "
     "POST /api/v1/cluster/benchmark runs one on demand",
     O_PREFLIGHT},
    {"preflight-steps", 1, "N", "timed steps of a host's benchmark (1 to 1000, default 8)", O_PREFLIGHT_STEPS},
    {"webhook-hosts", 1, "LIST",
     "the hosts webhooks may call, comma-separated, or * (default): any host, connected to at public addresses "
     "only (a loopback, private, link-local, unspecified or multicast address, however spelled or resolved, "
     "is refused); a host the list names is called at whatever address it resolves to",
     O_WEBHOOK_HOSTS},
    {"preflight-timeout", 1, "S", "a benchmark still running after S seconds fails its host (default 120)",
     O_PREFLIGHT_TIMEOUT},
    {"worker", 1, "PATH", "pacer-worker binary (default: next to this executable)", O_WORKER},
    {"sim", 1, "PATH",
     "pacer-sim, which runs the jobs whose spec says simulate.enabled on a simulated "
     "cluster (default: next to this executable)",
     O_SIM},
    {"sim-platforms", 1, "DIR",
     "the only directory whose platform files a simulated job may name "
     "(default: ../sim/platforms from this executable, else ./sim/platforms)",
     O_SIM_PLATFORMS},
    {"sim-slots", 1, "N", "simulated jobs at a time (default 1; each is one process here)", O_SIM_SLOTS},
    {"mpirun", 1, "PATH", "mpirun binary (default mpirun)", O_MPIRUN},
    {"redis-server", 1, "PATH", "redis-server binary for the embedded Redis (default redis-server)", O_REDIS_SERVER},
    {"max-restarts", 1, "N", "restarts of a failing job before it is FAILED (default 3)", O_MAX_RESTARTS},
    {"heartbeat-timeout", 1, "S", "restart a job whose ranks are silent this long (default 60)", O_HEARTBEAT},
    {"restart-backoff", 1, "S", "first restart delay, doubling each time (default 1)", O_BACKOFF},
    {"kill-grace", 1, "S", "SIGTERM to SIGKILL, and ranks outliving mpirun to their kill (default 5)", O_GRACE},
    {"checkpoint-steps", 1, "N", "checkpoint period for specs that set none (default 50)", O_CKPT_STEPS},
    {"stop-jobs-on-exit", 0, NULL, "stop running jobs when the daemon exits (they resume at its next start)",
     O_STOP_JOBS},
    {"timeout", 1, "S", "wait: give up after S seconds (default 600)", O_TIMEOUT},
    {"state", 1, "STATE", "list: only jobs in STATE (QUEUED, RUNNING, SUCCEEDED, ...)", O_STATE},
    {"tail", 1, "N", "logs: the last N lines (default 50)", O_TAIL},
    {"limit", 1, "N", "list, metrics: at most N entries", O_LIMIT},
    {"since", 1, "ID", "metrics: entries after this stream id", O_SINCE},
    {"json", 0, NULL, "list: print JSON instead of a table", O_JSON},
    {"help", 0, NULL, "this text", O_HELP},
    {"version", 0, NULL, "print the version", O_VERSION},
};
#define NOPTIONS (sizeof OPTIONS / sizeof OPTIONS[0])

typedef struct {
    coord_config_t cfg;
    http_config_t http;
    const char *allowed_hosts[HTTP_ALLOWED_HOSTS_MAX];
    const char *data_roots[COORD_DATA_ROOTS_MAX];
    char token[AUTH_TOKEN_MAX];
    double timeout_s;
    const char *state;
    long tail, limit;
    const char *since;
    int json;
    const char *token_file, *tls_cert, *tls_key; /* read in load_secrets, daemon only */
} cli_t;

/* Where the options that only store their value put it, as Redis's config table does: an
 * argument (STR), a flag (FLAG), a number (INT, LONG, DBL, SIZE: parse_num, at least 0;
 * with hi > 0 a value outside [lo, hi] is refused by name, never replaced) or a duration
 * (DUR: parse_duration).
 * The options that check more (--data-root, --policy, ...) are the cases of apply_option.
 *
 * Every numeric option is at most NUM_OPT_MAX: the integer ones are converted to int or
 * long, which an out-of-range double must never reach (1e300 would be undefined). */
#define NUM_OPT_MAX 1e9
typedef enum { SET_STR, SET_FLAG, SET_INT, SET_LONG, SET_DBL, SET_SIZE, SET_DUR } set_kind_t;

static const struct {
    int id;
    set_kind_t kind;
    size_t off; /* in cli_t */
    double lo, hi;
} SETTERS[] = {
    {O_LISTEN, SET_STR, offsetof(cli_t, cfg.listen), 0, 0},
    {O_REDIS, SET_STR, offsetof(cli_t, cfg.redis_url), 0, 0},
    {O_WORKER_REDIS, SET_STR, offsetof(cli_t, cfg.worker_redis_url), 0, 0},
    {O_STATE_DIR, SET_STR, offsetof(cli_t, cfg.state_dir), 0, 0},
    {O_HOSTFILE, SET_STR, offsetof(cli_t, cfg.hostfile), 0, 0},
    {O_LAUNCHER, SET_STR, offsetof(cli_t, cfg.launcher), 0, 0},
    {O_PREFLIGHT, SET_STR, offsetof(cli_t, cfg.preflight), 0, 0},
    {O_SLURM_MPI, SET_STR, offsetof(cli_t, cfg.slurm_mpi), 0, 0},
    {O_SLURM_PARTITION, SET_STR, offsetof(cli_t, cfg.slurm_partition), 0, 0},
    {O_SLURM_ARGS, SET_STR, offsetof(cli_t, cfg.slurm_args), 0, 0},
    {O_WORKER, SET_STR, offsetof(cli_t, cfg.worker), 0, 0},
    {O_SIM, SET_STR, offsetof(cli_t, cfg.sim), 0, 0},
    {O_SIM_PLATFORMS, SET_STR, offsetof(cli_t, cfg.sim_platforms), 0, 0},
    {O_MPIRUN, SET_STR, offsetof(cli_t, cfg.mpirun), 0, 0},
    {O_REDIS_SERVER, SET_STR, offsetof(cli_t, cfg.redis_server), 0, 0},
    {O_DATA_CACHE, SET_STR, offsetof(cli_t, cfg.data_cache_dir), 0, 0},
    {O_STATE, SET_STR, offsetof(cli_t, state), 0, 0},
    {O_SINCE, SET_STR, offsetof(cli_t, since), 0, 0},
    {O_TOKEN_FILE, SET_STR, offsetof(cli_t, token_file), 0, 0},
    {O_TLS_CERT, SET_STR, offsetof(cli_t, tls_cert), 0, 0},
    {O_TLS_KEY, SET_STR, offsetof(cli_t, tls_key), 0, 0},
    {O_STATIC_DIR, SET_STR, offsetof(cli_t, http.static_dir), 0, 0},
    {O_STOP_JOBS, SET_FLAG, offsetof(cli_t, cfg.stop_jobs_on_exit), 0, 0},
    {O_REFUSE_OVERSUB, SET_FLAG, offsetof(cli_t, cfg.refuse_oversubscribed), 0, 0},
    {O_JSON, SET_FLAG, offsetof(cli_t, json), 0, 0},
    {O_PUBLIC_READS, SET_FLAG, offsetof(cli_t, http.public_reads), 0, 0},
    {O_VIEWERS_GENERATE, SET_FLAG, offsetof(cli_t, http.viewers_generate), 0, 0},
    {O_PREEMPT_MIN_RUN, SET_DUR, offsetof(cli_t, cfg.preempt_min_run_s), 0, 0},
    {O_FAIR_HALF_LIFE, SET_DUR, offsetof(cli_t, cfg.fair_half_life_s), 0, 0},
    {O_HETERO_MIN_RUN, SET_DUR, offsetof(cli_t, cfg.hetero_min_run_s), 0, 0},
    {O_HETERO_RESIZE_COST, SET_DUR, offsetof(cli_t, cfg.hetero_resize_cost_s), 0, 0},
    {O_HETERO_HYSTERESIS, SET_DBL, offsetof(cli_t, cfg.hetero_hysteresis), 0, 0},
    {O_KEEP_JOBS_AGE, SET_DUR, offsetof(cli_t, cfg.keep_jobs_age_s), 0, 0},
    {O_MAX_RESTARTS, SET_INT, offsetof(cli_t, cfg.max_restarts), 0, 0},
    {O_HEARTBEAT, SET_DBL, offsetof(cli_t, cfg.heartbeat_timeout_s), 0, 0},
    {O_BACKOFF, SET_DBL, offsetof(cli_t, cfg.restart_backoff_s), 0, 0},
    {O_GRACE, SET_DBL, offsetof(cli_t, cfg.kill_grace_s), 0, 0},
    {O_SLURM_DRAIN_DEADLINE, SET_DUR, offsetof(cli_t, cfg.slurm_drain_deadline_s), 0, 0},
    {O_CKPT_STEPS, SET_LONG, offsetof(cli_t, cfg.default_checkpoint_steps), 0, 0},
    {O_TIMEOUT, SET_DBL, offsetof(cli_t, timeout_s), 0, 0},
    {O_TAIL, SET_LONG, offsetof(cli_t, tail), 0, 0},
    {O_LIMIT, SET_LONG, offsetof(cli_t, limit), 0, 0},
    {O_HTTP_THREADS, SET_INT, offsetof(cli_t, http.threads), 0, 0},
    {O_SSE_MAX, SET_INT, offsetof(cli_t, http.sse_max), 0, 0},
    {O_SSE_PER_CLIENT, SET_INT, offsetof(cli_t, http.sse_per_client), 0, 0},
    {O_KEEP_JOBS, SET_LONG, offsetof(cli_t, cfg.keep_jobs), 0, 0},
    {O_MAX_QUEUED, SET_LONG, offsetof(cli_t, cfg.max_queued), 1, COORD_QUEUE_MAX},
    {O_MEMBER_MAX_QUEUED, SET_LONG, offsetof(cli_t, cfg.member.max_queued), 0, USER_LIMIT_MAX},
    {O_MEMBER_MAX_SLOTS, SET_LONG, offsetof(cli_t, cfg.member.max_slots), 0, USER_LIMIT_MAX},
    {O_MEMBER_MAX_MODELS, SET_LONG, offsetof(cli_t, cfg.member.max_models), 0, USER_LIMIT_MAX},
    {O_CONNS_PER_CLIENT, SET_INT, offsetof(cli_t, http.conns_per_client), 0, 0},
    {O_HEADER_TIMEOUT, SET_INT, offsetof(cli_t, http.header_timeout_s), 0, 0},
    {O_API_CACHE, SET_INT, offsetof(cli_t, http.cache_ms), 0, 0},
    {O_MAX_MODEL_BYTES, SET_SIZE, offsetof(cli_t, http.model_max), 1, NUM_OPT_MAX},
    {O_SIM_SLOTS, SET_INT, offsetof(cli_t, cfg.sim_slots), 1, NUM_OPT_MAX},
    {O_HOST_PROBE, SET_DBL, offsetof(cli_t, cfg.host_probe_s), 0, 0},
    {O_HOST_MEMORY, SET_DBL, offsetof(cli_t, cfg.host_memory_mb), 0, 0},
    {O_HOST_MEMORY_OF, SET_STR, offsetof(cli_t, cfg.host_memory_of), 0, 0},
    {O_PREFLIGHT_STEPS, SET_INT, offsetof(cli_t, cfg.preflight_steps), 1, 1000},
    {O_WEBHOOK_HOSTS, SET_STR, offsetof(cli_t, cfg.webhook_hosts), 0, 0},
    {O_PREFLIGHT_TIMEOUT, SET_DBL, offsetof(cli_t, cfg.preflight_timeout_s), 0, 0},
};
#define NSETTERS (sizeof SETTERS / sizeof SETTERS[0])

typedef int (*command_fn)(coordinator_t *c, char **args, const cli_t *o);

typedef struct {
    const char *name;
    int nargs;
    const char *args;
    const char *help;
    command_fn fn;
} command_t;

static int cmd_submit(coordinator_t *c, char **args, const cli_t *o);
static int cmd_status(coordinator_t *c, char **args, const cli_t *o);
static int cmd_list(coordinator_t *c, char **args, const cli_t *o);
static int cmd_cancel(coordinator_t *c, char **args, const cli_t *o);
static int cmd_wait(coordinator_t *c, char **args, const cli_t *o);
static int cmd_logs(coordinator_t *c, char **args, const cli_t *o);
static int cmd_nodes(coordinator_t *c, char **args, const cli_t *o);
static int cmd_metrics(coordinator_t *c, char **args, const cli_t *o);
static int cmd_cluster(coordinator_t *c, char **args, const cli_t *o);

static const command_t COMMANDS[] = {
    {"submit", 1, "SPEC.json|-", "validate and queue a job; prints its id", cmd_submit},
    {"status", 1, "ID", "the job as JSON", cmd_status},
    {"list", 0, "", "jobs, newest first (--state, --limit, --json)", cmd_list},
    {"cancel", 1, "ID", "cancel a queued or running job", cmd_cancel},
    {"wait", 1, "ID", "wait until the job ends (--timeout); exit 0 only if it SUCCEEDED", cmd_wait},
    {"logs", 1, "ID", "the end of the job's log (--tail)", cmd_logs},
    {"nodes", 1, "ID", "per-rank profile and staleness as JSON", cmd_nodes},
    {"metrics", 1, "ID", "metrics records as JSON (--since, --limit)", cmd_metrics},
    {"cluster", 0, "", "coordinator, queue and profiles as JSON", cmd_cluster},
};
#define NCOMMANDS (sizeof COMMANDS / sizeof COMMANDS[0])

static void usage(FILE *f)
{
    fprintf(f, "usage: pacer-coordinator [options]                 run the job daemon\n"
               "       pacer-coordinator COMMAND [ARGS] [options]  talk to its Redis\n\ncommands:\n");
    for (size_t i = 0; i < NCOMMANDS; i++) {
        char head[64];
        snprintf(head, sizeof head, "%s %s", COMMANDS[i].name, COMMANDS[i].args);
        fprintf(f, "  %-24s %s\n", head, COMMANDS[i].help);
    }
    fprintf(f, "\noptions:\n");
    for (size_t i = 0; i < NOPTIONS; i++) {
        char head[64];
        snprintf(head, sizeof head, "--%s%s%s", OPTIONS[i].name, OPTIONS[i].arg ? " " : "",
                 OPTIONS[i].arg ? OPTIONS[i].arg : "");
        fprintf(f, "  %-24s %s\n", head, OPTIONS[i].help);
    }
    fprintf(f, "\nCommand exit status: 0 ok, 1 job not SUCCEEDED (wait) or internal error, 2 usage,\n"
               "invalid spec or unknown job, 3 wait timed out, 4 Redis unreachable.\n");
}

static int exit_for(int code)
{
    switch (code) {
    case COORD_OK: return 0;
    case COORD_EINVAL:
    case COORD_ENOTFOUND:
    case COORD_ESTATE: return 2;
    case COORD_EUNAVAIL: return 4;
    case COORD_ENOFIT:
    case COORD_EDATA: return 2;
    default: return 1;
    }
}

static int report(const char *what, int code)
{
    fprintf(stderr, "pacer-coordinator: %s: %s\n", what, coord_strerror(code));
    return exit_for(code);
}

static int print_json(json_t *j)
{
    /* 15 digits: unix times with milliseconds print as stored, not as 1715000000.1230001. */
    int rc = json_dumpf(j, stdout, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_REAL_PRECISION(15));
    fputc('\n', stdout);
    json_decref(j);
    return rc == 0 ? 0 : 1;
}

static char *read_all(FILE *f, size_t max)
{
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    if (!buf) return NULL;
    for (;;) {
        if (n + 1 >= cap) {
            if (cap > max) {
                free(buf);
                errno = EFBIG;
                return NULL;
            }
            char *b = realloc(buf, cap * 2);
            if (!b) {
                free(buf);
                return NULL;
            }
            buf = b;
            cap *= 2;
        }
        size_t k = fread(buf + n, 1, cap - 1 - n, f);
        n += k;
        if (k == 0) break;
    }
    buf[n] = 0;
    return buf;
}

static int cmd_submit(coordinator_t *c, char **args, const cli_t *o)
{
    FILE *f = strcmp(args[0], "-") == 0 ? stdin : fopen(args[0], "r");
    if (!f) {
        fprintf(stderr, "pacer-coordinator: %s: %s\n", args[0], strerror(errno));
        return 2;
    }
    char *text = read_all(f, COORD_SPEC_MAX);
    if (f != stdin) fclose(f);
    if (!text) {
        fprintf(stderr, "pacer-coordinator: %s: %s\n", args[0], strerror(errno));
        return 2;
    }
    char id[COORD_ID_MAX], err[1024] = "";
    int code = coord_submit(c, text, id, sizeof id, err, sizeof err);
    free(text);
    if (code != COORD_OK) {
        fprintf(stderr, "pacer-coordinator: %s: %s\n", args[0], err[0] ? err : coord_strerror(code));
        return exit_for(code);
    }
    printf("%s\n", id);
    return 0;
}

static int cmd_status(coordinator_t *c, char **args, const cli_t *o)
{
    json_t *j = NULL;
    int code = coord_get(c, args[0], &j);
    if (code != COORD_OK) return report(args[0], code);
    return print_json(j);
}

static int cmd_list(coordinator_t *c, char **args, const cli_t *o)
{
    json_t *j = NULL;
    int code = coord_list(c, o->state, 0, o->limit, &j);
    if (code != COORD_OK) return report("list", code);
    if (o->json) return print_json(j);
    size_t i;
    json_t *job;
    printf("%-10s %-11s %-20s %-8s %s\n", "ID", "STATE", "NAME", "RESTARTS", "REASON");
    json_array_foreach(json_object_get(j, "jobs"), i, job)
    {
        printf("%-10s %-11s %-20s %-8lld %s\n", json_string_value(json_object_get(job, "id")),
               json_string_value(json_object_get(job, "state")), json_string_value(json_object_get(job, "name")),
               (long long)json_integer_value(json_object_get(job, "restarts")),
               json_string_value(json_object_get(job, "reason")));
    }
    json_decref(j);
    return 0;
}

static int cmd_cancel(coordinator_t *c, char **args, const cli_t *o)
{
    char err[512] = "";
    int code = coord_cancel(c, args[0], err, sizeof err);
    if (code != COORD_OK) {
        fprintf(stderr, "pacer-coordinator: %s\n", err[0] ? err : coord_strerror(code));
        return exit_for(code);
    }
    printf("%s: cancel requested\n", args[0]);
    return 0;
}

static int cmd_wait(coordinator_t *c, char **args, const cli_t *o)
{
    double deadline = clock_mono_s() + o->timeout_s;
    int unavailable_logged = 0;
    for (;;) {
        json_t *j = NULL;
        int code = coord_get(c, args[0], &j);
        if (code == COORD_EUNAVAIL) {
            /* Redis may be restarting: keep waiting until the deadline. */
            if (!unavailable_logged++) fprintf(stderr, "pacer-coordinator: Redis unreachable; still waiting\n");
        } else if (code != COORD_OK) {
            return report(args[0], code);
        } else {
            const char *st = json_string_value(json_object_get(j, "state"));
            if (st && (strcmp(st, "SUCCEEDED") == 0 || strcmp(st, "FAILED") == 0 || strcmp(st, "CANCELLED") == 0)) {
                const char *reason = json_string_value(json_object_get(j, "reason"));
                printf("%s %s%s%s\n", args[0], st, reason && *reason ? ": " : "", reason ? reason : "");
                int ok = strcmp(st, "SUCCEEDED") == 0;
                json_decref(j);
                return ok ? 0 : 1;
            }
            json_decref(j);
        }
        if (clock_mono_s() >= deadline) {
            fprintf(stderr, "pacer-coordinator: %s did not finish within %.0f s\n", args[0], o->timeout_s);
            return 3;
        }
        /* Poll with a deadline: a few round trips per second are nothing for Redis. */
        clock_sleep_s(0.2);
    }
}

static int cmd_logs(coordinator_t *c, char **args, const cli_t *o)
{
    json_t *j = NULL;
    int code = coord_logs(c, args[0], 0, 0, o->tail > 0 ? o->tail : 50, &j);
    if (code != COORD_OK) return report(args[0], code);
    fputs(json_string_value(json_object_get(j, "text")), stdout);
    json_decref(j);
    return 0;
}

static int cmd_nodes(coordinator_t *c, char **args, const cli_t *o)
{
    json_t *j = NULL;
    int code = coord_nodes(c, args[0], &j);
    if (code != COORD_OK) return report(args[0], code);
    return print_json(j);
}

static int cmd_metrics(coordinator_t *c, char **args, const cli_t *o)
{
    json_t *j = NULL;
    int code = coord_metrics(c, args[0], o->since, o->limit, &j);
    if (code != COORD_OK) return report(args[0], code);
    return print_json(j);
}

static int cmd_cluster(coordinator_t *c, char **args, const cli_t *o)
{
    json_t *j = NULL;
    int code = coord_cluster(c, &j);
    if (code != COORD_OK) return report("cluster", code);
    return print_json(j);
}

static int parse_num(const char *opt, const char *s, double min, double *out)
{
    if (numarg_double(s, min, NUM_OPT_MAX, out) == 0) return 0;
    fprintf(stderr, "pacer-coordinator: --%s: '%s' is not a number between %g and %.0f\n", opt, s, min, NUM_OPT_MAX);
    return -1;
}

/* A duration: seconds, or a number with a unit s, m, h, d ("7d"), in [0, NUM_OPT_MAX] s. */
static int parse_duration(const char *opt, const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    double unit = 1;
    if (end != s && *end && !end[1]) {
        unit = *end == 's' ? 1 : *end == 'm' ? 60 : *end == 'h' ? 3600 : *end == 'd' ? 86400 : 0;
        if (unit > 0) end++;
    }
    if (errno || *end || end == s || !(v >= 0 && v * unit <= NUM_OPT_MAX)) {
        fprintf(stderr,
                "pacer-coordinator: --%s: '%s' is not a duration (seconds, or a number with s, m, h or d) "
                "between 0 and %.0f s\n",
                opt, s, NUM_OPT_MAX);
        return -1;
    }
    *out = v * unit;
    return 0;
}

/* ---- the state directory's permissions ------------------------------------------------- */

/* The state dir holds job specs, logs, checkpoints, uploaded models and Redis's
 * append-only files: readable by other local users, they would sidestep the API token
 * and the 0700 Redis socket. main sets umask 077, so whatever the daemon, Redis and the
 * jobs create from now on is 0600 / 0700; this takes group and other access away from
 * what an older version (or a wider umask) left there. Owned files and folders only, no
 * symbolic link followed, no other file system entered; the data sets a user put under
 * STATE/data are theirs and are left as they are. */
static int tighten_count, tighten_failed; /* nftw's callback has no argument of ours */

static int tighten_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    if (flag == FTW_D && ftw->level == 1 && strcmp(path + ftw->base, "data") == 0) return FTW_SKIP_SUBTREE;
    if ((flag != FTW_F && flag != FTW_D) || st->st_uid != geteuid() || !(st->st_mode & 077)) return FTW_CONTINUE;
    if (chmod(path, st->st_mode & 07700) == 0) tighten_count++;
    else tighten_failed++;
    return FTW_CONTINUE;
}

static void state_dir_tighten(const char *state_dir)
{
    tighten_count = tighten_failed = 0;
    if (nftw(state_dir, tighten_one, 16, FTW_PHYS | FTW_MOUNT | FTW_ACTIONRETVAL) != 0 && errno != ENOENT)
        clog_printf("state dir %s: cannot walk it to take group and other access away: %s", state_dir, strerror(errno));
    if (tighten_count || tighten_failed)
        clog_printf("state dir %s: took group and other access away from %d files and folders (now owner only, as "
                    "the daemon creates them)%s",
                    state_dir, tighten_count, tighten_failed ? "; some could not be changed" : "");
}

static int run_daemon(const cli_t *o)
{
    /* Signals are taken synchronously by this thread (sigwait); every thread the
     * coordinator starts inherits the mask, and children get it reset (launch.c). */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, NULL);

    /* A bad --listen, or a non-loopback address without a token, is refused before
     * anything starts. */
    http_config_t hc = o->http;
    hc.listen = o->cfg.listen;
    char err[1024] = "";
    if (http_check_config(&hc, err, sizeof err) != 0) {
        fprintf(stderr, "pacer-coordinator: %s\n", err);
        return 2;
    }
    if (o->cfg.state_dir && *o->cfg.state_dir) state_dir_tighten(o->cfg.state_dir);
    coordinator_t *c = NULL;
    if (coordinator_start(&o->cfg, &c, err, sizeof err) != COORD_OK) {
        fprintf(stderr, "pacer-coordinator: %s\n", err);
        return 1;
    }
    hc.listen = coordinator_listen(c);
    http_server_t *http = NULL;
    if (http_start(c, &hc, &http, err, sizeof err) != 0) {
        fprintf(stderr, "pacer-coordinator: %s\n", err);
        coordinator_stop(c);
        return 1;
    }
    for (;;) {
        int sig = 0;
        if (sigwait(&set, &sig) != 0) continue;
        if (sig == SIGHUP) {
            /* The host list again (hostfile, sinfo); the coordinator logs what changed. */
            json_t *res = NULL;
            char rerr[512] = "";
            if (coord_cluster_reload(c, &res, rerr, sizeof rerr) != COORD_OK)
                fprintf(stderr, "pacer-coordinator: SIGHUP: host list not reloaded: %s\n", rerr);
            json_decref(res);
            continue;
        }
        break;
    }
    /* The HTTP layer calls the coordinator: it stops first. */
    http_stop(http);
    coordinator_stop(c);
    return 0;
}

/* Stores optarg as SETTERS[row] says. 0, or 2 (the exit status) for a bad value. */
static int apply_setter(cli_t *o, size_t row, const char *name)
{
    char *field = (char *)o + SETTERS[row].off;
    double v = 0;
    switch (SETTERS[row].kind) {
    case SET_STR: *(const char **)field = optarg; return 0;
    case SET_FLAG: *(int *)field = 1; return 0;
    case SET_DUR:
        if (parse_duration(name, optarg, &v) != 0) return 2;
        *(double *)field = v;
        return 0;
    default: break;
    }
    if (parse_num(name, optarg, 0, &v) != 0) return 2;
    if (SETTERS[row].hi > 0 && !(v >= SETTERS[row].lo && v <= SETTERS[row].hi)) {
        fprintf(stderr, "pacer-coordinator: --%s: '%s' is not between %.0f and %.0f\n", name, optarg, SETTERS[row].lo,
                SETTERS[row].hi);
        return 2;
    }
    switch (SETTERS[row].kind) {
    case SET_INT: *(int *)field = (int)v; break;
    case SET_LONG: *(long *)field = (long)v; break;
    case SET_SIZE: *(size_t *)field = (size_t)v; break;
    default: *(double *)field = v; break;
    }
    return 0;
}

/* The options that are more than a store (limits, a parse of their own, --help).
 * Returns -1 to go on, else the exit status. */
static int apply_option(cli_t *o, int ch, const char *name)
{
    double v;
    switch (ch) {
    case O_DATA_ROOT:
        if (o->cfg.ndata_roots == COORD_DATA_ROOTS_MAX) {
            fprintf(stderr, "pacer-coordinator: --data-root: at most %d\n", COORD_DATA_ROOTS_MAX);
            return 2;
        }
        o->data_roots[o->cfg.ndata_roots++] = optarg;
        o->cfg.data_roots = o->data_roots;
        return -1;
    case O_OVERSUBSCRIBE:
        if (parse_num(name, optarg, 1, &v) != 0) return 2;
        if (v > COORD_OVERSUBSCRIBE_MAX) {
            fprintf(stderr, "pacer-coordinator: --oversubscribe-factor: at most %g\n", COORD_OVERSUBSCRIBE_MAX);
            return 2;
        }
        o->cfg.oversubscribe = v;
        return -1;
    case O_HETERO_GROW_OVERHEAD:
        /* a share of a step: below 1 (policy_grow_factor) */
        if (numarg_double(optarg, 0, 0.99, &v) != 0) {
            fprintf(stderr, "pacer-coordinator: --%s: '%s' is not a number between 0 and 0.99\n", name, optarg);
            return 2;
        }
        o->cfg.hetero_grow_overhead = v;
        return -1;
    case O_POLICY: {
        policy_kind_t k;
        char perr[160];
        if (policy_parse(optarg, &k, perr, sizeof perr) != 0) {
            fprintf(stderr, "pacer-coordinator: %s\n", perr);
            return 2;
        }
        o->cfg.policy = (int)k;
        return -1;
    }
    case O_MEMBER_MAX_PRIORITY:
        if (users_priority_parse(optarg, &o->cfg.member.max_priority) != 0) {
            fprintf(stderr, "pacer-coordinator: --member-max-priority: '%.40s' is not low, normal or high\n", optarg);
            return 2;
        }
        return -1;
    case O_AUTH_READS: return -1; /* the default now */
    case O_ALLOWED_HOST:
        if (o->http.nallowed_hosts == HTTP_ALLOWED_HOSTS_MAX) {
            fprintf(stderr, "pacer-coordinator: --allowed-host: at most %d\n", HTTP_ALLOWED_HOSTS_MAX);
            return 2;
        }
        o->allowed_hosts[o->http.nallowed_hosts++] = optarg;
        o->http.allowed_hosts = o->allowed_hosts;
        return -1;
    case O_HELP: usage(stdout); return 0;
    case O_VERSION: printf("pacer-coordinator %s\n", PACER_VERSION); return 0;
    default: usage(stderr); return 2;
    }
}

/* getopt_long over OPTIONS into o. Returns -1 to go on, else the exit status. */
static int parse_options(int argc, char **argv, cli_t *o)
{
    struct option longopts[NOPTIONS + 1];
    for (size_t i = 0; i < NOPTIONS; i++) {
        longopts[i].name = OPTIONS[i].name;
        longopts[i].has_arg = OPTIONS[i].has_arg ? required_argument : no_argument;
        longopts[i].flag = NULL;
        longopts[i].val = OPTIONS[i].id;
    }
    memset(&longopts[NOPTIONS], 0, sizeof longopts[0]);
    int ch;
    while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        const char *name = "";
        for (size_t i = 0; i < NOPTIONS; i++)
            if (OPTIONS[i].id == ch) name = OPTIONS[i].name;
        size_t row = 0;
        while (row < NSETTERS && SETTERS[row].id != ch) row++;
        int rc = row < NSETTERS ? (apply_setter(o, row, name) ? 2 : -1) : apply_option(o, ch, name);
        if (rc >= 0) return rc;
    }
    return -1;
}

/* The daemon's secrets: the API token (--token-file, else $PACER_TOKEN; none = open on
 * loopback) and the HTTPS pair, read now so that a bad one is refused before anything
 * starts (tls.h). 0, or 2 (the exit status) with the reason printed. */
static int load_secrets(cli_t *o, http_tls_t *tls)
{
    char terr[512];
    const char *env = getenv("PACER_TOKEN");
    if (o->token_file) {
        if (auth_token_load(o->token_file, o->token, sizeof o->token, terr, sizeof terr) != 0) {
            fprintf(stderr, "pacer-coordinator: %s\n", terr);
            return 2;
        }
        o->http.token = o->token;
    } else if (env && *env) {
        if (strlen(env) >= sizeof o->token) {
            fprintf(stderr, "pacer-coordinator: PACER_TOKEN: longer than %zu bytes\n", sizeof o->token - 1);
            return 2;
        }
        memcpy(o->token, env, strlen(env) + 1);
        o->http.token = o->token;
    }
    /* Jobs inherit the daemon's environment (mpirun passes it to local ranks; sbatch
     * hands it to slurmctld, which keeps it with the job): the API token stays here. */
    unsetenv("PACER_TOKEN");
    /* The same for a Redis password in $REDIS_URL (read in main): workers get theirs
     * from a file only the owner can read (coordinator/daemon.c). */
    unsetenv("REDIS_URL");
    if (http_tls_load(o->tls_cert, o->tls_key, tls, terr, sizeof terr) != 0) {
        fprintf(stderr, "pacer-coordinator: %s\n", terr);
        return 2;
    }
    o->http.tls_cert_pem = tls->cert;
    o->http.tls_key_pem = tls->key;
    return 0;
}

/* A client command (COMMANDS) on the coordinator's Redis: argv[0] is its name. */
static int run_command(int argc, char **argv, const cli_t *o)
{
    const command_t *cmd = NULL;
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (strcmp(argv[0], COMMANDS[i].name) == 0) cmd = &COMMANDS[i];
    if (!cmd) {
        fprintf(stderr, "pacer-coordinator: unknown command '%s'\n", argv[0]);
        usage(stderr);
        return 2;
    }
    if (argc - 1 != cmd->nargs) {
        fprintf(stderr, "pacer-coordinator: usage: pacer-coordinator %s %s\n", cmd->name, cmd->args);
        return 2;
    }
    coordinator_t *c = NULL;
    char err[512] = "";
    int code = coordinator_open(o->cfg.redis_url, o->cfg.state_dir, &c, err, sizeof err);
    if (code != COORD_OK) {
        fprintf(stderr, "pacer-coordinator: %s\n", err);
        return exit_for(code);
    }
    int rc = cmd->fn(c, argv + 1, o);
    coordinator_stop(c);
    return rc;
}

/* The phases in order: defaults, options, the process settings, then the daemon (its
 * secrets first) or one client command. */
int main(int argc, char **argv)
{
    cli_t o;
    memset(&o, 0, sizeof o);
    coord_config_defaults(&o.cfg);
    http_config_defaults(&o.http);
    o.timeout_s = 600;
    o.cfg.redis_url = getenv("REDIS_URL");
    int rc = parse_options(argc, argv, &o);
    if (rc >= 0) return rc;
    /* A write to a Redis socket the server closed must be an error return, not death. */
    signal(SIGPIPE, SIG_IGN);
    /* Everything the daemon, its embedded Redis and its jobs create under the state dir
     * is the owner's alone (state_dir_tighten says why). */
    umask(077);
    if (optind < argc) return run_command(argc - optind, argv + optind, &o);
    http_tls_t tls;
    if (load_secrets(&o, &tls) != 0) return 2;
    rc = run_daemon(&o);
    http_tls_free(&tls);
    return rc;
}
