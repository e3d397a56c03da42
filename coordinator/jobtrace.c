/* coordinator/jobtrace.c - see jobtrace.h. */
#include "jobtrace.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "coord_internal.h"
#include "jobstore.h"
#include "phases.h"
#include "redis_keys.h"

/* The order slices are laid out in within a step. */
static const phase_t LAYOUT[PHASE_N] = {
    PHASE_DATA, PHASE_COMPUTE, PHASE_EMULATED, PHASE_WAIT, PHASE_COMPRESS, PHASE_COMM, PHASE_OPTIMIZER, PHASE_OTHER,
};

static double us(double t, double origin) { return round((t - origin) * 1e9) / 1e3; }

/* A usable step record: kind "step", a rank in range, finite time, step_s >= 0 and a
 * phases object. */
static int usable(json_t *r)
{
    const char *kind = json_string_value(json_object_get(r, "kind"));
    json_t *rank = json_object_get(r, "rank");
    double t = json_number_value(json_object_get(r, "time"));
    double w = json_number_value(json_object_get(r, "step_s"));
    return kind && strcmp(kind, "step") == 0 && json_is_integer(rank) && json_integer_value(rank) >= 0 &&
           json_integer_value(rank) < TRACE_RANKS_MAX && isfinite(t) && t > 0 &&
           json_is_number(json_object_get(r, "step_s")) && isfinite(w) && w >= 0 && w < 1e6 &&
           json_is_object(json_object_get(r, "phases"));
}

static json_t *instant(const char *name, double ts, int tid, json_int_t step)
{
    return json_pack("{s:s, s:s, s:s, s:s, s:f, s:i, s:i, s:{s:I}}", "name", name, "cat", "event", "ph", "i", "s", "t",
                     "ts", ts, "pid", 1, "tid", tid, "args", "step", step);
}

json_t *trace_from_records(json_t *records, long steps, const char *job)
{
    size_t n = json_array_size(records);
    /* Per rank, the index of the first record kept: walk newest to oldest counting. */
    long *count = calloc(TRACE_RANKS_MAX, sizeof *count);
    unsigned char *keep = calloc(n ? n : 1, 1);
    json_t *events = json_array();
    json_t *out = NULL;
    if (!count || !keep || !events) goto done;
    double origin = INFINITY;
    for (size_t k = n; k-- > 0;) {
        json_t *r = json_array_get(records, k);
        if (!usable(r)) continue;
        json_int_t rank = json_integer_value(json_object_get(r, "rank"));
        if (count[rank] >= steps) continue;
        count[rank]++;
        keep[k] = 1;
        double start = json_number_value(json_object_get(r, "time")) - json_number_value(json_object_get(r, "step_s"));
        if (start < origin) origin = start;
    }
    json_array_append_new(events, json_pack("{s:s, s:s, s:i, s:i, s:{s:s+}}", "name", "process_name", "ph", "M", "pid",
                                            1, "tid", 0, "args", "name", "pacer job ", job ? job : ""));
    /* Per rank: where its track ends, its last step count, whether it is named. */
    double *end = calloc(TRACE_RANKS_MAX, sizeof *end);
    json_int_t *last_step = calloc(TRACE_RANKS_MAX, sizeof *last_step);
    if (!end || !last_step) {
        free(end);
        free(last_step);
        goto done;
    }
    for (size_t k = 0; k < n; k++) {
        if (!keep[k]) continue;
        json_t *r = json_array_get(records, k);
        int rank = (int)json_integer_value(json_object_get(r, "rank"));
        json_int_t step = json_integer_value(json_object_get(r, "step"));
        double t = json_number_value(json_object_get(r, "time"));
        double wall = json_number_value(json_object_get(r, "step_s"));
        json_t *ph = json_object_get(r, "phases");
        if (count[rank] > 0) {
            /* First record of this rank: name its track. */
            const char *host = json_string_value(json_object_get(r, "host"));
            const char *role = json_string_value(json_object_get(r, "role"));
            char label[300];
            snprintf(label, sizeof label, "rank %d (%s, %s)", rank, host ? host : "?", role ? role : "worker");
            json_array_append_new(events, json_pack("{s:s, s:s, s:i, s:i, s:{s:s}}", "name", "thread_name", "ph", "M",
                                                    "pid", 1, "tid", rank, "args", "name", label));
            json_array_append_new(events, json_pack("{s:s, s:s, s:i, s:i, s:{s:i}}", "name", "thread_sort_index", "ph",
                                                    "M", "pid", 1, "tid", rank, "args", "sort_index", rank));
            count[rank] = -1; /* named */
            end[rank] = -INFINITY;
        } else if (step < last_step[rank]) {
            json_array_append_new(events, instant("restart", us(t - wall, origin), rank, step));
        }
        last_step[rank] = step;
        double start = t - wall;
        if (start < end[rank]) start = end[rank];
        double a = start;
        for (int i = 0; i < PHASE_N; i++) {
            double s = json_number_value(json_object_get(ph, PHASE_NAMES[LAYOUT[i]]));
            if (!(s > 0) || !isfinite(s)) continue;
            double z = a + s;
            double ta = us(a, origin), tz = us(z, origin);
            if (tz > ta)
                json_array_append_new(events, json_pack("{s:s, s:s, s:s, s:f, s:f, s:i, s:i, s:{s:I}}", "name",
                                                        PHASE_NAMES[LAYOUT[i]], "cat", "phase", "ph", "X", "ts", ta,
                                                        "dur", tz - ta, "pid", 1, "tid", rank, "args", "step", step));
            a = z;
        }
        end[rank] = a;
        json_t *evs = json_object_get(r, "events");
        size_t i;
        json_t *e;
        json_array_foreach(evs, i, e)
        {
            const char *name = json_string_value(e);
            if (name && strcmp(name, "plan") == 0)
                json_array_append_new(events, instant("batch plan", us(a, origin), rank, step));
            else if (name && strcmp(name, "merge") == 0)
                json_array_append_new(events, instant("merge", us(a, origin), rank, step));
        }
    }
    free(end);
    free(last_step);
    out = json_pack("{s:O, s:s, s:{s:s, s:s, s:I}}", "traceEvents", events, "displayTimeUnit", "ms", "otherData",
                    "source", "pacer-coordinator", "job", job ? job : "", "steps", (json_int_t)steps);
done:
    json_decref(events);
    free(count);
    free(keep);
    return out;
}

