/* coordinator/jobhistory.c - see jobhistory.h. */
#include "jobhistory.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "coord_internal.h"
#include "jobstore.h"
#include "redis_keys.h"

enum { M_LOSS, M_SPS, M_ST_MEAN, M_ST_P95, M_BATCH, M_NOISE, M_GLOBAL, M_GOODPUT, M_N };
static const char *const M_NAMES[M_N] = {"loss",  "samples_per_s", "staleness_mean", "staleness_p95",
                                         "batch", "noise_scale",   "global_batch",   "goodput"};
/* Metrics of the workers alone: the parameter server's rank is left out of them (its
 * noise scale, from pairs of pushes, is the asynchronous family's). */
static const int M_WORKER_ONLY[M_N] = {0, 1, 1, 1, 1, 0, 1, 1};

/* One bucket of one series: its lowest and highest value and when they were seen. */
typedef struct {
    double lo, hi, tlo, thi;
    int n;
} cell_t;

/* A series' earliest and latest point: kept whatever the buckets choose, so that the
 * downsampled series spans the whole run. */
typedef struct {
    double t0, v0, t1, v1;
    int n;
} ends_t;

typedef struct {
    int seen, ps;
    double samples; /* the rank's latest cumulative sample count */
    cell_t *cells;  /* M_N x nb, allocated when the rank is first seen */
    ends_t ends[M_N];
} hrank_t;

/* One bucket of the job's loss. */
typedef struct {
    double sum_loss, sum_t, samples;
    long n;
    json_int_t epoch;
} jcell_t;

/* The evaluation that stands for one epoch, or one made between epoch ends (an "eval"
 * record, eval_every_steps: its own point, keyed by its step; see history_add). */
typedef struct {
    json_int_t epoch, step;
    double time, acc, loss, samples; /* loss NAN: the record had none */
    int rank, final;                 /* final: from a final record */
    int between;                     /* from an eval record */
    json_t *sample;                  /* its eval_sample string (a reference), or NULL */
} eval_t;

struct history {
    long points; /* per series, in force */
    int nb, jb;  /* buckets per rank series, job-loss buckets */
    double from, to, tmin, tmax;
    int nranks;
    long records;
    double job_samples;
    hrank_t *ranks;
    jcell_t *job;
    eval_t *evals; /* HISTORY_ACC_MAX, one per epoch (and eval record), in the order first seen */
    int nevals;
    int oom;
};

history_t *history_new(long points, double from, double to, int nranks)
{
    if (points < HISTORY_POINTS_MIN) points = HISTORY_POINTS_MIN;
    if (points > HISTORY_POINTS_MAX) points = HISTORY_POINTS_MAX;
    if (nranks < 1) nranks = 1;
    if (nranks > HISTORY_RANKS_MAX) nranks = HISTORY_RANKS_MAX;
    history_t *h = calloc(1, sizeof *h);
    if (!h) return NULL;
    long per = HISTORY_CELLS_MAX / nranks;
    h->points = points < per ? points : (per < HISTORY_POINTS_MIN ? HISTORY_POINTS_MIN : per);
    h->nb = (int)((h->points - 2) / 2); /* + the first and the last point */
    h->jb = (int)points;
    h->from = isfinite(from) ? from : 0;
    h->to = isfinite(to) && to > h->from ? to : h->from;
    h->tmin = INFINITY;
    h->tmax = -INFINITY;
    h->nranks = nranks;
    h->ranks = calloc((size_t)nranks, sizeof *h->ranks);
    h->job = calloc((size_t)h->jb, sizeof *h->job);
    h->evals = calloc(HISTORY_ACC_MAX, sizeof *h->evals);
    if (!h->ranks || !h->job || !h->evals) {
        history_free(h);
        return NULL;
    }
    return h;
}

void history_free(history_t *h)
{
    if (!h) return;
    for (int r = 0; h->ranks && r < h->nranks; r++) free(h->ranks[r].cells);
    free(h->ranks);
    free(h->job);
    for (int i = 0; h->evals && i < h->nevals; i++) json_decref(h->evals[i].sample);
    free(h->evals);
    free(h);
}

