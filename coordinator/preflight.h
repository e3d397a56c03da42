/* coordinator/preflight.h - benchmarks of the cluster's hosts (the pre-flight, the
 * coordinator side; `pacer-worker --benchmark N` is the worker side, worker/benchmark.h).
 *
 * A round measures one model on some hosts: on each, `pacer-worker --spec S --benchmark
 * N` as one process, started through the daemon's own launcher (local: mpirun -np 1
 * here; hostfile: mpirun -np 1 over a hostfile of that host; slurm: sbatch --ntasks=1
 * excluding the other nodes), all hosts at once, within --preflight-timeout. Its stdout
 * (the attempt's log, last PREFLIGHT_LOG_MAX bytes) must hold one JSON line
 * {"benchmark": {..., "model", "device", "samples_per_s"}} for the model asked; anything
 * else (a non-zero exit, no such line, a speed that is not a positive finite number, a
 * timeout) fails the host with the reason. Then, per host:
 *   - the speed goes into pacer:profile:{host}:{device}:{model} (samples_per_s,
 *     benchmark_samples_per_s, benchmark_time: docs/REDIS.md), which the first batch
 *     plan of a dynamic-batching job reads (dynbatch_initial);
 *   - the state (hosts.h): failing when it failed (no ranks there until a benchmark
 *     passes) while it passed elsewhere (failing everywhere blames what was measured,
 *     not the hosts: states stay), slow below HOSTS_SLOW_RATIO of the median speed of
 *     the hosts last benchmarked with this model, else up (a down host stays down);
 *   - the host's "benchmark" in pacer:coordinator's hosts (GET /api/v1/cluster);
 * and the round is logged and written to pacer:events ({"type": "benchmark"}).
 *
 * When: before a job's first launch (run_launch.c, --preflight: auto = when some usable host of
 * a cluster of two or more has no profile for the job's model; always; off), and on
 * demand (coord_cluster_benchmark: POST /api/v1/cluster/benchmark). One round at a time.
 * Tick thread only, except coord_cluster_benchmark, which hands its request to the tick.
 */
#ifndef PACER_PREFLIGHT_H
#define PACER_PREFLIGHT_H

#include <jansson.h>
#include <limits.h>
#include <pthread.h>

#include "launcher.h"
#include "spec.h"

#define PREFLIGHT_LOG_MAX 65536 /* bytes of a benchmark's output read back */
#define PREFLIGHT_STEPS_MAX 1000

typedef enum { PREFLIGHT_AUTO, PREFLIGHT_ALWAYS, PREFLIGHT_OFF } preflight_mode_t;

typedef struct {
    char host[256];
    launch_handle_t h;
    int running;
} preflight_host_t;

typedef struct {
    int active;       /* a round runs */
    long round;       /* rounds started so far */
    job_spec_t *spec; /* what it measures (owned while active) */
    char origin[64];  /* "job j-3" or "api" */
    double started, deadline;
    preflight_host_t *hosts;
    int n;
} preflight_t;

struct coordinator;

/* "auto", "always", "off" -> mode; -1 for anything else. */
int preflight_mode_parse(const char *s);

/* Before job id's first launch: 1 when a round for it has started (the job waits until
 * preflight_busy is 0), 2 when another round runs (ask again when it is over), 0 when
 * none is needed (or possible: no Redis, no usable host). */
int preflight_for_job(struct coordinator *c, const job_spec_t *s, const char *id, double now);
int preflight_busy(const struct coordinator *c);

/* One tick: hands an API request to a new round, follows the running one. */
void preflight_tick(struct coordinator *c, double now);

/* Stops a running round's benchmarks (the daemon stops). */
void preflight_stop(struct coordinator *c);

/* Parses a benchmark's output (pure, for the unit tests): the last line that starts with
 * {"benchmark": in text (len bytes, not NUL-terminated) must be that object with
 * "model" equal to model, "device" a short lower-case name and "samples_per_s" a
 * positive finite number. Returns 0 with *speed and device, or -1 with why. */
int preflight_parse_output(const char *text, size_t len, const char *model, double *speed, char *device, size_t devlen,
                           char *why, size_t whylen);

/* The coordinator's preflight state (c->preflight): the mode, the round, and the
 * benchmarks asked for through the API (coord_cluster_benchmark): the request, under c->lock,
 * until the tick takes it (bench_done reaches bench_asked), then its answer. */
typedef struct preflight_state {
    preflight_mode_t mode;
    preflight_t round; /* the benchmark round */
    long bench_asked, bench_done;
    pthread_cond_t bench_cond;
    char bench_model[SPEC_NAME_MAX], bench_dataset[SPEC_NAME_MAX];
    char *bench_hosts; /* blank-separated names ("" = all not down); owned */
    int bench_code;    /* COORD_* */
    char bench_err[512];
    json_t *bench_result;
} preflight_state_t;

#endif
