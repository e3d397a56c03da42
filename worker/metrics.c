/* worker/metrics.c - see metrics.h. */
#include "metrics.h"

#include "clock.h"
#include "utf8.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *const KIND[] = {"step", "epoch", "final", "eval"};

/* Appends a number or null; returns chars written like snprintf. */
static int num(char *p, size_t left, double v)
{
    if (!isfinite(v)) return snprintf(p, left, "null");
    return snprintf(p, left, "%.6g", v);
}

/* JSON string escaping for the free-text fields (host and job names, the text sample). */
static int str(char *p, size_t left, const char *s)
{
    size_t o = 0, n = strlen(s);
    if (left < 3) return (int)left + 1;
    p[o++] = '"';
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        size_t l = 1, pre = 0;
        if (o + 8 >= left) return (int)left + 1;
        if (c == '"' || c == '\\') {
            p[o++] = '\\';
            p[o++] = (char)c;
        } else if (c < 0x20) {
            o += (size_t)snprintf(p + o, left - o, "\\u%04x", c);
        } else if (c < 0x80) {
            p[o++] = (char)c;
        } else if ((l = utf8_char((const unsigned char *)s + i, n - i, NULL, &pre)) != 0) {
            memcpy(p + o, s + i, l), o += l;
        } else {
            /* not UTF-8 (common/utf8.h): U+FFFD, or the reader's parser refuses the whole record */
            o += (size_t)snprintf(p + o, left - o, "\\ufffd");
            l = pre ? pre : 1;
        }
        i += l;
    }
    p[o++] = '"';
    p[o] = 0;
    return (int)o;
}

#define ADD(expr)                                       \
    do {                                                \
        int k_ = (expr);                                \
        if (k_ < 0 || (size_t)k_ >= len - o) return -1; \
        o += (size_t)k_;                                \
    } while (0)

int metrics_to_json(const metrics_record_t *r, const char *job, char *buf, size_t len)
{
    size_t o = 0;
    ADD(snprintf(buf + o, len - o, "{\"kind\":\"%s\",\"job\":", KIND[r->kind]));
    ADD(str(buf + o, len - o, job ? job : ""));
    ADD(snprintf(buf + o, len - o, ",\"time\":%.6f,\"rank\":%d,\"role\":\"%s\",\"host\":", r->time, r->rank,
                 r->role ? "ps" : "worker"));
    ADD(str(buf + o, len - o, r->host));
    ADD(snprintf(buf + o, len - o, ",\"device\":\"%s\",\"step\":%lld,\"epoch\":%lld,", r->device[0] ? r->device : "cpu",
                 (long long)r->step, (long long)r->epoch));
    if (r->batch >= 0) ADD(snprintf(buf + o, len - o, "\"batch\":%d,", r->batch));
    ADD(snprintf(buf + o, len - o, "\"loss\":"));
    ADD(num(buf + o, len - o, r->loss));
    if (r->baseline_comm_s > 0) ADD(snprintf(buf + o, len - o, ",\"baseline_comm_s\":%.6f", r->baseline_comm_s));
    ADD(snprintf(buf + o, len - o, ",\"compute_s\":%.6f,\"comm_s\":%.6f,\"idle_s\":%.6f,\"samples_per_s\":",
                 r->compute_s, r->comm_s, r->idle_s));
    /* %.1f of a speed, as before: the same digits, or null. */
    ADD(isfinite(r->samples_per_s) ? snprintf(buf + o, len - o, "%.1f", r->samples_per_s) : num(buf + o, len - o, NAN));
    ADD(snprintf(buf + o, len - o, ",\"samples\":%lld,\"slowdown\":%.3g,\"plan_version\":%lld,", (long long)r->samples,
                 r->slowdown, (long long)r->plan_version));
    ADD(snprintf(buf + o, len - o, "\"noise_scale\":"));
    ADD(num(buf + o, len - o, r->noise_scale));
    if (r->global_batch > 0) ADD(snprintf(buf + o, len - o, ",\"global_batch\":%d,", r->global_batch));
    else ADD(snprintf(buf + o, len - o, ",\"global_batch\":null,"));
    if (r->planned) {
        /* algorithm.goodput only */
        ADD(snprintf(buf + o, len - o, "\"efficiency\":"));
        ADD(num(buf + o, len - o, r->efficiency));
        ADD(snprintf(buf + o, len - o, ",\"lr_scale\":"));
        ADD(num(buf + o, len - o, r->lr_scale));
        ADD(snprintf(buf + o, len - o, ",\"goodput\":"));
        ADD(num(buf + o, len - o, r->kind == METRICS_STEP ? r->goodput : NAN));
        ADD(snprintf(buf + o, len - o, ",\"progress\":"));
        ADD(num(buf + o, len - o, r->progress));
        ADD(snprintf(buf + o, len - o, ",\"left_out\":%s,", r->left_out ? "true" : "false"));
    }
    if (r->kind == METRICS_STEP) {
        /* The time breakdown (common/phases.h): the phases add up to step_s. */
        ADD(snprintf(buf + o, len - o, "\"step_s\":%.6f,\"phases\":{", r->step_s));
        for (int i = 0; i < PHASE_N; i++)
            ADD(snprintf(buf + o, len - o, "%s\"%s\":%.6f", i ? "," : "", PHASE_NAMES[i], r->phase_s[i]));
        ADD(snprintf(buf + o, len - o, "},"));
        if (r->comm_measured) ADD(snprintf(buf + o, len - o, "\"comm_bytes\":%.0f,", r->comm_bytes));
        if (r->comm_measured && r->compression_ratio > 0)
            ADD(snprintf(buf + o, len - o, "\"compression_ratio\":%.6g,", r->compression_ratio));
        if (r->events)
            ADD(snprintf(buf + o, len - o, "\"events\":[%s%s%s],", r->events & STEP_EV_PLAN ? "\"plan\"" : "",
                         (r->events & STEP_EV_PLAN) && (r->events & STEP_EV_MERGE) ? "," : "",
                         r->events & STEP_EV_MERGE ? "\"merge\"" : ""));
    }
    ADD(snprintf(buf + o, len - o, "\"staleness\":"));
    ADD(staleness_to_json(&r->staleness, buf + o, len - o));
    ADD(snprintf(buf + o, len - o, ",\"test_loss\":"));
    ADD(num(buf + o, len - o, r->test_loss));
    ADD(snprintf(buf + o, len - o, ",\"test_accuracy\":"));
    ADD(num(buf + o, len - o, r->test_accuracy));
    if (r->kind != METRICS_STEP && r->train_s > 0) ADD(snprintf(buf + o, len - o, ",\"train_s\":%.6f", r->train_s));
    if (r->eval_sample[0]) {
        ADD(snprintf(buf + o, len - o, ",\"eval_sample\":"));
        ADD(str(buf + o, len - o, r->eval_sample));
    }
    ADD(snprintf(buf + o, len - o, "}"));
    return (int)o;
}

