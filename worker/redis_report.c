/* worker/redis_report.c - see redis_report.h. */
#include "redis_report.h"

#include "clock.h"
#include "hostname.h"
#include "log.h"
#include "nvml.h"
#include "record_fields.h"
#include "redis_keys.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#define PIPELINE_MAX 512 /* stream entries per round trip */
#define ASSIGN_MAX 4096  /* entries accepted in an assignment */
#define BACKOFF_MIN_S 0.25
#define BACKOFF_MAX_S 2.0
#define CLOSE_FLUSH_S 2.0 /* how long close() keeps trying to send the backlog (default) */
#define CLOSE_RETRY_S 0.1 /* its reconnection attempts while there is one to send */
#define CONNECT_TIMEOUT_S 1.0

/* ---- small helpers ---------------------------------------------------------------------- */

static void rlog(int rank, const char *fmt, ...)
{
    char who[48];
    snprintf(who, sizeof who, "rank %d redis", rank);
    va_list ap;
    va_start(ap, fmt);
    log_vline(who, fmt, ap);
    va_end(ap);
}

/* ---- the sink ----------------------------------------------------------------------------- */

typedef struct {
    metrics_sink_t base; /* first member: the reporter holds a metrics_sink_t * */
    redis_url_t url;
    char job[64];
    int rank;
    char host[64];
    char k_stream[160], k_coarse[160], k_node[160], k_stale[160], k_assign[160];

    pthread_t thread;
    pthread_mutex_t lock; /* guards everything down to 'sink thread only' */
    pthread_cond_t wake;
    int stopping;
    int beat_now;
    int connected;

    char **ring; /* backlog of serialised records, oldest at head; each line's first byte
                  * says whether it goes to the coarse stream too ('+') or not ('-') */
    size_t head, n;
    uint64_t dropped;

    int have_rec;          /* node state folded from the records written so far */
    metrics_record_t last; /* the latest step record */
    double sum_compute, sum_comm, sum_idle;
    double sum_phase[PHASE_N], sum_step; /* the time breakdown, summed over step records */
    double sum_bytes;                    /* comm_bytes over the records that measured it ... */
    long bytes_steps;                    /* ... and their count (0: comm_bytes_per_step absent) */
    double last_time;
    float test_accuracy, test_loss;

    int64_t asg_version; /* assignment cache; 0 = none seen */
    int asg_n, asg_bad;
    int asg[ASSIGN_MAX];
    int64_t asg_returned; /* the version redis_report_assignment last handed out */

    nvml_t *gpu;                                     /* redis_report_watch_gpu's; sampled by the sink thread only */
    char health[REDIS_REPORT_HEALTH_MAX];            /* redis_report_health's; "" = none */
    double emu_demand, emu_cores;                    /* redis_report_emulation's; cores 0 = not set */
    long long shard_params, shard_state, shard_grad; /* redis_report_shard's; params 0 = not set */
    long long total_steps;                           /* redis_report_total_steps's; 0 = not set */

    /* The rank's recent step times (a ring of step records' step_s), for the wait limit,
     * and its wait mark (redis_report_watch_wait; NULL: waits are not reported). */
    double step_s[REDIS_REPORT_STEP_WINDOW];
    int nstep, step_next;
    waitmark_t *wait;

    /* sink thread only */
    gpu_sample_t gpu_last;
    int gpu_have;
    double gpu_next;
    int wait_shown; /* the node hash holds a waiting report (to delete when it ends) */
    redisContext *c;
    double next_try, backoff;
    double close_flush_s; /* redis_report_close_window's (lock) */
    int down_logged;
    uint64_t xadd_errors;
    int inflight;    /* entries taken off the ring whose replies are not in yet (lock) */
    int unreachable; /* the last connection attempt failed or the connection was lost (lock) */
} rsink_t;

static void ring_push_back(rsink_t *s, char *line)
{
    if (s->n == REDIS_REPORT_BACKLOG) { /* full: the oldest goes */
        free(s->ring[s->head]);
        s->head = (s->head + 1) % REDIS_REPORT_BACKLOG;
        s->n--;
        s->dropped++;
    }
    s->ring[(s->head + s->n) % REDIS_REPORT_BACKLOG] = line;
    s->n++;
}

