/* worker/redis_report.h - the worker's link to Redis: a metrics sink that publishes a
 * rank's records, its node profile, its staleness and a heartbeat, and reads the job's
 * batch assignment (docs/REDIS.md lists every key).
 *
 * Threading: the sink owns one thread and one hiredis context. write() (called by the
 * metrics reporter thread) only copies into a bounded backlog under a mutex, never
 * touches the network and always returns 0 (the records are the sink's from then on,
 * so a reporter must not hand them over again); the sink thread sends the backlog in pipelines, beats the
 * heartbeat once a second even when no records come (data loading, evaluation), and
 * caches the latest assignment. Nothing here ever runs on, or waits for, a training step.
 *
 * Unreachable Redis: connects with a 1 s timeout, retries with backoff (0.25 s doubling
 * to 2 s), keeps at most REDIS_REPORT_BACKLOG stream entries (the oldest are dropped and
 * counted) and reports the count on stderr once, at close. Delivery is at least once: a
 * pipeline cut by a lost connection is resent whole after the reconnect.
 *
 * URL parsing and connecting are common/redis_url.h, shared with the coordinator.
 */
#ifndef PACER_REDIS_REPORT_H
#define PACER_REDIS_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#include "metrics.h"
#include "nvml.h"
#include "redis_url.h"
#include "waitmark.h"

#define REDIS_REPORT_BACKLOG 10000 /* stream entries kept while Redis is unreachable */
#define REDIS_REPORT_STREAM_MAXLEN 20000

/* The coarse stream (pacer:job:{job}:metrics:coarse) keeps the whole run for the
 * dashboard's history (coordinator/jobhistory.h) after the full stream has trimmed its
 * start: every epoch and final record, and the step records whose step is a multiple of
 * k, k = 1 below 2 x REDIS_REPORT_COARSE_BASE steps and doubling with every doubling of
 * the step count after, so a rank adds REDIS_REPORT_COARSE_BASE records per doubling:
 * about 256 x (2 + log2(steps / 512)), some 3300 for a million steps, so the stream
 * (MAXLEN ~30000, ~20 MiB at most) holds the whole million-step run of 9 ranks. Best effort: an
 * entry whose reply a lost connection cut is not resent there. */
#define REDIS_REPORT_COARSE_BASE 256
#define REDIS_REPORT_COARSE_MAXLEN 30000
/* Pure: whether a record of this kind (METRICS_STEP, ...) and step goes to the coarse
 * stream too. */
int redis_report_coarse_keep(metrics_kind_t kind, int64_t step);

/* The sink for metrics_start(). job is the coordinator's job id (keys pacer:job:{job}:*),
 * rank this process's MPI rank. Starts the sink thread; the first connection attempt
 * happens there, so this never blocks on the network. NULL with err on a bad URL or when
 * the thread cannot start. The reporter owns the sink and closes it in metrics_stop(). */
metrics_sink_t *redis_report_sink(const char *url, const char *job, int rank, char *err, size_t errlen);
/* The same for a parsed URL (with a password read from a file: redis_url_read_password). */
metrics_sink_t *redis_report_sink_url(const redis_url_t *url, const char *job, int rank, char *err, size_t errlen);

/* How long close() keeps trying to deliver the backlog, reconnecting every 0.1 s while
 * Redis is unreachable (default 2 s: a Redis restarting with its coordinator is back
 * within it; what is still unsent then is counted as dropped and said in the log). */
void redis_report_close_window(metrics_sink_t *s, double seconds);

/* Stream entries dropped so far (backlog overflow, or unsent at close). */
uint64_t redis_report_dropped(metrics_sink_t *s);

/* Whether the sink currently holds a working connection (for tests and logs). */
int redis_report_connected(metrics_sink_t *s);

/* Heartbeats are automatic: the sink thread makes a round trip (heartbeat, node and
 * staleness hashes, assignment read) every REDIS_REPORT_BEAT_S, records or not, so a rank
 * that loads data or evaluates for minutes still beats. This asks for a round now.
 * Never blocks. */