static int bucket(const history_t *h, double t, int n)
{
    if (!(h->to > h->from)) return 0;
    double x = (t - h->from) / (h->to - h->from) * n;
    if (!(x >= 0)) return 0;
    return x >= n ? n - 1 : (int)x;
}

/* A finite number field of o, or NAN. */
static double num(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static void cell_add(cell_t *c, ends_t *e, double t, double v)
{
    if (!isfinite(v)) return;
    if (e->n == 0 || t < e->t0) e->t0 = t, e->v0 = v;
    if (e->n == 0 || t >= e->t1) e->t1 = t, e->v1 = v;
    e->n++;
    if (c->n == 0 || v < c->lo) c->lo = v, c->tlo = t;
    if (c->n == 0 || v > c->hi) c->hi = v, c->thi = t;
    c->n++;
}

/* The accuracy series: one evaluation per epoch, the one of the rank that made
 * it. A record carries an evaluation when its test_accuracy is a number (the worker writes
 * it only into the record of the rank that evaluated, in the epoch record of the epoch it
 * ends: worker/train.c). Per epoch, the latest epoch record's evaluation stands: an attempt
 * resumed from a checkpoint evaluates again the epochs it trains again, and the run went
 * on from that evaluation. A final record's counts only for an epoch that has no epoch
 * record (a run resumed after its last epoch end evaluates the restored weights; the
 * epoch record of that epoch can be lost with the attempt that ended it). Streams written
 * before this rule hold final records of ranks that evaluated nothing, with 0, labelled
 * with an epoch the evaluating rank reported in an epoch record, or with epoch 0: epochs
 * below 1 carry no evaluation, and such a final record never replaces an epoch record. */
static void add_eval(history_t *h, json_t *rec, int rank, double t, int final, int between)
{
    double acc = num(rec, "test_accuracy");
    json_t *ej = json_object_get(rec, "epoch"), *sj = json_object_get(rec, "step");
    if (!isfinite(acc) || !json_is_integer(ej) || json_integer_value(ej) < 1) return;
    if (between && !json_is_integer(sj)) return;
    json_int_t epoch = json_integer_value(ej), step = between ? json_integer_value(sj) : 0;
    eval_t *e = NULL;
    /* From the newest: a resumed attempt re-evaluates recent epochs (and steps). */
    for (int i = h->nevals - 1; i >= 0 && !e; i--)
        if (h->evals[i].epoch == epoch && h->evals[i].between == between && h->evals[i].step == step) e = &h->evals[i];
    if (e && ((final && !e->final) || (final == e->final && t < e->time))) return;
    if (!e) {
        if (h->nevals >= HISTORY_ACC_MAX) return;
        e = &h->evals[h->nevals++];
    } else json_decref(e->sample);
    json_t *sample = json_object_get(rec, "eval_sample");
    const int keep = json_is_string(sample) && json_string_length(sample) <= HISTORY_SAMPLE_MAX;
    *e = (eval_t){.sample = keep ? json_incref(sample) : NULL,
                  .epoch = epoch,
                  .step = step,
                  .between = between,
                  .time = t,
                  .acc = acc,
                  .loss = num(rec, "test_loss"),
                  .samples = h->job_samples,
                  .rank = rank,
                  .final = final};
}

static int eval_cmp(const void *a, const void *b)
{
    const eval_t *x = a, *y = b;
    /* an epoch's evaluations between epoch ends (by step) before its epoch-end one */
    if (x->epoch != y->epoch) return (x->epoch > y->epoch) - (x->epoch < y->epoch);
    if (x->between != y->between) return x->between ? -1 : 1;
    return (x->step > y->step) - (x->step < y->step);
}

void history_add(history_t *h, json_t *rec)
{
    if (!h || h->oom || !json_is_object(rec)) return;
    json_t *rk = json_object_get(rec, "rank");
    const char *kind = json_string_value(json_object_get(rec, "kind"));
    double t = num(rec, "time");
    if (!json_is_integer(rk) || !kind || !isfinite(t)) return;
    json_int_t rank = json_integer_value(rk);
    if (rank < 0 || rank >= h->nranks) return;
    hrank_t *R = &h->ranks[rank];
    const char *role = json_string_value(json_object_get(rec, "role"));
    if (role) R->ps = strcmp(role, "ps") == 0;
    h->records++;
    if (t < h->tmin) h->tmin = t;
    if (t > h->tmax) h->tmax = t;
    if (strcmp(kind, "epoch") == 0 || strcmp(kind, "final") == 0 || strcmp(kind, "eval") == 0)
        add_eval(h, rec, (int)rank, t, kind[0] == 'f', kind[1] == 'v');
    if (strcmp(kind, "step") != 0) return;
    if (!R->cells) {
        R->cells = calloc((size_t)M_N * (size_t)h->nb, sizeof *R->cells);
        if (!R->cells) {
            h->oom = 1;
            return;
        }
    }
    R->seen = 1;
    json_t *st = json_object_get(rec, "staleness");
    double v[M_N] = {num(rec, "loss"),  num(rec, "samples_per_s"), num(st, "mean"),          num(st, "p95"),
                     num(rec, "batch"), num(rec, "noise_scale"),   num(rec, "global_batch"), num(rec, "goodput")};
    int b = bucket(h, t, h->nb);
    for (int m = 0; m < M_N; m++)
        if (!(R->ps && M_WORKER_ONLY[m])) cell_add(&R->cells[m * h->nb + b], &R->ends[m], t, v[m]);
    if (R->ps) return;
    double samples = num(rec, "samples");
    if (isfinite(samples) && samples >= 0) {
        /* A rank's count is cumulative over its process: one that went down began again
         * (a restarted or resized attempt), and all of it is new work. */
        h->job_samples += samples >= R->samples ? samples - R->samples : samples;
        R->samples = samples;
    }
    if (!isfinite(v[M_LOSS])) return;
    jcell_t *j = &h->job[bucket(h, t, h->jb)];
    j->sum_loss += v[M_LOSS];
    j->sum_t += t;
    j->n++;
    j->samples = h->job_samples;
    json_int_t ep = json_integer_value(json_object_get(rec, "epoch"));
    if (ep > j->epoch) j->epoch = ep;
}

/* Appends (t, v) to a series' two arrays. */
static int put(json_t *ts, json_t *vs, double t, double v)
{
    return json_array_append_new(ts, json_real(t)) | json_array_append_new(vs, json_real(v));
}

static json_t *rank_series(const history_t *h, int r, int m)
{
    const hrank_t *R = &h->ranks[r];
    const ends_t *e = &R->ends[m];
    json_t *ts = json_array(), *vs = json_array();
    int bad = !ts || !vs;
    if (!e->n) bad = 1;
    else bad |= put(ts, vs, e->t0, e->v0);
    /* Each bucket's extremes in time order, strictly between the first and last point. */
    for (int b = 0; !bad && b < h->nb; b++) {
        const cell_t *c = &R->cells[m * h->nb + b];
        if (!c->n) continue;
        double ta = c->tlo, va = c->lo, tb = c->thi, vb = c->hi;
        if (tb < ta) ta = c->thi, va = c->hi, tb = c->tlo, vb = c->lo;
        if (ta > e->t0 && ta < e->t1) bad |= put(ts, vs, ta, va);
        if (tb != ta && tb > e->t0 && tb < e->t1) bad |= put(ts, vs, tb, vb);
    }
    if (!bad && e->t1 > e->t0) bad |= put(ts, vs, e->t1, e->v1);
    if (bad || json_array_size(ts) == 0) {
        json_decref(ts);
        json_decref(vs);
        return NULL;
    }
    return json_pack("{s:i, s:s, s:o, s:o}", "rank", r, "role", R->ps ? "ps" : "worker", "t", ts, "v", vs);
}

json_t *history_json(const history_t *h)
{
    if (!h || h->oom) return NULL;
    json_t *series = json_object(), *ranks = json_array();
    json_t *jt = json_array(), *jl = json_array(), *js = json_array(), *je = json_array(), *acc = json_array();
    json_t *out = NULL;
    if (!series || !ranks || !jt || !jl || !js || !je || !acc) goto fail;
    for (int m = 0; m < M_N; m++) {
        json_t *list = json_array();
        if (!list || json_object_set_new(series, M_NAMES[m], list) != 0) goto fail;
        for (int r = 0; r < h->nranks; r++) {
            if (!h->ranks[r].seen) continue;
            json_t *s = rank_series(h, r, m);
            if (s && json_array_append_new(list, s) != 0) goto fail;
        }
    }
    for (int r = 0; r < h->nranks; r++)
        if (h->ranks[r].seen || h->ranks[r].cells)
            json_array_append_new(ranks, json_pack("{s:i, s:s}", "rank", r, "role", h->ranks[r].ps ? "ps" : "worker"));
    for (int b = 0; b < h->jb; b++) {
        const jcell_t *j = &h->job[b];
        if (!j->n) continue;
        json_array_append_new(jt, json_real(j->sum_t / (double)j->n));
        json_array_append_new(jl, json_real(j->sum_loss / (double)j->n));
        json_array_append_new(js, json_real(j->samples));
        json_array_append_new(je, json_integer(j->epoch));
    }
    /* In epoch order (a copy: history_json leaves h as it is). */
    eval_t *ev = h->nevals ? malloc((size_t)h->nevals * sizeof *ev) : NULL;
    if (h->nevals && !ev) goto fail;
    if (ev) memcpy(ev, h->evals, (size_t)h->nevals * sizeof *ev);
    if (ev) qsort(ev, (size_t)h->nevals, sizeof *ev, eval_cmp);
    for (int i = 0; i < h->nevals; i++) {
        json_t *e = json_pack("{s:I, s:f, s:f, s:f, s:i}", "epoch", ev[i].epoch, "time", ev[i].time, "test_accuracy",
                              ev[i].acc, "samples", ev[i].samples, "rank", ev[i].rank);
        if (e && isfinite(ev[i].loss)) json_object_set_new(e, "test_loss", json_real(ev[i].loss));
        if (e && ev[i].between) json_object_set_new(e, "step", json_integer(ev[i].step));
        if (e && ev[i].sample) json_object_set(e, "eval_sample", ev[i].sample);
        if (!e || json_array_append_new(acc, e) != 0) {
            free(ev);
            goto fail;
        }
    }
    free(ev);
    int any = h->records > 0;
    out = json_pack("{s:I, s:I, s:o, s:o, s:o, s:o, s:{s:o, s:o, s:o, s:o}, s:o}", "points", (json_int_t)h->points,
                    "records", (json_int_t)h->records, "from", any ? json_real(h->tmin) : json_null(), "to",
                    any ? json_real(h->tmax) : json_null(), "ranks", ranks, "series", series, "job_loss", "t", jt,
                    "loss", jl, "samples", js, "epoch", je, "accuracy", acc);
    return out; /* json_pack's "o" took the references, whether or not it succeeded */
fail:
    json_decref(series);
    json_decref(ranks);
    json_decref(jt);
    json_decref(jl);
    json_decref(js);
    json_decref(je);
    json_decref(acc);
    return NULL;
}

/* The "time" of a one-entry XRANGE/XREVRANGE reply and its id; 0 when the stream is empty. */
static int edge(const redisReply *r, double *t, char *id, size_t len)
{
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 1) return 0;
    const redisReply *e = r->element[0];
    if (e->type != REDIS_REPLY_ARRAY || e->elements != 2 || !reply_str(e->element[0])) return 0;
    snprintf(id, len, "%s", reply_str(e->element[0]));
    const redisReply *f = e->element[1];
    *t = NAN;
    for (size_t i = 0; f->type == REDIS_REPLY_ARRAY && i + 1 < f->elements; i += 2) {
        const char *name = reply_str(f->element[i]), *val = reply_str(f->element[i + 1]);
        if (!name || !val || strcmp(name, "json") != 0) continue;
        json_t *o = json_loads(val, 0, NULL);
        *t = num(o, "time");
        json_decref(o);
    }
    return 1;
}