/* Returns line to the front (it is older than everything queued); when full it is the
 * oldest, so it is the one dropped. */
static void ring_push_front(rsink_t *s, char *line)
{
    if (s->n == REDIS_REPORT_BACKLOG) {
        free(line);
        s->dropped++;
        return;
    }
    s->head = (s->head + REDIS_REPORT_BACKLOG - 1) % REDIS_REPORT_BACKLOG;
    s->ring[s->head] = line;
    s->n++;
}

int redis_report_coarse_keep(metrics_kind_t kind, int64_t step)
{
    if (kind != METRICS_STEP || step < 2 * REDIS_REPORT_COARSE_BASE) return 1;
    int64_t k = 1;
    while (k <= INT64_MAX / 2 && step / REDIS_REPORT_COARSE_BASE >= 2 * k) k *= 2;
    return step % k == 0;
}

static int sink_write(metrics_sink_t *base, const metrics_record_t *recs, const char *const *json, int n)
{
    rsink_t *s = (rsink_t *)base;
    pthread_mutex_lock(&s->lock);
    for (int i = 0; i < n; i++) {
        const metrics_record_t *r = &recs[i];
        if (json[i] && json[i][0]) {
            size_t len = strlen(json[i]);
            char *line = malloc(len + 2);
            if (line) {
                line[0] = redis_report_coarse_keep(r->kind, r->step) ? '+' : '-';
                memcpy(line + 1, json[i], len + 1);
                ring_push_back(s, line);
            } else s->dropped++;
        }
        if (r->kind == METRICS_STEP) {
            s->sum_compute += r->compute_s;
            s->sum_comm += r->comm_s;
            s->sum_idle += r->idle_s;
            for (int k = 0; k < PHASE_N; k++) s->sum_phase[k] += r->phase_s[k];
            s->sum_step += r->step_s;
            if (r->comm_measured) {
                s->sum_bytes += r->comm_bytes;
                s->bytes_steps++;
            }
            if (isfinite(r->step_s) && r->step_s > 0) {
                s->step_s[s->step_next] = r->step_s;
                s->step_next = (s->step_next + 1) % REDIS_REPORT_STEP_WINDOW;
                if (s->nstep < REDIS_REPORT_STEP_WINDOW) s->nstep++;
            }
            s->last = *r;
            s->have_rec = 1;
        } else {
            if (isfinite(r->test_accuracy)) s->test_accuracy = r->test_accuracy;
            if (isfinite(r->test_loss)) s->test_loss = r->test_loss;
            /* Epoch and final records carry the cumulative staleness too. */
            if (s->have_rec) s->last.staleness = r->staleness;
        }
        s->last_time = r->time;
    }
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->lock);
    /* Always 0: the records are in the sink's own backlog now. A -1 would invite the
     * reporter to hand the same batch over again, and it would be sent twice. */
    return 0;
}

/* Argument vector for one command, formatted into fixed storage: the node hash's HSET
 * (its key and the rank record's fields) is the longest. */
#define ARGS_MAX (2 + RECORD_ARGS_MAX)
_Static_assert(RECORD_STALENESS_ARGS_MAX <= RECORD_ARGS_MAX, "the staleness hash's HSET fits too");
typedef struct {
    int argc;
    const char *argv[ARGS_MAX];
    size_t len[ARGS_MAX];
    char store[ARGS_MAX][RECORD_VALUE_MAX];
} args_t;

static void arg_str(args_t *a, const char *s)
{
    a->argv[a->argc] = s;
    a->len[a->argc] = strlen(s);
    a->argc++;
}

static void append(redisContext *c, args_t *a) { redisAppendCommandArgv(c, a->argc, a->argv, a->len); }

static void disconnect(rsink_t *s, const char *why)
{
    if (!s->down_logged) {
        rlog(s->rank, "connection lost (%s); buffering up to %d records and retrying", why, REDIS_REPORT_BACKLOG);
        s->down_logged = 1;
    }
    redisFree(s->c);
    s->c = NULL;
    s->backoff = BACKOFF_MIN_S;
    s->next_try = clock_mono_s() + s->backoff;
    pthread_mutex_lock(&s->lock);
    s->connected = 0;
    s->unreachable = 1;
    pthread_mutex_unlock(&s->lock);
}