#define REDIS_REPORT_BEAT_S 0.25
void redis_report_heartbeat(metrics_sink_t *s);

/* A GPU rank's device (worker/nvml.h): the sink thread samples it at most every
 * REDIS_REPORT_GPU_S and publishes the latest sample with the node hash (gpu_util_pct,
 * gpu_mem_used_bytes, gpu_mem_total_bytes; docs/REDIS.md). The sink owns gpu from here on
 * and closes it (a second call's is closed at once: the first stays). NULL is fine. */
#define REDIS_REPORT_GPU_S 1.0
void redis_report_watch_gpu(metrics_sink_t *s, nvml_t *gpu);

/* The rank's health (worker/health.h: health_to_json's text, at most
 * REDIS_REPORT_HEALTH_MAX - 1 bytes), published as the node hash's NODE_HEALTH field from
 * the next round trip on. A copy under the mutex: called on a change of health only. */
#define REDIS_REPORT_HEALTH_MAX 512
void redis_report_health(metrics_sink_t *s, const char *json);

/* A rank stuck in a collective: the sink thread reads the rank's wait mark
 * (worker/waitmark.h) every round trip and, once the wait has lasted longer than
 * waitmark_limit_s of the median of the rank's last REDIS_REPORT_STEP_WINDOW step times,
 * writes it into the node hash (waiting, waiting_peer, waiting_since, waiting_limit_s;
 * docs/REDIS.md) until it ends, when they are deleted. The mark is the training thread's
 * and must outlive the sink; NULL (the default) reports nothing. */
#define REDIS_REPORT_STEP_WINDOW 64
void redis_report_watch_wait(metrics_sink_t *s, waitmark_t *mark);

/* The start-up emulation check of this rank's host (worker/emulate.h): the cores its
 * worker ranks ask for (threads / slowdown, the parameter server's share not known
 * yet) and the cores they have, published with every node hash from the next round
 * trip on (emulation_demand_cores, emulation_cores; docs/REDIS.md), so the dashboard
 * can say while the job runs whether its emulated speeds are faithful. cores <= 0:
 * nothing is published (a simulated rank). */
void redis_report_emulation(metrics_sink_t *s, double demand_cores, double cores);

/* algorithm.shard (worker/shard.h): the parameters of this rank's range, the optimizer
 * state and the gradient bytes it keeps, published with every node hash from the next
 * round trip on (shard_params, shard_state_bytes, shard_gradient_bytes; docs/REDIS.md),
 * for the job page's node table. params <= 0: nothing is published. */
void redis_report_shard(metrics_sink_t *s, long long params, long long state_bytes, long long gradient_bytes);

/* The steps the whole run takes (epochs x steps per epoch), published with every node
 * hash as total_steps (docs/REDIS.md): with `step`, the job's measured progress, from
 * which the coordinator estimates when it ends (coordinator/policy.h). <= 0: not published. */
void redis_report_total_steps(metrics_sink_t *s, long long total);

/* The latest batch assignment (key pacer:job:{job}:assignment). Returns 1 and fills
 * *version and batches[0..n) when an assignment other than the last one returned exists (a newer version,
 * or any version after a Redis restart),
 * 0 when there is none or nothing new, -1 when the stored one is malformed or does not
 * have n entries. Reads a cache under a mutex (the sink thread refreshes it every
 * REDIS_REPORT_BEAT_S): cheap, but still not meant for the training step itself. */
int redis_report_assignment(metrics_sink_t *s, int64_t *version, int *batches, int n);

/* The reply to HMGET pacer:job:{job}:assignment version batches, as Redis sent it: 1 with
 * *version (> 0) and batches[0..*n) (*n <= cap, each in [0, INT_MAX]); 0 when there is no
 * assignment (or the reply is not an HMGET of two fields); -1 when the stored one is
 * malformed: *version is then the version, or -1 when that is not a number either.
 * Nothing else is checked here (the worker bounds the sizes against its buffers). */
int redis_report_parse_assignment(const redisReply *r, int64_t *version, int *batches, int cap, int *n);

#endif