/* Reads stream key in pages of HISTORY_PAGE from its start up to the entry id `last`, at
 * most `max` entries, into h; with a finite `before`, only records earlier than it. *next
 * becomes the id of the last entry read; *total counts the entries. 0, or -1 when Redis
 * failed (*broken: the connection is unusable). */
static int read_stream(redisContext *rc, const char *key, const char *last, long max, double before, history_t *h,
                       char *next, size_t nlen, long *total, int *broken)
{
    char start[72];
    snprintf(start, sizeof start, "-");
    *total = 0;
    while (*total < max) {
        redisReply *r = redisCommand(rc, "XRANGE %s %s %s COUNT %d", key, start, last, HISTORY_PAGE);
        if (!r || r->type != REDIS_REPLY_ARRAY) {
            *broken = !r;
            if (r) freeReplyObject(r);
            return -1;
        }
        for (size_t k = 0; k < r->elements; k++) {
            const redisReply *e = r->element[k];
            if (e->type != REDIS_REPLY_ARRAY || e->elements != 2 || !reply_str(e->element[0])) continue;
            snprintf(next, nlen, "%s", reply_str(e->element[0]));
            const redisReply *f = e->element[1];
            for (size_t i = 0; f->type == REDIS_REPLY_ARRAY && i + 1 < f->elements; i += 2) {
                const char *name = reply_str(f->element[i]), *val = reply_str(f->element[i + 1]);
                if (!name || !val || strcmp(name, "json") != 0) continue;
                json_t *o = json_loads(val, 0, NULL);
                if (!isfinite(before) || num(o, "time") < before) history_add(h, o);
                json_decref(o);
            }
        }
        *total += (long)r->elements;
        int done = r->elements < HISTORY_PAGE || strcmp(next, last) == 0;
        freeReplyObject(r);
        if (done) break;
        snprintf(start, sizeof start, "(%s", next);
    }
    return 0;
}

