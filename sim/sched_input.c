/* sim/sched_input.c - see sched_input.h. Decoded with jansson (as common/spec.c does),
 * duplicate keys refused; unknown keys are refused too, so that a misspelt field is an
 * error instead of a silent default. */
#include "sched_input.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errmsg.h"
#include "jsonbody.h"

/* A name of 1..max-1 bytes, none of them a control character. */
static int name_ok(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n == 0 || n >= max) return 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f) return 0;
    return 1;
}

/* An integer member in [lo, hi]; absent: def (def < lo: required). */
static int get_int(json_t *o, const char *key, long lo, long hi, long def, long *out)
{
    json_t *v = json_object_get(o, key);
    if (!v) {
        *out = def;
        return def >= lo ? 0 : -2;
    }
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) return -1;
    *out = (long)json_integer_value(v);
    return 0;
}

/* A finite number member in [lo, hi] (lo_excl: > lo). */
static int get_num(json_t *o, const char *key, double lo, int lo_excl, double hi, double *out)
{
    json_t *v = json_object_get(o, key);
    if (!v) return -2;
    double x = json_number_value(v);
    if (!json_is_number(v) || !isfinite(x) || (lo_excl ? !(x > lo) : !(x >= lo)) || x > hi) return -1;
    *out = x;
    return 0;
}

static int unknown_key(json_t *o, const char *const *known, const char **which)
{
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v)
    {
        int ok = 0;
        for (int i = 0; known[i] && !ok; i++) ok = strcmp(k, known[i]) == 0;
        if (!ok) {
            *which = k;
            return 1;
        }
    }
    return 0;
}

static int parse_classes(json_t *a, const char *file, sched_cluster_t *out, char *err, size_t errlen)
{
    static const char *const known[] = {"name", "hosts", "slots", NULL};
    if (!json_is_array(a) || json_array_size(a) < 1 || json_array_size(a) > POLICY_CLASSES_MAX)
        return errmsg(err, errlen, "%s: classes: must be an array of 1..%d classes", file, POLICY_CLASSES_MAX);
    for (size_t i = 0; i < json_array_size(a); i++) {
        json_t *c = json_array_get(a, i);
        sched_class_t *k = &out->classes[i];
        const char *bad, *name;
        long v;
        if (!json_is_object(c)) return errmsg(err, errlen, "%s: classes[%zu]: must be an object", file, i);
        if (unknown_key(c, known, &bad))
            return errmsg(err, errlen, "%s: classes[%zu].%.40s: unknown field (name, hosts, slots)", file, i, bad);
        name = json_string_value(json_object_get(c, "name"));
        if (!name || !name_ok(name, SCHED_NAME_MAX))
            return errmsg(err, errlen, "%s: classes[%zu].name: must be a string of 1..%d characters", file, i,
                          SCHED_NAME_MAX - 1);
        for (size_t j = 0; j < i; j++)
            if (strcmp(out->classes[j].name, name) == 0)
                return errmsg(err, errlen, "%s: classes[%zu].name: '%s' repeats classes[%zu]", file, i, name, j);
        snprintf(k->name, sizeof k->name, "%s", name);
        if (get_int(c, "hosts", 1, SCHED_HOSTS_MAX, 0, &v) != 0)
            return errmsg(err, errlen, "%s: classes[%zu].hosts: must be an integer in 1..%d", file, i, SCHED_HOSTS_MAX);
        k->hosts = (int)v;
        if (get_int(c, "slots", 1, SCHED_SLOTS_MAX, 1, &v) != 0)
            return errmsg(err, errlen, "%s: classes[%zu].slots: must be an integer in 1..%d (default 1)", file, i,
                          SCHED_SLOTS_MAX);
        k->slots = (int)v;
        out->nclasses = (int)i + 1;
    }
    return 0;
}