static void try_connect(rsink_t *s)
{
    double t = clock_mono_s();
    if (t < s->next_try) return;
    char err[256];
    s->c = redis_url_connect(&s->url, CONNECT_TIMEOUT_S, err, sizeof err);
    if (!s->c) {
        if (!s->down_logged) {
            rlog(s->rank, "cannot connect (%s); buffering up to %d records and retrying", err, REDIS_REPORT_BACKLOG);
            s->down_logged = 1;
        }
        s->backoff = s->backoff < BACKOFF_MIN_S ? BACKOFF_MIN_S : s->backoff * 2;
        if (s->backoff > BACKOFF_MAX_S) s->backoff = BACKOFF_MAX_S;
        s->next_try = clock_mono_s() + s->backoff;
        pthread_mutex_lock(&s->lock);
        s->unreachable = 1;
        pthread_mutex_unlock(&s->lock);
        return;
    }
    if (s->down_logged) rlog(s->rank, "connected again");
    s->down_logged = 0;
    s->backoff = 0;
    pthread_mutex_lock(&s->lock);
    s->connected = 1;
    s->unreachable = 0;
    pthread_mutex_unlock(&s->lock);
}

int redis_report_parse_assignment(const redisReply *r, int64_t *version, int *batches, int cap, int *n)
{
    *n = 0;
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2) return 0;
    const redisReply *ver = r->element[0], *bat = r->element[1];
    if (!ver || ver->type != REDIS_REPLY_STRING) return 0; /* no assignment yet */
    /* Digits only; anything else is a version nobody wrote: -1 marks it. */
    char *end = NULL;
    errno = 0;
    long long v = ver->len > 0 && ver->str[0] >= '0' && ver->str[0] <= '9' ? strtoll(ver->str, &end, 10) : -1;
    if (v <= 0 || errno || !end || end != ver->str + ver->len) v = -1;
    *version = v;
    if (v < 0 || !bat || bat->type != REDIS_REPLY_STRING) return -1;
    json_t *arr = json_loadb(bat->str, bat->len, 0, NULL);
    int rc = 1;
    if (!json_is_array(arr) || json_array_size(arr) > (size_t)cap) {
        rc = -1;
    } else {
        for (size_t i = 0; i < json_array_size(arr); i++) {
            json_t *e = json_array_get(arr, i);
            json_int_t b = json_is_integer(e) ? json_integer_value(e) : -1;
            if (b < 0 || b > INT_MAX) {
                rc = -1;
                break;
            }
            batches[(*n)++] = (int)b;
        }
    }
    json_decref(arr);
    if (rc < 0) *n = 0;
    return rc;
}