/* Answers reused: a job's history changes only when its streams do (appended: the last
 * id moves; trimmed: the first one does), so an answer is kept with the four stream
 * edges and the points it was built for, and reused while they are what they were (a
 * finished job's never change: reopened pages and the compare view cost one round trip).
 * HISTORY_CACHE answers, the least recently used replaced; only answers of at most
 * HISTORY_CACHE_POINTS points per series (the dashboard's 1000) are kept. Shared by
 * reference and never modified (jansson allows concurrent reads). */
#define HISTORY_CACHE 8
#define HISTORY_CACHE_POINTS 1000
static struct {
    char key[400];
    json_t *body;
    unsigned long used;
} cache[HISTORY_CACHE];
static unsigned long cache_clock;
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;

static json_t *cache_get(const char *key)
{
    json_t *hit = NULL;
    pthread_mutex_lock(&cache_lock);
    for (int i = 0; i < HISTORY_CACHE && !hit; i++)
        if (cache[i].body && strcmp(cache[i].key, key) == 0) {
            cache[i].used = ++cache_clock;
            hit = json_incref(cache[i].body);
        }
    pthread_mutex_unlock(&cache_lock);
    return hit;
}

static void cache_put(const char *key, json_t *body)
{
    pthread_mutex_lock(&cache_lock);
    /* The same key (two requests missed at once), else an empty slot, else the least
     * recently used. */
    int v = 0;
    for (int i = 0; i < HISTORY_CACHE; i++) {
        if (cache[i].body && strcmp(cache[i].key, key) == 0) {
            v = i;
            break;
        }
        if (cache[v].body && (!cache[i].body || cache[i].used < cache[v].used)) v = i;
    }
    json_decref(cache[v].body);
    snprintf(cache[v].key, sizeof cache[v].key, "%s", key);
    cache[v].body = json_incref(body);
    cache[v].used = ++cache_clock;
    pthread_mutex_unlock(&cache_lock);
}