static int parse_speeds(json_t *o, const char *file, sched_cluster_t *out, char *err, size_t errlen)
{
    if (!json_is_object(o) || json_object_size(o) < 1 || json_object_size(o) > SCHED_TYPES_MAX)
        return errmsg(err, errlen, "%s: speeds: must be an object of 1..%d job types", file, SCHED_TYPES_MAX);
    const char *type;
    json_t *row;
    json_object_foreach(o, type, row)
    {
        if (!name_ok(type, SCHED_NAME_MAX))
            return errmsg(err, errlen, "%s: speeds: a type name must be 1..%d characters", file, SCHED_NAME_MAX - 1);
        int t = out->ntypes++;
        snprintf(out->types[t], SCHED_NAME_MAX, "%s", type);
        if (!json_is_object(row))
            return errmsg(err, errlen, "%s: speeds.%s: must be an object of class: samples/s per slot", file, type);
        const char *cls;
        json_t *v;
        json_object_foreach(row, cls, v)
        {
            int c = -1;
            for (int k = 0; k < out->nclasses && c < 0; k++)
                if (strcmp(out->classes[k].name, cls) == 0) c = k;
            if (c < 0) return errmsg(err, errlen, "%s: speeds.%s.%.40s: not a class of classes[]", file, type, cls);
            double x = json_number_value(v);
            if (!json_is_number(v) || !isfinite(x) || !(x > 0) || x > 1e12)
                return errmsg(err, errlen, "%s: speeds.%s.%s: must be a number of samples/s in (0, 1e12]", file, type,
                              cls);
            out->speed[t * POLICY_CLASSES_MAX + c] = x;
        }
    }
    return 0;
}

int sched_cluster_parse(const char *text, size_t len, const char *file, sched_cluster_t *out, char *err, size_t errlen)
{
    static const char *const known[] = {"classes", "speeds", NULL};
    memset(out, 0, sizeof *out);
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) return errmsg(err, errlen, "%s:%d: not JSON: %s", file, jerr.line, jsonbody_text(&jerr));
    const char *bad;
    int rc = 0;
    if (!json_is_object(root)) rc = errmsg(err, errlen, "%s: must be a JSON object {\"classes\", \"speeds\"}", file);
    else if (unknown_key(root, known, &bad))
        rc = errmsg(err, errlen, "%s: %.40s: unknown field (classes, speeds)", file, bad);
    else if (!json_object_get(root, "classes")) rc = errmsg(err, errlen, "%s: classes: missing", file);
    else if (!json_object_get(root, "speeds")) rc = errmsg(err, errlen, "%s: speeds: missing", file);
    else if (parse_classes(json_object_get(root, "classes"), file, out, err, errlen) != 0) rc = -1;
    else if (parse_speeds(json_object_get(root, "speeds"), file, out, err, errlen) != 0) rc = -1;
    json_decref(root);
    if (rc != 0) errmsg_one_line(err, errlen); /* a key or a name quoted may hold a newline */
    return rc;
}

