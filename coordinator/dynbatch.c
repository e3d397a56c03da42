/* coordinator/dynbatch.c - see dynbatch.h. */
#include "dynbatch.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "clock.h"
#include "clog.h"
#include "jobstore.h"
#include "planner.h"
#include "record_fields.h"

/* MPI rank of worker w. */
static int dynbatch_rank_of(const job_spec_t *s, int w) { return spec_is_async(s) ? w + 1 : w; }

static double slowdown_of(const job_spec_t *s, int w)
{
    if (w < s->emulate.nslowdown && s->emulate.slowdown[w] >= 1.0) return s->emulate.slowdown[w];
    return 1.0;
}

void dynbatch_parse_assignment(const redisReply *r, int n, int dflt, int *cur, long long *version)
{
    for (int i = 0; i < n; i++) cur[i] = dflt;
    *version = 0;
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2 || !reply_str(r->element[0])) return;
    long long v = reply_int(r->element[0], 0);
    *version = v > 0 ? v : 0;
    const redisReply *b = r->element[1];
    json_t *arr = b && b->type == REDIS_REPLY_STRING ? json_loadb(b->str, b->len, 0, NULL) : NULL;
    if (json_is_array(arr) && json_array_size(arr) == (size_t)n) {
        for (int i = 0; i < n; i++) {
            json_int_t e = json_integer_value(json_array_get(arr, (size_t)i));
            if (e > 0 && e <= INT_MAX) cur[i] = (int)e;
        }
    }
    json_decref(arr);
}

/* The job's global batch: the spec's workers x batch_size, whatever n runs it now. */
static int global_batch(const job_spec_t *s) { return s->workers * s->batch_size; }

/* Reads the stored assignment into cur (n entries); *version = 0 and cur = the even split
 * when there is none or it does not fit n workers. */
static int read_assignment(redisContext *c, const char *id, const job_spec_t *s, int n, int *cur, long long *version)
{
    char key[160];
    snprintf(key, sizeof key, KEY_JOB_ASSIGNMENT, id);
    redisReply *r = redisCommand(c, "HMGET %s version batches", key);
    if (!r) return JS_EREDIS;
    dynbatch_parse_assignment(r, n, 0, cur, version);
    freeReplyObject(r);
    long long sum = 0;
    for (int i = 0; i < n; i++) sum += cur[i] > 0 ? cur[i] : -(long long)INT_MAX;
    if (sum != global_batch(s)) planner_even(global_batch(s), n, cur);
    return JS_OK;
}

static int write_assignment(redisContext *c, const char *id, const int *b, int n, long long version, const char *source)
{
    char key[160], ver[32], t[32];
    json_t *arr = json_array();
    for (int i = 0; arr && i < n; i++) json_array_append_new(arr, json_integer(b[i]));
    char *text = arr ? json_dumps(arr, JSON_COMPACT) : NULL;
    json_t *ev = json_pack("{s:s, s:s, s:I, s:O, s:s, s:f}", "type", "plan", "job", id, "version", (json_int_t)version,
                           "batches", arr, "source", source, "time", clock_wall_s());
    json_decref(arr);
    if (!text || !ev) {
        free(text);
        json_decref(ev);
        return JS_ENOMEM;
    }
    snprintf(key, sizeof key, KEY_JOB_ASSIGNMENT, id);
    snprintf(ver, sizeof ver, "%lld", version);
    snprintf(t, sizeof t, "%.3f", clock_wall_s());
    redisReply *r = redisCommand(c, "HSET %s version %s batches %s time %s source %s", key, ver, text, t, source);
    free(text);
    int rc = !r ? JS_EREDIS : r->type == REDIS_REPLY_ERROR ? JS_EREDIS : JS_OK;
    if (r) freeReplyObject(r);
    if (rc == JS_OK) rc = jobstore_event(c, ev);
    json_decref(ev);
    return rc;
}