/* Parses the HMGET version batches reply into the cache. */
static void take_assignment(rsink_t *s, const redisReply *r)
{
    int tmp[ASSIGN_MAX];
    int n = 0;
    int64_t v = 0;
    int got = redis_report_parse_assignment(r, &v, tmp, ASSIGN_MAX, &n);
    if (got == 0) return;
    pthread_mutex_lock(&s->lock);
    int known = (v == s->asg_version);
    pthread_mutex_unlock(&s->lock);
    if (known) return;
    int bad = got < 0;
    pthread_mutex_lock(&s->lock);
    s->asg_version = v;
    s->asg_bad = bad;
    s->asg_n = bad ? 0 : n;
    if (!bad) memcpy(s->asg, tmp, sizeof(int) * (size_t)n);
    pthread_mutex_unlock(&s->lock);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Whether the rank's wait (its mark, read now) has lasted past its limit: 1 with what
 * the node hash shows about it. steps: the recent step times (sorted here). */
typedef struct {
    const char *op;
    int peer;
    double since_wall, limit_s;
} wait_report_t;

static int wait_long(waitmark_t *mark, double *steps, int nsteps, wait_report_t *out)
{
    wait_op_t op;
    int peer;
    double since;
    if (!mark || !waitmark_read(mark, &op, &peer, &since)) return 0;
    double median = 0;
    if (nsteps > 0) {
        qsort(steps, (size_t)nsteps, sizeof *steps, cmp_double);
        median = steps[nsteps / 2];
    }
    double now = clock_mono_s(), limit = waitmark_limit_s(median);
    if (now - since <= limit) return 0;
    out->op = waitmark_name(op);
    out->peer = peer;
    out->since_wall = clock_wall_s() - (now - since);
    out->limit_s = limit;
    return 1;
}

/* The rank record as the node hash shows it (common/record_fields.h), from the sink's
 * state; the caller holds the lock and adds the wait, the GPU sample and the heartbeat.
 * rec: the latest step record (NULL: none yet); strings are borrowed from rec, health and
 * the sink. */
static void node_record(const rsink_t *s, const metrics_record_t *rec, const char *health, rank_record_t *nr)
{
    memset(nr, 0, sizeof *nr);
    nr->present = 1u << RFG_ALWAYS;
    nr->rank = s->rank;
    nr->host = rec && rec->host[0] ? rec->host : s->host;
    nr->pid = (long long)getpid();
    if (rec) {
        nr->present |= 1u << RFG_STEP;
        nr->device = rec->device[0] ? rec->device : "cpu";
        nr->role = rec->role ? "ps" : "worker";
        nr->samples_per_s = rec->samples_per_s;
        nr->compute_s = s->sum_compute;
        nr->comm_s = s->sum_comm;
        nr->idle_s = s->sum_idle;
        nr->last_compute_s = rec->compute_s;
        nr->last_comm_s = rec->comm_s;
        nr->last_idle_s = rec->idle_s;
        nr->step_s = s->sum_step;
        memcpy(nr->phase_s, s->sum_phase, sizeof nr->phase_s);
        /* Bytes handed to MPI per step, over the steps that measured them, and the
         * compression ratio in force: absent where not measured (docs/REDIS.md). */
        if (s->bytes_steps > 0) {
            nr->present |= 1u << RFG_COMM_BYTES;
            nr->comm_bytes_per_step = s->sum_bytes / (double)s->bytes_steps;
        }
        if (rec->comm_measured && rec->compression_ratio > 0) {
            nr->present |= 1u << RFG_COMPRESSION;
            nr->compression_ratio = rec->compression_ratio;
        }
        if (rec->batch >= 0) nr->present |= 1u << RFG_BATCH; /* the PS computes no batch */
        nr->batch = rec->batch;
        nr->loss = rec->loss;
        nr->step = (long long)rec->step;
        nr->epoch = (long long)rec->epoch;
        nr->samples = (long long)rec->samples;
        nr->slowdown = rec->slowdown;
        nr->plan_version = (long long)rec->plan_version;
        nr->noise_scale = rec->noise_scale;
        nr->global_batch = rec->global_batch > 0 ? rec->global_batch : NAN;
        if (rec->planned) { /* algorithm.goodput: the plan in force (worker/adaptive.h) */
            nr->present |= 1u << RFG_PLANNED;
            nr->efficiency = rec->efficiency;
            nr->lr_scale = rec->lr_scale;
            nr->goodput = rec->goodput;
            nr->left_out = rec->left_out;
        }
        nr->test_accuracy = s->test_accuracy;
        nr->test_loss = s->test_loss;
        nr->updated = s->last_time;
    }
    if (health[0]) {
        nr->present |= 1u << RFG_HEALTH;
        nr->health = health;
    }
    if (s->total_steps > 0) {
        nr->present |= 1u << RFG_TOTAL_STEPS;
        nr->total_steps = s->total_steps;
    }
    if (s->emu_cores > 0) {
        nr->present |= 1u << RFG_EMULATION;
        nr->emulation_demand_cores = s->emu_demand;
        nr->emulation_cores = s->emu_cores;
    }
    if (s->shard_params > 0) {
        nr->present |= 1u << RFG_SHARD;
        nr->shard_params = s->shard_params;
        nr->shard_state_bytes = s->shard_state;
        nr->shard_gradient_bytes = s->shard_grad;
    }
}

/* Appends the backlog's entries to the pipeline: the full stream's first (their replies
 * are the first nb), then the coarse stream's copies. Returns how many copies. */
static int append_xadds(rsink_t *s, char *const *batch, int nb)
{
    static const char *const xadd_head[] = {"XADD", NULL, "MAXLEN", "~", NULL, "*", "json"};
    char maxlen[16], maxlen_coarse[16];
    snprintf(maxlen, sizeof maxlen, "%d", REDIS_REPORT_STREAM_MAXLEN);
    snprintf(maxlen_coarse, sizeof maxlen_coarse, "%d", REDIS_REPORT_COARSE_MAXLEN);
    int nc = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < nb; i++) {
            if (pass == 1 && batch[i][0] != '+') continue;
            const char *argv[8];
            size_t len[8];
            memcpy(argv, xadd_head, sizeof xadd_head);
            argv[1] = pass ? s->k_coarse : s->k_stream;
            argv[4] = pass ? maxlen_coarse : maxlen;
            argv[7] = batch[i] + 1;
            for (int k = 0; k < 8; k++) len[k] = strlen(argv[k]);
            redisAppendCommandArgv(s->c, 8, argv, len);
            nc += pass;
        }
    }
    return nc;
}