/* One trace line's object into j; returns 0 or -1 with the message. */
static int parse_job(json_t *o, const char *file, int line, const sched_cluster_t *c, int slots, sched_job_t *j,
                     char *err, size_t errlen)
{
    static const char *const known[] = {"id",   "arrival_s", "type",    "workers",     "samples",
                                        "user", "priority",  "elastic", "max_workers", NULL};
    const char *bad, *s;
    long v;
    if (!json_is_object(o)) return errmsg(err, errlen, "%s:%d: must be a JSON object", file, line);
    if (unknown_key(o, known, &bad))
        return errmsg(err, errlen,
                      "%s:%d: %.40s: unknown field (id, arrival_s, type, workers, samples, user, priority, elastic, "
                      "max_workers)",
                      file, line, bad);
    memset(j, 0, sizeof *j);
    j->line = line;
    s = json_string_value(json_object_get(o, "id"));
    if (!s || !name_ok(s, SCHED_ID_MAX))
        return errmsg(err, errlen, "%s:%d: id: must be a string of 1..%d characters", file, line, SCHED_ID_MAX - 1);
    snprintf(j->id, sizeof j->id, "%s", s);
    if (get_num(o, "arrival_s", 0, 0, 1e9, &j->arrival_s) != 0)
        return errmsg(err, errlen, "%s:%d: arrival_s: must be a number of seconds in [0, 1e9]", file, line);
    s = json_string_value(json_object_get(o, "type"));
    j->type = -1;
    for (int t = 0; s && t < c->ntypes && j->type < 0; t++)
        if (strcmp(c->types[t], s) == 0) j->type = t;
    if (j->type < 0)
        return errmsg(err, errlen, "%s:%d: type: must be a job type of the cluster file's speeds", file, line);
    if (get_int(o, "workers", 1, slots, 0, &v) != 0)
        return errmsg(err, errlen, "%s:%d: workers: must be an integer in 1..%d (the cluster's slots)", file, line,
                      slots);
    j->workers = (int)v;
    if (get_num(o, "samples", 0, 1, 1e15, &j->samples) != 0)
        return errmsg(err, errlen, "%s:%d: samples: must be a number in (0, 1e15]", file, line);
    json_t *u = json_object_get(o, "user");
    s = u ? json_string_value(u) : "none";
    if (!s || !name_ok(s, SCHED_NAME_MAX))
        return errmsg(err, errlen, "%s:%d: user: must be a string of 1..%d characters", file, line, SCHED_NAME_MAX - 1);
    snprintf(j->user, sizeof j->user, "%s", s);
    json_t *p = json_object_get(o, "priority");
    s = p ? json_string_value(p) : "normal";
    if (!s || (strcmp(s, "high") != 0 && strcmp(s, "normal") != 0 && strcmp(s, "low") != 0))
        return errmsg(err, errlen, "%s:%d: priority: must be \"high\", \"normal\" or \"low\"", file, line);
    j->priority = policy_priority(s);
    json_t *e = json_object_get(o, "elastic");
    if (e && !json_is_boolean(e)) return errmsg(err, errlen, "%s:%d: elastic: must be true or false", file, line);
    j->elastic = e && json_is_true(e);
    if (get_int(o, "max_workers", j->workers, slots, 0, &v) == -1)
        return errmsg(err, errlen,
                      "%s:%d: max_workers: must be an integer in %d..%d (its workers to the cluster's slots)", file,
                      line, j->workers, slots);
    j->max_workers = (int)v;
    if (j->max_workers > j->workers && !j->elastic)
        return errmsg(err, errlen, "%s:%d: max_workers: only an elastic job may grow past its workers", file, line);
    return 0;
}

static int by_arrival(const void *a, const void *b)
{
    const sched_job_t *x = a, *y = b;
    if (x->arrival_s != y->arrival_s) return x->arrival_s < y->arrival_s ? -1 : 1;
    return (x->line > y->line) - (x->line < y->line);
}

int sched_trace_parse(const char *text, size_t len, const char *file, const sched_cluster_t *c, sched_job_t **jobs,
                      int *njobs, char *err, size_t errlen)
{
    *jobs = NULL;
    *njobs = 0;
    int slots = 0, cap = 0, n = 0, line = 0;
    for (int k = 0; k < c->nclasses; k++) slots += c->classes[k].hosts * c->classes[k].slots;
    sched_job_t *j = NULL;
    for (size_t at = 0; at < len;) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t ll = nl ? (size_t)(nl - (text + at)) : len - at;
        const char *l = text + at;
        at += ll + 1;
        line++;
        size_t b = 0;
        while (b < ll && (l[b] == ' ' || l[b] == '\t' || l[b] == '\r')) b++;
        if (b == ll) continue;
        if (ll > SCHED_LINE_MAX) {
            free(j);
            return errmsg(err, errlen, "%s:%d: line longer than %d bytes", file, line, SCHED_LINE_MAX);
        }
        if (n == SCHED_JOBS_MAX) {
            free(j);
            return errmsg(err, errlen, "%s:%d: more than %d jobs", file, line, SCHED_JOBS_MAX);
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            sched_job_t *g = realloc(j, (size_t)cap * sizeof *g);
            if (!g) {
                free(j);
                return errmsg(err, errlen, "%s:%d: out of memory", file, line);
            }
            j = g;
        }
        json_error_t jerr;
        json_t *o = json_loadb(l, ll, JSON_REJECT_DUPLICATES, &jerr);
        int rc = o ? parse_job(o, file, line, c, slots, &j[n], err, errlen)
                   : errmsg(err, errlen, "%s:%d: not JSON: %s", file, line, jsonbody_text(&jerr));
        json_decref(o);
        if (rc != 0) {
            free(j);
            errmsg_one_line(err, errlen);
            return -1;
        }
        n++;
    }
    if (n == 0) {
        free(j);
        return errmsg(err, errlen, "%s: no jobs", file);
    }
    qsort(j, (size_t)n, sizeof *j, by_arrival);
    *jobs = j;
    *njobs = n;
    return 0;
}