int dynbatch_replan(redisContext *c, const char *id, const job_spec_t *s, int n)
{
    if (n < 1) return JS_OK;
    double *speed = calloc((size_t)n, sizeof *speed);
    int *cur = calloc((size_t)n, sizeof *cur), *out = calloc((size_t)n, sizeof *out);
    int rc = JS_ENOMEM, known = 1;
    long long version;
    if (!speed || !cur || !out) goto done;
    for (int w = 0; w < n; w++) {
        char key[160];
        snprintf(key, sizeof key, KEY_JOB_NODE, id, dynbatch_rank_of(s, w));
        redisAppendCommand(c, "HGET %s %s", key, RECORD_FIELDS[RF_SAMPLES_PER_S].name);
    }
    rc = JS_OK;
    for (int w = 0; w < n; w++) {
        redisReply *r = NULL;
        if (redisGetReply(c, (void **)&r) != REDIS_OK || !r) {
            rc = JS_EREDIS;
            goto done;
        }
        speed[w] = dynbatch_parse_speed(r);
        if (!(speed[w] > 0)) known = 0;
        freeReplyObject(r);
    }
    if (!known) goto done;
    if ((rc = read_assignment(c, id, s, n, cur, &version)) != JS_OK) goto done;
    /* The workers' rule (common/planner.h): their bounds (for n workers), their 5% trigger. */
    int min_b, max_b;
    planner_bounds_world(s, n, &min_b, &max_b);
    int changed = planner_replan(speed, cur, n, global_batch(s), min_b, max_b, out);
    if (changed == 1) {
        rc = write_assignment(c, id, out, n, version + 1, "planner");
        if (rc == JS_OK) rc = 1;
    } else if (changed < 0) {
        static int warned;
        if (!warned++)
            clog_printf("job %s: the planner refused the bounds (min %d, max %d, %d workers, global batch %d)", id,
                        min_b, max_b, n, global_batch(s));
    }
done:
    free(speed);
    free(cur);
    free(out);
    return rc;
}

double dynbatch_parse_speed(const redisReply *r)
{
    double v = reply_double(r, 0);
    return v > 0 && isfinite(v) ? v : 0;
}

int dynbatch_parse_node(const redisReply *rep, char *host, size_t hostlen, char *dev, size_t devlen, double *speed)
{
    if (!rep || rep->type != REDIS_REPLY_ARRAY || rep->elements != 5) return 0;
    const char *h = reply_str(rep->element[0]), *d = reply_str(rep->element[1]);
    const char *role = reply_str(rep->element[4]);
    double v = reply_double(rep->element[2], 0), sd = reply_double(rep->element[3], 1);
    /* strlen, not the reply's len: a name with a NUL inside is cut there, as a key would be */
    if (!h || !*h || !d || !*d || !(v > 0) || !isfinite(v) || (role && strcmp(role, "ps") == 0) ||
        strlen(h) >= hostlen || strlen(d) >= devlen)
        return 0;
    /* The profile describes the machine: undo the emulated slowdown (>= 1, finite). */
    if (sd >= 1 && isfinite(sd)) v *= sd;
    if (!isfinite(v)) return 0;
    snprintf(host, hostlen, "%s", h);
    snprintf(dev, devlen, "%s", d);
    *speed = v;
    return 1;
}

/* The profile of s's model on host and device: a bf16 job's CPU ranks have their own
 * (spec_profile_device) */
static void profile_key(char *buf, size_t len, const char *host, const char *device, const job_spec_t *s)
{
    char dev[32];
    spec_profile_device(s, device, dev, sizeof dev);
    snprintf(buf, len, KEY_PROFILE, host, dev, s->model);
}

/* Speeds from the stored profiles of the workers' hosts into speed (n): 1 when every
 * worker's host has one, 0 when one is missing, JS_EREDIS. */
static int profile_speeds(redisContext *c, const job_spec_t *s, int n, const char *const *rank_host, double *speed)
{
    /* "auto" runs on the GPU where there is one: prefer a cuda profile, else cpu. */
    static const char *const AUTO[] = {"cuda", "cpu"};
    for (int w = 0; w < n; w++) {
        const char *devs[2];
        int ndev = 0;
        if (strcmp(s->device, "auto") == 0) {
            devs[0] = AUTO[0];
            devs[1] = AUTO[1];
            ndev = 2;
        } else {
            devs[ndev++] = s->device;
        }
        speed[w] = 0;
        for (int d = 0; d < ndev && speed[w] <= 0; d++) {
            char key[512];
            profile_key(key, sizeof key, rank_host[dynbatch_rank_of(s, w)], devs[d], s);
            redisReply *r = redisCommand(c, "HGET %s samples_per_s", key);
            if (!r) return JS_EREDIS;
            speed[w] = dynbatch_parse_speed(r) / slowdown_of(s, w);
            freeReplyObject(r);
        }
        if (!(speed[w] > 0) || !isfinite(speed[w])) return 0;
    }
    return 1;
}

int dynbatch_initial(redisContext *c, const char *id, const job_spec_t *s, int n, const char *const *rank_host)
{
    if (n < 1) return JS_OK;
    double *speed = calloc((size_t)n, sizeof *speed);
    int *cur = calloc((size_t)n, sizeof *cur), *out = calloc((size_t)n, sizeof *out);
    int rc = JS_ENOMEM;
    long long version;
    if (!speed || !cur || !out) goto done;
    if ((rc = read_assignment(c, id, s, n, cur, &version)) != JS_OK) goto done;
    if (version > 0) goto done;                                           /* a plan exists (a restart): it stays */
    if ((rc = profile_speeds(c, s, n, rank_host, speed)) != 1) goto done; /* 0: a profile is missing */
    rc = JS_OK;
    int min_b, max_b;
    planner_bounds_world(s, n, &min_b, &max_b);
    if (planner_assign(speed, cur, n, global_batch(s), min_b, max_b, 0.0, out) < 0) goto done;
    rc = write_assignment(c, id, out, n, 1, "profile");
    if (rc == JS_OK) rc = 1;
done:
    free(speed);
    free(cur);
    free(out);
    return rc;
}