/* Reads the round trip's ncmd replies: an entry of the full stream refused by the server
 * is dropped and counted, one that reached it is freed (batch[i] = NULL); the last reply
 * is the assignment. Returns 0 when the connection failed before every reply came. */
static int read_replies(rsink_t *s, char **batch, int nb, int nc, int ncmd)
{
    int ok = 1;
    for (int i = 0; i < ncmd; i++) {
        redisReply *r = NULL;
        if (redisGetReply(s->c, (void **)&r) != REDIS_OK || !r) {
            ok = 0;
            break;
        }
        if (i < nb) {
            if (r->type == REDIS_REPLY_ERROR) {
                /* The server refused the entry (e.g. the key holds another type): resending
                 * cannot help, so it is dropped and counted. */
                if (s->xadd_errors++ == 0) rlog(s->rank, "XADD %s: %s", s->k_stream, r->str);
                pthread_mutex_lock(&s->lock);
                s->dropped++;
                pthread_mutex_unlock(&s->lock);
            }
            free(batch[i]);
            batch[i] = NULL;
        } else if (i < nb + nc) {
            if (r->type == REDIS_REPLY_ERROR && s->xadd_errors++ == 0)
                rlog(s->rank, "XADD %s: %s", s->k_coarse, r->str);
        } else if (i == ncmd - 1) {
            take_assignment(s, r);
        }
        freeReplyObject(r);
    }
    return ok;
}

/* Appends the node hash (one loop over the rank record's table, common/record_fields.h),
 * the deletion of a wait report that ended, and the staleness hash (st NULL: no step
 * record yet). Returns how many commands. */
static int append_hashes(rsink_t *s, const rank_record_t *nr, int waiting, const staleness_t *st)
{
    int n = 0;
    args_t a = {0};
    arg_str(&a, "HSET");
    arg_str(&a, s->k_node);
    a.argc += record_fields_hset(nr, a.argv + a.argc, a.len + a.argc, a.store + a.argc, ARGS_MAX - a.argc);
    append(s->c, &a);
    n++;
    if (!waiting && s->wait_shown) {
        args_t d = {0};
        arg_str(&d, "HDEL");
        arg_str(&d, s->k_node);
        for (int f = 0; f < RF_N; f++)
            if (RECORD_FIELDS[f].group == RFG_WAITING) arg_str(&d, RECORD_FIELDS[f].name);
        append(s->c, &d);
        n++;
    }
    if (st) {
        args_t b = {0};
        arg_str(&b, "HSET");
        arg_str(&b, s->k_stale);
        b.argc += record_staleness_hset(st, b.argv + b.argc, b.len + b.argc, b.store + b.argc, ARGS_MAX - b.argc);
        append(s->c, &b);
        n++;
    }
    return n;
}

/* One round trip: the backlog (up to PIPELINE_MAX entries), the node and staleness
 * hashes with the heartbeat, and the assignment read, in a single pipeline. Returns 1
 * when more backlog is waiting. */