int coord_trace(coordinator_t *c, const char *id, long steps, json_t **out)
{
    if (!job_id_valid(id)) return COORD_ENOTFOUND;
    if (steps < 1) steps = TRACE_STEPS_DEFAULT;
    if (steps > TRACE_STEPS_MAX) steps = TRACE_STEPS_MAX;
    char err[256], key[160];
    redisContext *rc = jobstore_pool_get(c->pool, err, sizeof err);
    if (!rc) return COORD_EUNAVAIL;
    snprintf(key, sizeof key, KEY_JOB, id);
    redisReply *w = redisCommand(rc, "HMGET %s world state", key);
    if (!w || w->type != REDIS_REPLY_ARRAY || w->elements != 2) {
        jobstore_pool_put(c->pool, rc, !w);
        if (w) freeReplyObject(w);
        return COORD_EUNAVAIL;
    }
    int exists = reply_str(w->element[1]) != NULL;
    long long world = reply_str(w->element[0]) ? strtoll(reply_str(w->element[0]), NULL, 10) : 1;
    freeReplyObject(w);
    if (!exists) {
        jobstore_pool_put(c->pool, rc, 0);
        return COORD_ENOTFOUND;
    }
    if (world < 1 || world > TRACE_RANKS_MAX) world = world < 1 ? 1 : TRACE_RANKS_MAX;
    /* The newest entries of the stream hold each rank's last steps, but not in equal
     * shares: a rank's sink sends its records in batches, and evaluations, plans and
     * checkpoints add records of their own. Four times what an even interleaving would
     * need (bounded below) keeps a rank whose last batch came early from losing steps
     * its track should show. */
    long long count = 4 * steps * (world + 1) + 64 * world;
    if (count > TRACE_ENTRIES_MAX) count = TRACE_ENTRIES_MAX;
    snprintf(key, sizeof key, KEY_JOB_METRICS, id);
    redisReply *r = redisCommand(rc, "XREVRANGE %s + - COUNT %lld", key, count);
    if (!r || r->type != REDIS_REPLY_ARRAY) {
        jobstore_pool_put(c->pool, rc, !r);
        if (r) freeReplyObject(r);
        return COORD_EUNAVAIL;
    }
    /* Oldest first, as trace_from_records takes them. */
    json_t *records = json_array();
    for (size_t k = r->elements; records && k-- > 0;) {
        const redisReply *e = r->element[k];
        if (e->type != REDIS_REPLY_ARRAY || e->elements != 2 || e->element[1]->type != REDIS_REPLY_ARRAY) continue;
        const redisReply *f = e->element[1];
        for (size_t i = 0; i + 1 < f->elements; i += 2) {
            const char *name = reply_str(f->element[i]), *val = reply_str(f->element[i + 1]);
            if (!name || !val || strcmp(name, "json") != 0) continue;
            json_t *o = json_loads(val, 0, NULL);
            if (json_is_object(o)) json_array_append_new(records, o);
            else json_decref(o);
        }
    }
    freeReplyObject(r);
    jobstore_pool_put(c->pool, rc, 0);
    *out = records ? trace_from_records(records, steps, id) : NULL;
    json_decref(records);
    return *out ? COORD_OK : COORD_EINTERNAL;
}