int coord_history(coordinator_t *c, const char *id, long points, json_t **out)
{
    *out = NULL;
    if (!job_id_valid(id)) return COORD_ENOTFOUND;
    char err[256], key[160], ckey[160], first[64] = "", last[64] = "", cfirst[64] = "", clast[64] = "";
    char next[64] = "0", cnext[64] = "0";
    redisContext *rc = jobstore_pool_get(c->pool, err, sizeof err);
    if (!rc) return COORD_EUNAVAIL;
    int code = COORD_EUNAVAIL, broken = 0;
    history_t *h = NULL;
    redisReply *a = NULL, *z = NULL, *ca = NULL, *cz = NULL, *r = NULL;
    snprintf(key, sizeof key, KEY_JOB, id);
    r = redisCommand(rc, "HMGET %s state world workers", key);
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 3) {
        broken = !r;
        goto out;
    }
    if (!reply_str(r->element[0])) {
        code = COORD_ENOTFOUND;
        goto out;
    }
    /* Metrics come from ranks 0 .. world-1: the spec's world (workers, + 1 for the
     * parameter server), never more. */
    long world = reply_str(r->element[1]) ? strtol(reply_str(r->element[1]), NULL, 10) : 1;
    long workers = reply_str(r->element[2]) ? strtol(reply_str(r->element[2]), NULL, 10) : 1;
    if (workers + 1 > world) world = workers + 1;
    freeReplyObject(r);
    r = NULL;
    /* The full stream (the newest records) and the coarse one (the whole run, thinned:
     * worker/redis_report.h), each up to its newest entry now. */
    snprintf(key, sizeof key, KEY_JOB_METRICS, id);
    snprintf(ckey, sizeof ckey, KEY_JOB_METRICS_COARSE, id);
    a = redisCommand(rc, "XRANGE %s - + COUNT 1", key);
    z = redisCommand(rc, "XREVRANGE %s + - COUNT 1", key);
    ca = redisCommand(rc, "XRANGE %s - + COUNT 1", ckey);
    cz = redisCommand(rc, "XREVRANGE %s + - COUNT 1", ckey);
    if (!a || !z || !ca || !cz || a->type != REDIS_REPLY_ARRAY || z->type != REDIS_REPLY_ARRAY ||
        ca->type != REDIS_REPLY_ARRAY || cz->type != REDIS_REPLY_ARRAY) {
        broken = !a || !z || !ca || !cz;
        goto out;
    }
    double t0 = NAN, t1 = NAN, c0 = NAN, c1 = NAN;
    int have = edge(a, &t0, first, sizeof first) && edge(z, &t1, last, sizeof last);
    int chave = edge(ca, &c0, cfirst, sizeof cfirst) && edge(cz, &c1, clast, sizeof clast);
    /* The coarse stream adds what the full one has trimmed: its records before the full
     * stream's first. */
    int ccount = chave && (!have || !(c0 >= t0));
    char ckey_s[400];
    snprintf(ckey_s, sizeof ckey_s, "%s %ld %s %s %s %s", id, points, have ? first : "-", have ? last : "-",
             chave ? cfirst : "-", chave ? clast : "-");
    if ((*out = cache_get(ckey_s)) != NULL) {
        code = COORD_OK;
        goto out;
    }
    double from = ccount ? c0 : t0, to = have ? t1 : c1;
    h = history_new(points, from, to, (int)(world < 1 ? 1 : world > HISTORY_RANKS_MAX ? HISTORY_RANKS_MAX : world));
    if (!h) {
        code = COORD_EINTERNAL;
        goto out;
    }
    long ctotal = 0, total = 0;
    if (ccount && read_stream(rc, ckey, clast, HISTORY_COARSE_MAX, have ? t0 : NAN, h, cnext, sizeof cnext, &ctotal,
                              &broken) != 0)
        goto out;
    if (have && read_stream(rc, key, last, HISTORY_ENTRIES_MAX, NAN, h, next, sizeof next, &total, &broken) != 0)
        goto out;
    json_t *body = history_json(h);
    if (!body) {
        code = COORD_EINTERNAL;
        goto out;
    }
    json_object_set_new(body, "job", json_string(id));
    json_object_set_new(body, "next", json_string(next));
    json_object_set_new(body, "truncated",
                        json_boolean((total >= HISTORY_ENTRIES_MAX && strcmp(next, last) != 0) ||
                                     (ctotal >= HISTORY_COARSE_MAX && strcmp(cnext, clast) != 0)));
    if (points <= HISTORY_CACHE_POINTS) cache_put(ckey_s, body);
    *out = body;
    code = COORD_OK;
out:
    if (r) freeReplyObject(r);
    if (a) freeReplyObject(a);
    if (z) freeReplyObject(z);
    if (ca) freeReplyObject(ca);
    if (cz) freeReplyObject(cz);
    history_free(h);
    jobstore_pool_put(c->pool, rc, broken);
    return code;
}