static int round_trip(rsink_t *s)
{
    if (!s->c) try_connect(s);
    if (!s->c) return 0;

    char *batch[PIPELINE_MAX];
    int nb = 0;
    metrics_record_t rec; /* the node record's strings point into rec and health */
    char health[REDIS_REPORT_HEALTH_MAX];
    rank_record_t nr;
    pthread_mutex_lock(&s->lock);
    while (nb < PIPELINE_MAX && s->n > 0) {
        batch[nb++] = s->ring[s->head];
        s->head = (s->head + 1) % REDIS_REPORT_BACKLOG;
        s->n--;
    }
    s->inflight = nb;
    int have = s->have_rec;
    rec = s->last;
    memcpy(health, s->health, sizeof health);
    node_record(s, have ? &rec : NULL, health, &nr);
    nvml_t *gpu = s->gpu;
    waitmark_t *mark = s->wait;
    double steps[REDIS_REPORT_STEP_WINDOW];
    int nsteps = s->nstep;
    memcpy(steps, s->step_s, sizeof steps);
    s->beat_now = 0;
    pthread_mutex_unlock(&s->lock);
    wait_report_t wr;
    int waiting = wait_long(mark, steps, nsteps, &wr);
    if (waiting) {
        nr.present |= 1u << RFG_WAITING;
        nr.waiting = wr.op;
        nr.waiting_peer = wr.peer >= 0 ? wr.peer : NAN;
        nr.waiting_since = wr.since_wall;
        nr.waiting_limit_s = wr.limit_s;
    }
    /* The device's utilisation and memory, here on the sink's thread, at most once a
     * second: never on a training step. */
    double now = clock_mono_s();
    if (gpu && now >= s->gpu_next) {
        s->gpu_next = now + REDIS_REPORT_GPU_S;
        s->gpu_have = nvml_sample(gpu, &s->gpu_last) == 0;
    }
    if (s->gpu_have) {
        nr.present |= 1u << RFG_GPU;
        nr.gpu_util_pct = s->gpu_last.util_pct;
        nr.gpu_mem_used = (long long)s->gpu_last.mem_used;
        nr.gpu_mem_total = (long long)s->gpu_last.mem_total;
    }
    nr.heartbeat = clock_wall_s();

    int nc = append_xadds(s, batch, nb);
    int ncmd = nb + nc;

    ncmd += append_hashes(s, &nr, waiting, have ? &rec.staleness : NULL);
    redisAppendCommand(s->c, "HMGET %s version batches", s->k_assign);
    ncmd++;

    int ok = read_replies(s, batch, nb, nc, ncmd);
    if (!ok) {
        /* Entries whose replies did not come back are resent after the reconnect. */
        pthread_mutex_lock(&s->lock);
        for (int i = nb - 1; i >= 0; i--)
            if (batch[i]) ring_push_front(s, batch[i]);
        s->inflight = 0;
        pthread_mutex_unlock(&s->lock);
        /* A report that may have reached the hash is deleted once the wait ends. */
        s->wait_shown |= waiting;
        disconnect(s, s->c->errstr[0] ? s->c->errstr : "no reply");
        return 0;
    }
    s->wait_shown = waiting;
    pthread_mutex_lock(&s->lock);
    s->inflight = 0;
    int more = s->n > 0;
    pthread_mutex_unlock(&s->lock);
    return more;
}