/* ---- reporter ------------------------------------------------------------------------ */

#define BATCH 256
/* a record with the longest text sample, each byte escaped (6 bytes), fits */
#define LINE (2048 + 6 * METRICS_SAMPLE_MAX)

/* Waits on m->wake (m->lock held) for at most one period. */
static void wait_period(metrics_reporter_t *m)
{
    struct timespec ts;
    clock_wall_deadline(m->period_s, &ts);
    pthread_cond_timedwait(&m->wake, &m->lock, &ts);
}

static void *reporter_main(void *arg)
{
    metrics_reporter_t *m = arg;
    static char lines[BATCH][LINE]; /* one reporter per process */
    static metrics_record_t recs[BATCH];
    const char *json[BATCH];
    pthread_mutex_lock(&m->lock);
    for (;;) {
        while (m->head == m->tail && !m->stopping) wait_period(m);
        if (m->head == m->tail && m->stopping) break;
        int n = 0;
        while (n < BATCH && m->tail + (uint64_t)n < m->head) {
            recs[n] = m->ring[(m->tail + (uint64_t)n) % METRICS_RING];
            n++;
        }
        pthread_mutex_unlock(&m->lock);

        for (int i = 0; i < n; i++) {
            if (metrics_to_json(&recs[i], m->job, lines[i], LINE) < 0) lines[i][0] = 0;
            json[i] = lines[i];
        }
        int ok = 1;
        for (int k = 0; k < m->nsinks; k++)
            if (m->sinks[k]->write(m->sinks[k], recs, json, n) != 0) ok = 0;

        pthread_mutex_lock(&m->lock);
        /* A sink that failed keeps its own bounded backlog (see the Redis sink); the ring
         * moves on either way so the training side never blocks. */
        (void)ok;
        m->tail += (uint64_t)n;
        m->sent += (uint64_t)n;
        if (!m->stopping) {
            /* Batch writes: wait one period before the next drain. */
            wait_period(m);
        }
    }
    pthread_mutex_unlock(&m->lock);
    return NULL;
}