int dynbatch_resize(redisContext *c, const char *id, const job_spec_t *s, int n, const char *const *rank_host)
{
    if (n < 1) return JS_OK;
    double *speed = calloc((size_t)n, sizeof *speed);
    int *cur = calloc((size_t)n, sizeof *cur), *out = calloc((size_t)n, sizeof *out);
    int rc = JS_ENOMEM;
    long long version;
    if (!speed || !cur || !out) goto done;
    if ((rc = read_assignment(c, id, s, n, cur, &version)) != JS_OK) goto done;
    planner_even(global_batch(s), n, cur);
    int known = rank_host ? profile_speeds(c, s, n, rank_host, speed) : 0;
    if (known < 0) {
        rc = known;
        goto done;
    }
    int min_b, max_b;
    planner_bounds_world(s, n, &min_b, &max_b);
    if (!known || planner_assign(speed, cur, n, global_batch(s), min_b, max_b, 0.0, out) < 0)
        memcpy(out, cur, sizeof *out * (size_t)n);
    rc = write_assignment(c, id, out, n, version + 1, "resize");
    if (rc == JS_OK) rc = 1;
done:
    free(speed);
    free(cur);
    free(out);
    return rc;
}

int dynbatch_fold_profiles(redisContext *c, const char *id, const job_spec_t *s, int world)
{
    typedef struct {
        char host[64], device[16];
        double sum;
        int n;
    } group_t;
    group_t *g = calloc((size_t)world, sizeof *g);
    int ng = 0, rc = 0;
    if (!g) return JS_ENOMEM;
    for (int r = 0; r < world; r++) {
        char key[160];
        snprintf(key, sizeof key, KEY_JOB_NODE, id, r);
        /* in the order dynbatch_parse_node reads them */
        redisAppendCommand(c, "HMGET %s %s %s %s %s %s", key, RECORD_FIELDS[RF_HOST].name,
                           RECORD_FIELDS[RF_DEVICE].name, RECORD_FIELDS[RF_SAMPLES_PER_S].name,
                           RECORD_FIELDS[RF_SLOWDOWN].name, RECORD_FIELDS[RF_ROLE].name);
    }
    for (int r = 0; r < world; r++) {
        redisReply *rep = NULL;
        if (redisGetReply(c, (void **)&rep) != REDIS_OK || !rep) {
            rc = JS_EREDIS;
            continue; /* the remaining replies are gone with the connection */
        }
        char host[64], dev[16];
        double v;
        if (rc == 0 && dynbatch_parse_node(rep, host, sizeof host, dev, sizeof dev, &v) == 1) {
            int k = 0;
            while (k < ng && (strcmp(g[k].host, host) || strcmp(g[k].device, dev))) k++;
            if (k == ng) {
                snprintf(g[k].host, sizeof g[k].host, "%s", host);
                snprintf(g[k].device, sizeof g[k].device, "%s", dev);
                ng++;
            }
            g[k].sum += v;
            g[k].n++;
        }
        freeReplyObject(rep);
    }
    for (int k = 0; rc == 0 && k < ng; k++) {
        char key[512], val[32], t[32];
        double v = g[k].sum / g[k].n;
        char dev[32];
        spec_profile_device(s, g[k].device, dev, sizeof dev);
        profile_key(key, sizeof key, g[k].host, g[k].device, s);
        redisReply *r = redisCommand(c, "HGET %s samples_per_s", key);
        if (!r) {
            rc = JS_EREDIS;
            break;
        }
        double old = dynbatch_parse_speed(r);
        freeReplyObject(r);
        if (old > 0) v = (1 - DYNBATCH_PROFILE_ALPHA) * old + DYNBATCH_PROFILE_ALPHA * v;
        snprintf(val, sizeof val, "%.1f", v);
        snprintf(t, sizeof t, "%.3f", clock_wall_s());
        redisAppendCommand(c, "HSET %s samples_per_s %s updated %s host %s device %s model %s", key, val, t, g[k].host,
                           dev, s->model);
        redisAppendCommand(c, "HINCRBY %s jobs 1", key);
        redisAppendCommand(c, "SADD %s %s", KEY_PROFILES, key);
        for (int i = 0; i < 3; i++) {
            redisReply *x = NULL;
            if (redisGetReply(c, (void **)&x) != REDIS_OK || !x) {
                rc = JS_EREDIS;
                break;
            }
            freeReplyObject(x);
        }
    }
    free(g);
    return rc < 0 ? rc : ng;
}