static void *sink_main(void *arg)
{
    rsink_t *s = arg;
    /* A write to a socket the server closed raises SIGPIPE in the writing thread; blocked
     * here, it stays pending for this thread only and write() returns EPIPE, which
     * hiredis reports. The process's own disposition is left alone. */
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, NULL);

    double last_round = 0;
    pthread_mutex_lock(&s->lock);
    for (;;) {
        /* A round is due every beat period, or at once when there is something to send
         * and a connection to send it on (while disconnected, the beat period paces the
         * reconnection attempts, which try_connect spaces further by its backoff). */
        while (!s->stopping && !(s->c && (s->beat_now || s->n > 0)) &&
               clock_mono_s() - last_round < REDIS_REPORT_BEAT_S) {
            struct timespec ts;
            clock_wall_deadline(REDIS_REPORT_BEAT_S, &ts);
            pthread_cond_timedwait(&s->wake, &s->lock, &ts);
        }
        int stop = s->stopping;
        pthread_mutex_unlock(&s->lock);
        if (stop) break;
        last_round = clock_mono_s();
        while (round_trip(s)) {
            pthread_mutex_lock(&s->lock);
            stop = s->stopping;
            pthread_mutex_unlock(&s->lock);
            if (stop) break;
        }
        pthread_mutex_lock(&s->lock);
    }
    /* Closing: the backlog gets close_flush_s to reach Redis. While there is something to
     * send and no connection, a new attempt every CLOSE_RETRY_S: a Redis restarting with
     * its coordinator (the embedded one stops and starts with the daemon) is back within
     * that, and a rank that ends meanwhile would otherwise lose its last records. With
     * nothing to send, one attempt (the final heartbeat and node hash). */
    pthread_mutex_lock(&s->lock);
    double deadline = clock_mono_s() + s->close_flush_s;
    pthread_mutex_unlock(&s->lock);
    for (;;) {
        s->next_try = 0;
        if (!s->c) try_connect(s);
        pthread_mutex_lock(&s->lock);
        size_t backlog = s->n;
        pthread_mutex_unlock(&s->lock);
        if (s->c || backlog == 0 || clock_mono_s() + CLOSE_RETRY_S >= deadline) break;
        clock_sleep_s(CLOSE_RETRY_S);
    }
    while (s->c && clock_mono_s() < deadline && round_trip(s)) {}
    if (s->c) redisFree(s->c);
    s->c = NULL;
    return NULL;
}

/* Entries not yet in Redis: on the ring or in a round trip; wakes the sink's thread so a
 * flush does not wait out the beat period. None while Redis is unreachable (before the
 * first attempt it is not known to be): they wait for the reconnection in the backlog,
 * and a flush waiting for them would wait in vain. */
static int sink_pending(metrics_sink_t *base)
{
    rsink_t *s = (rsink_t *)base;
    pthread_mutex_lock(&s->lock);
    int n = s->unreachable ? 0 : (int)s->n + s->inflight;
    if (n) pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->lock);
    return n;
}

static void sink_close(metrics_sink_t *base)
{
    rsink_t *s = (rsink_t *)base;
    pthread_mutex_lock(&s->lock);
    s->stopping = 1;
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->thread, NULL);
    for (size_t i = 0; i < s->n; i++) {
        free(s->ring[(s->head + i) % REDIS_REPORT_BACKLOG]);
        s->dropped++;
    }
    if (s->dropped)
        rlog(s->rank, "%llu metrics records were not delivered to %s (Redis unreachable or refused)",
             (unsigned long long)s->dropped, s->k_stream);
    free(s->ring);
    nvml_close(s->gpu);
    pthread_cond_destroy(&s->wake);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

void redis_report_watch_wait(metrics_sink_t *base, waitmark_t *mark)
{
    rsink_t *s = (rsink_t *)base;
    pthread_mutex_lock(&s->lock);
    s->wait = mark;
    pthread_mutex_unlock(&s->lock);
}

void redis_report_watch_gpu(metrics_sink_t *base, nvml_t *gpu)
{
    rsink_t *s = (rsink_t *)base;
    pthread_mutex_lock(&s->lock);
    int taken = !s->gpu;
    if (taken) s->gpu = gpu;
    pthread_mutex_unlock(&s->lock);
    /* The sink thread may be sampling the first one: a second is not taken, only closed. */
    if (!taken) nvml_close(gpu);
}

void redis_report_emulation(metrics_sink_t *base, double demand_cores, double cores)
{
    rsink_t *s = (rsink_t *)base;
    pthread_mutex_lock(&s->lock);
    s->emu_demand = demand_cores;
    s->emu_cores = cores;
    pthread_mutex_unlock(&s->lock);
}

void redis_report_shard(metrics_sink_t *base, long long params, long long state_bytes, long long gradient_bytes)
{
    rsink_t *s = (rsink_t *)base;
    pthread_mutex_lock(&s->lock);
    s->shard_params = params;
    s->shard_state = state_bytes;
    s->shard_grad = gradient_bytes;
    pthread_mutex_unlock(&s->lock);
}

void redis_report_total_steps(metrics_sink_t *base, long long total)
{
    rsink_t *s = (rsink_t *)base;
    pthread_mutex_lock(&s->lock);
    s->total_steps = total;
    pthread_mutex_unlock(&s->lock);
}