int metrics_start(metrics_reporter_t *m, const char *job, metrics_sink_t *const *sinks, int nsinks)
{
    memset(m, 0, sizeof *m);
    pthread_mutex_init(&m->lock, NULL);
    pthread_cond_init(&m->wake, NULL);
    snprintf(m->job, sizeof m->job, "%s", job ? job : "");
    m->period_s = 0.1;
    for (int i = 0; i < nsinks && i < METRICS_MAX_SINKS; i++) m->sinks[m->nsinks++] = sinks[i];
    if (pthread_create(&m->thread, NULL, reporter_main, m) != 0) return -1;
    m->running = 1;
    return 0;
}

void metrics_push(metrics_reporter_t *m, const metrics_record_t *r)
{
    if (!m->running) return;
    pthread_mutex_lock(&m->lock);
    if (m->head - m->tail >= METRICS_RING) {
        m->dropped++;
    } else {
        m->ring[m->head % METRICS_RING] = *r;
        m->head++;
    }
    pthread_mutex_unlock(&m->lock);
}

int metrics_flush(metrics_reporter_t *m, double timeout_s)
{
    if (!m->running) return 0;
    double deadline = clock_mono_s() + timeout_s;
    pthread_mutex_lock(&m->lock);
    uint64_t target = m->head;
    pthread_mutex_unlock(&m->lock);
    for (;;) {
        /* Woken every time: the reporter batches by waiting a period after each drain. */
        pthread_mutex_lock(&m->lock);
        int handed = m->sent >= target;
        if (!handed) pthread_cond_signal(&m->wake);
        pthread_mutex_unlock(&m->lock);
        int pending = 0;
        /* The reporter thread owns the sinks' write and close; pending is the one call
         * another thread may make (each sink locks its own state). */
        for (int k = 0; handed && k < m->nsinks; k++)
            if (m->sinks[k]->pending) pending += m->sinks[k]->pending(m->sinks[k]);
        if (handed && pending == 0) return 0;
        if (clock_mono_s() >= deadline) return -1;
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
    }
}

void metrics_stop(metrics_reporter_t *m, double timeout_s)
{
    (void)timeout_s;
    if (m->running) {
        pthread_mutex_lock(&m->lock);
        m->stopping = 1;
        pthread_cond_signal(&m->wake);
        pthread_mutex_unlock(&m->lock);
        pthread_join(m->thread, NULL);
        m->running = 0;
    }
    for (int k = 0; k < m->nsinks; k++)
        if (m->sinks[k]->close) m->sinks[k]->close(m->sinks[k]);
    m->nsinks = 0;
    pthread_mutex_destroy(&m->lock);
    pthread_cond_destroy(&m->wake);
}

/* ---- file sink ----------------------------------------------------------------------- */

/* Several ranks may append to one file, so each batch goes out as ONE write() of whole
 * lines on an O_APPEND descriptor (stdio split batches at its buffer boundaries, and
 * ranks' lines interleaved mid-line). */
typedef struct {
    int fd;
    char *buf;
    size_t cap;
} file_sink_t;

static int file_write(metrics_sink_t *s, const metrics_record_t *recs, const char *const *json, int n)
{
    (void)recs;
    file_sink_t *f = s->ctx;
    size_t len = 0;
    for (int i = 0; i < n; i++) {
        size_t k = strlen(json[i]);
        if (k == 0) continue;
        if (len + k + 1 > f->cap) break; /* cannot happen: cap holds a full batch */
        memcpy(f->buf + len, json[i], k);
        len += k;
        f->buf[len++] = '\n';
    }
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(f->fd, f->buf + off, len - off);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        off += (size_t)w;
    }
    return 0;
}

static void file_close(metrics_sink_t *s)
{
    file_sink_t *f = s->ctx;
    close(f->fd);
    free(f->buf);
    free(f);
    free(s);
}

metrics_sink_t *metrics_file_sink(const char *path, char *err, size_t errlen)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
        snprintf(err, errlen, "%s: cannot open metrics file: %s", path, strerror(errno));
        return NULL;
    }
    metrics_sink_t *s = calloc(1, sizeof *s);
    file_sink_t *f = calloc(1, sizeof *f);
    char *buf = malloc((size_t)BATCH * LINE);
    if (!s || !f || !buf) {
        close(fd);
        free(s);
        free(f);
        free(buf);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    f->fd = fd;
    f->buf = buf;
    f->cap = (size_t)BATCH * LINE;
    s->write = file_write;
    s->close = file_close;
    s->ctx = f;
    return s;
}