metrics_sink_t *redis_report_sink(const char *url, const char *job, int rank, char *err, size_t errlen)
{
    redis_url_t u;
    if (redis_url_parse(url, &u, err, errlen) != 0) return NULL;
    return redis_report_sink_url(&u, job, rank, err, errlen);
}

metrics_sink_t *redis_report_sink_url(const redis_url_t *url, const char *job, int rank, char *err, size_t errlen)
{
    if (!job || !*job || strlen(job) >= 64 || strpbrk(job, " \t\r\n")) {
        snprintf(err, errlen, "job id must be 1-63 characters without spaces");
        return NULL;
    }
    rsink_t *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->url = *url;
    s->ring = calloc(REDIS_REPORT_BACKLOG, sizeof *s->ring);
    if (!s->ring) {
        free(s);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    snprintf(s->job, sizeof s->job, "%s", job);
    s->rank = rank;
    s->close_flush_s = CLOSE_FLUSH_S;
    host_name(s->host, sizeof s->host);
    snprintf(s->k_stream, sizeof s->k_stream, KEY_JOB_METRICS, job);
    snprintf(s->k_coarse, sizeof s->k_coarse, KEY_JOB_METRICS_COARSE, job);
    snprintf(s->k_node, sizeof s->k_node, KEY_JOB_NODE, job, rank);
    snprintf(s->k_stale, sizeof s->k_stale, KEY_JOB_STALENESS, job, rank);
    snprintf(s->k_assign, sizeof s->k_assign, KEY_JOB_ASSIGNMENT, job);
    s->test_accuracy = s->test_loss = NAN;
    /* A rank of an earlier attempt killed while it waited left its report in the hash
     * this rank now writes: the first round trip deletes it. */
    s->wait_shown = 1;
    s->base.write = sink_write;
    s->base.close = sink_close;
    s->base.pending = sink_pending;
    s->base.ctx = s;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->wake, NULL);
    if (pthread_create(&s->thread, NULL, sink_main, s) != 0) {
        pthread_cond_destroy(&s->wake);
        pthread_mutex_destroy(&s->lock);
        free(s->ring);
        free(s);
        snprintf(err, errlen, "cannot start the Redis sink thread");
        return NULL;
    }
    return &s->base;
}

void redis_report_close_window(metrics_sink_t *base, double seconds)
{
    rsink_t *s = (rsink_t *)base;
    pthread_mutex_lock(&s->lock);
    s->close_flush_s = seconds > 0 ? seconds : 0;
    pthread_mutex_unlock(&s->lock);
}

uint64_t redis_report_dropped(metrics_sink_t *base)
{
    rsink_t *s = (rsink_t *)base;
    pthread_mutex_lock(&s->lock);
    uint64_t d = s->dropped;
    pthread_mutex_unlock(&s->lock);
    return d;
}

int redis_report_connected(metrics_sink_t *base)
{
    rsink_t *s = (rsink_t *)base;
    pthread_mutex_lock(&s->lock);
    int up = s->connected;
    pthread_mutex_unlock(&s->lock);
    return up;
}

void redis_report_heartbeat(metrics_sink_t *base)
{
    rsink_t *s = (rsink_t *)base;
    pthread_mutex_lock(&s->lock);
    s->beat_now = 1;
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->lock);
}

int redis_report_assignment(metrics_sink_t *base, int64_t *version, int *batches, int n)
{
    rsink_t *s = (rsink_t *)base;
    int rc = 0;
    pthread_mutex_lock(&s->lock);
    if (s->asg_version != 0 && s->asg_version != s->asg_returned) {
        if (s->asg_bad || s->asg_n != n) {
            rc = -1;
        } else {
            memcpy(batches, s->asg, sizeof(int) * (size_t)n);
            *version = s->asg_version;
            s->asg_returned = s->asg_version;
            rc = 1;
        }
    }
    pthread_mutex_unlock(&s->lock);
    return rc;
}

void redis_report_health(metrics_sink_t *base, const char *json)
{
    rsink_t *s = (rsink_t *)base;
    if (!s || !json) return;
    pthread_mutex_lock(&s->lock);
    snprintf(s->health, sizeof s->health, "%s", json);
    s->beat_now = 1; /* the coordinator learns it in the next round, not a beat later */
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->lock);
}
