/* common/search.c - see search.h. */
#include "search.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errmsg.h"
#include "rng.h"

static const char *const METHODS[] = {"random", "grid", "asha", "pbt"};
static const char *const DISTS[] = {"log_uniform", "uniform", "choice", "int"};
static const char *const METRICS[] = {"test_accuracy", "test_loss", "loss"};

void search_free(search_t *s)
{
    if (!s) return;
    for (int i = 0; i < s->nparams && i < SEARCH_KEYS_MAX; i++) {
        json_decref(s->params[i].choices);
        s->params[i].choices = NULL;
    }
    s->nparams = 0;
}

/* An integer member of o in [lo, hi], or dflt when absent. */
static int int_member(const json_t *o, const char *name, long lo, long hi, long dflt, long *out, char *err,
                      size_t errlen)
{
    const json_t *v = json_object_get(o, name);
    if (!v) {
        *out = dflt;
        return 0;
    }
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return errmsg(err, errlen, "search.%s: must be an integer from %ld to %ld", name, lo, hi);
    *out = (long)json_integer_value(v);
    return 0;
}

/* A string member of o that must be one of names (n of them): its index, or -1 with err. */
static int enum_member(const json_t *o, const char *name, const char *const *names, int n, int dflt, char *err,
                       size_t errlen)
{
    const json_t *v = json_object_get(o, name);
    if (!v) {
        if (dflt >= 0) return dflt;
        return errmsg(err, errlen, "search.%s: missing", name);
    }
    const char *s = json_string_value(v);
    for (int i = 0; s && i < n; i++)
        if (strcmp(s, names[i]) == 0) return i;
    char list[160] = "";
    for (int i = 0; i < n; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", names[i]);
    return errmsg(err, errlen, "search.%s: must be one of %s", name, list);
}

static int pair(const json_t *a, double *lo, double *hi)
{
    if (!json_is_array(a) || json_array_size(a) != 2 || !json_is_number(json_array_get(a, 0)) ||
        !json_is_number(json_array_get(a, 1)))
        return -1;
    *lo = json_number_value(json_array_get(a, 0));
    *hi = json_number_value(json_array_get(a, 1));
    return isfinite(*lo) && isfinite(*hi) ? 0 : -1;
}

/* One entry of search.space: {"log_uniform": [a, b]} and the like. */
static int param_parse(const char *key, const json_t *v, search_param_t *p, char *err, size_t errlen)
{
    memset(p, 0, sizeof *p);
    if (strlen(key) == 0 || strlen(key) >= SEARCH_KEY_MAX)
        return errmsg(err, errlen, "search.space: a key must be a spec field's path of 1 to %d bytes",
                      SEARCH_KEY_MAX - 1);
    snprintf(p->key, sizeof p->key, "%s", key);
    /* a trial's name is NAME-tI, and epochs is the most a trial trains (ASHA's rungs are
     * counted against it): neither is the search's to change */
    if (strcmp(key, "name") == 0 || strcmp(key, "epochs") == 0)
        return errmsg(err, errlen, "search.space.%s: set by the experiment (%s), not searched", key,
                      key[0] == 'n' ? "each trial's job is NAME-tI" : "the spec's epochs is the most a trial trains");
    if (!json_is_object(v) || json_object_size(v) != 1)
        return errmsg(err, errlen,
                      "search.space.%s: must be an object of one of log_uniform, uniform, int ([a, b]) or choice "
                      "([values])",
                      key);
    const char *kind = json_object_iter_key(json_object_iter((json_t *)v));
    const json_t *arg = json_object_iter_value(json_object_iter((json_t *)v));
    int d = -1;
    for (int i = 0; i < 4; i++)
        if (strcmp(kind, DISTS[i]) == 0) d = i;
    if (d < 0)
        return errmsg(err, errlen, "search.space.%s: unknown distribution %s (log_uniform, uniform, int or choice)",
                      key, kind);
    p->dist = (search_dist_t)d;
    if (p->dist == SEARCH_CHOICE) {
        size_t n = json_array_size(arg);
        if (!json_is_array(arg) || n == 0 || n > SEARCH_CHOICES_MAX)
            return errmsg(err, errlen, "search.space.%s: choice needs a list of 1 to %d values", key,
                          SEARCH_CHOICES_MAX);
        for (size_t i = 0; i < n; i++) {
            const json_t *e = json_array_get(arg, i);
            if (!json_is_number(e) && !json_is_string(e) && !json_is_boolean(e))
                return errmsg(err, errlen, "search.space.%s: choice[%zu]: must be a number, string or boolean", key, i);
        }
        p->choices = json_deep_copy(arg);
        return p->choices ? 0 : errmsg(err, errlen, "search.space.%s: out of memory", key);
    }
    if (pair(arg, &p->lo, &p->hi) != 0)
        return errmsg(err, errlen, "search.space.%s: %s needs [a, b], two finite numbers", key, kind);
    if (p->dist == SEARCH_LOG_UNIFORM && !(p->lo > 0 && p->lo < p->hi))
        return errmsg(err, errlen, "search.space.%s: log_uniform needs 0 < a < b", key);
    if (p->dist == SEARCH_UNIFORM && !(p->lo < p->hi && isfinite(p->hi - p->lo)))
        return errmsg(err, errlen, "search.space.%s: uniform needs a < b (and b - a a finite number)", key);
    if (p->dist == SEARCH_INT && (!json_is_integer(json_array_get(arg, 0)) || !json_is_integer(json_array_get(arg, 1)) ||
                                  p->lo > p->hi || fabs(p->lo) > 1e9 || fabs(p->hi) > 1e9))
        return errmsg(err, errlen, "search.space.%s: int needs [a, b], integers with a <= b (at most 1e9)", key);
    return 0;
}

static int key_order(const void *a, const void *b)
{
    return strcmp(((const search_param_t *)a)->key, ((const search_param_t *)b)->key);
}

static int space_parse(const json_t *space, search_t *s, char *err, size_t errlen)
{
    if (!json_is_object(space) || json_object_size(space) == 0)
        return errmsg(err, errlen, "search.space: must be an object of 1 to %d fields to search", SEARCH_KEYS_MAX);
    if (json_object_size(space) > SEARCH_KEYS_MAX)
        return errmsg(err, errlen, "search.space: at most %d fields", SEARCH_KEYS_MAX);
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)space, key, v)
    {
        if (param_parse(key, v, &s->params[s->nparams], err, errlen) != 0) {
            json_decref(s->params[s->nparams].choices);
            return -1;
        }
        s->nparams++;
    }
    qsort(s->params, (size_t)s->nparams, sizeof s->params[0], key_order);
    return 0;
}

/* The number of values a grid takes for p, or -1 when p is not discrete or too long. */
static long grid_count(const search_param_t *p)
{
    if (p->dist == SEARCH_CHOICE) return (long)json_array_size(p->choices);
    if (p->dist == SEARCH_INT && p->hi - p->lo < SEARCH_CHOICES_MAX) return (long)(p->hi - p->lo) + 1;
    return -1;
}

static int grid_trials(search_t *s, long given, char *err, size_t errlen)
{
    long total = 1;
    for (int i = 0; i < s->nparams; i++) {
        long n = grid_count(&s->params[i]);
        if (n < 0)
            return errmsg(err, errlen,
                          "search.space.%s: a grid search needs choice, or int of at most %d values; not %s",
                          s->params[i].key, SEARCH_CHOICES_MAX, DISTS[s->params[i].dist]);
        total *= n;
        if (total > SEARCH_TRIALS_MAX)
            return errmsg(err, errlen, "search.space: the grid has more than %d combinations", SEARCH_TRIALS_MAX);
    }
    if (given && given != total)
        return errmsg(err, errlen, "search.trials: a grid search runs every combination (%ld); leave trials out", total);
    s->trials = (int)total;
    return 0;
}

static const char *const KNOWN[] = {"method",           "trials",     "max_concurrent",
                                    "metric",           "mode",       "seed",
                                    "reduction_factor", "min_epochs", "perturbation_interval",
                                    "quantile",         "space",      NULL};

static int known_keys(const json_t *o, char *err, size_t errlen)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)o, key, v)
    {
        int ok = 0;
        for (const char *const *k = KNOWN; *k; k++) ok |= strcmp(*k, key) == 0;
        if (!ok) return errmsg(err, errlen, "search.%s: unknown field", key);
        (void)v;
    }
    return 0;
}

/* PBT's fields (perturbation_interval, quantile) and what a pbt search needs; the fields
 * are refused by name for the other methods, which have no use for them. */
static int pbt_parse(const json_t *o, search_t *s, char *err, size_t errlen)
{
    const json_t *q = json_object_get(o, "quantile");
    if (s->method != SEARCH_PBT) {
        if (q || json_object_get(o, "perturbation_interval"))
            return errmsg(err, errlen, "search.%s: only a pbt search has it", q ? "quantile" : "perturbation_interval");
        return 0;
    }
    long interval = 1;
    if (int_member(o, "perturbation_interval", 1, SEARCH_EPOCHS_MAX, 1, &interval, err, errlen) != 0) return -1;
    s->interval = (int)interval;
    s->quantile = 0.25;
    if (q && (!json_is_number(q) || !(json_number_value(q) > 0 && json_number_value(q) <= 0.5)))
        return errmsg(err, errlen, "search.quantile: must be a number in (0, 0.5] (the bottom fraction that exploits)");
    if (q) s->quantile = json_number_value(q);
    if (s->trials < 2)
        return errmsg(err, errlen, "search.trials: a pbt search needs a population of at least 2 trials");
    long points = (s->epochs - 1) / interval;
    if (points < 1)
        return errmsg(err, errlen,
                      "search.perturbation_interval: %ld leaves no perturbation point before the last of the spec's "
                      "%d epochs",
                      interval, s->epochs);
    if (points > SEARCH_RUNGS_MAX)
        return errmsg(err, errlen,
                      "search.perturbation_interval: %ld gives %ld perturbation points in %d epochs, at most %d: "
                      "use at least %d",
                      interval, points, s->epochs, SEARCH_RUNGS_MAX, (s->epochs - 1) / SEARCH_RUNGS_MAX + 1);
    /* an exploit resumes another trial's checkpoint under this trial's values: only what a
     * checkpoint does not depend on may differ (the model, batches and data must not) */
    for (int i = 0; i < s->nparams; i++) {
        const char *k = s->params[i].key;
        if (strncmp(k, "optimizer.", 10) != 0 || strcmp(k, "optimizer.kind") == 0)
            return errmsg(err, errlen,
                          "search.space.%s: a pbt search may search only optimizer fields but optimizer.kind (a trial "
                          "goes on from another trial's checkpoint, which must fit its model and batches)",
                          k);
    }
    return 0;
}

static int parse_search(const json_t *o, int epochs, search_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (!json_is_object(o)) return errmsg(err, errlen, "search: must be an object");
    if (known_keys(o, err, errlen) != 0) return -1;
    int method = enum_member(o, "method", METHODS, 4, -1, err, errlen);
    if (method < 0) return -1;
    out->method = (search_method_t)method;
    int metric = enum_member(o, "metric", METRICS, 3, 0, err, errlen);
    if (metric < 0) return -1;
    snprintf(out->metric, sizeof out->metric, "%s", METRICS[metric]);
    static const char *const MODES[] = {"min", "max"};
    int mode = enum_member(o, "mode", MODES, 2, metric == 0 ? 1 : 0, err, errlen);
    if (mode < 0) return -1;
    out->mode_max = mode;
    if (epochs < 1 || epochs > SEARCH_EPOCHS_MAX)
        return errmsg(err, errlen, "epochs: must be from 1 to %d", SEARCH_EPOCHS_MAX);
    out->epochs = epochs;
    long trials = 0, conc = 0, rf = 3, min_ep = 1, seed = 0;
    if (int_member(o, "trials", 1, SEARCH_TRIALS_MAX, 0, &trials, err, errlen) != 0 ||
        int_member(o, "reduction_factor", 2, 16, 3, &rf, err, errlen) != 0 ||
        int_member(o, "min_epochs", 1, epochs, 1, &min_ep, err, errlen) != 0 ||
        int_member(o, "seed", 0, 2147483647L, 0, &seed, err, errlen) != 0 ||
        int_member(o, "max_concurrent", 1, SEARCH_TRIALS_MAX, 0, &conc, err, errlen) != 0)
        return -1;
    out->reduction_factor = (int)rf;
    out->min_epochs = (int)min_ep;
    out->seed = (uint64_t)seed;
    if (space_parse(json_object_get(o, "space"), out, err, errlen) != 0) return -1;
    if (out->method == SEARCH_GRID) {
        if (grid_trials(out, trials, err, errlen) != 0) return -1;
    } else if (trials == 0) {
        return errmsg(err, errlen, "search.trials: missing (1 to %d trials)", SEARCH_TRIALS_MAX);
    } else {
        out->trials = (int)trials;
    }
    out->max_concurrent = conc == 0 || conc > out->trials ? out->trials : (int)conc;
    return pbt_parse(o, out, err, errlen);
}

json_t *search_to_json(const search_t *s)
{
    json_t *space = json_object();
    for (int i = 0; space && i < s->nparams; i++) {
        const search_param_t *p = &s->params[i];
        json_t *arg = p->dist == SEARCH_CHOICE ? json_deep_copy(p->choices)
                      : p->dist == SEARCH_INT  ? json_pack("[I, I]", (json_int_t)p->lo, (json_int_t)p->hi)
                                               : json_pack("[f, f]", p->lo, p->hi);
        json_object_set_new(space, p->key, json_pack("{s:o}", DISTS[p->dist], arg));
    }
    json_t *o = json_pack("{s:s, s:i, s:i, s:s, s:s, s:I, s:o}", "method", METHODS[s->method], "trials", s->trials,
                          "max_concurrent", s->max_concurrent, "metric", s->metric, "mode", s->mode_max ? "max" : "min",
                          "seed", (json_int_t)s->seed, "space", space);
    if (o && s->method == SEARCH_ASHA) {
        json_object_set_new(o, "min_epochs", json_integer(s->min_epochs));
        json_object_set_new(o, "reduction_factor", json_integer(s->reduction_factor));
    }
    if (o && s->method == SEARCH_PBT) {
        json_object_set_new(o, "perturbation_interval", json_integer(s->interval));
        json_object_set_new(o, "quantile", json_real(s->quantile));
    }
    return o;
}

/* A double in [0, 1) with 53 bits. */
static double unit(rng_t *r) { return (double)(rng_next(r) >> 11) * (1.0 / 9007199254740992.0); }

static double round6(double v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%.6g", v);
    return strtod(buf, NULL);
}

static json_t *draw(const search_param_t *p, rng_t *r)
{
    switch (p->dist) {
    case SEARCH_LOG_UNIFORM: return json_real(round6(exp(log(p->lo) + unit(r) * (log(p->hi) - log(p->lo)))));
    case SEARCH_UNIFORM: return json_real(round6(p->lo + unit(r) * (p->hi - p->lo)));
    case SEARCH_INT: return json_integer((json_int_t)p->lo + (json_int_t)(unit(r) * (p->hi - p->lo + 1)));
    case SEARCH_CHOICE:
    default: return json_deep_copy(json_array_get(p->choices, rng_below(r, (uint32_t)json_array_size(p->choices))));
    }
}

static json_t *grid_value(const search_param_t *p, long k)
{
    if (p->dist == SEARCH_INT) return json_integer((json_int_t)p->lo + k);
    return json_deep_copy(json_array_get(p->choices, (size_t)k));
}

json_t *search_trial_params(const search_t *s)
{
    json_t *all = json_array();
    rng_t r;
    rng_seed(&r, s->seed);
    for (int t = 0; all && t < s->trials; t++) {
        json_t *o = json_object();
        long digit[SEARCH_KEYS_MAX] = {0}, rest = t;
        for (int i = s->nparams - 1; s->method == SEARCH_GRID && i >= 0; i--) {
            long n = grid_count(&s->params[i]);
            digit[i] = rest % n;
            rest /= n;
        }
        for (int i = 0; o && i < s->nparams; i++)
            json_object_set_new(o, s->params[i].key,
                                s->method == SEARCH_GRID ? grid_value(&s->params[i], digit[i])
                                                         : draw(&s->params[i], &r));
        if (!o || json_array_append_new(all, o) != 0) {
            json_decref(all);
            return NULL;
        }
    }
    return all;
}

/* Its messages name the document's keys and values, which may hold control characters
 * ("log_\niform" as a distribution: fuzz_sched's finding): one line each. */
int search_parse(const json_t *o, int epochs, search_t *out, char *err, size_t errlen)
{
    const int rc = parse_search(o, epochs, out, err, errlen);
    if (rc != 0) errmsg_one_line(err, errlen);
    return rc;
}

int search_rungs(const search_t *s, int *rungs, int max)
{
    int n = 0;
    if (s->method == SEARCH_PBT) {
        for (long e = s->interval; e < s->epochs && n < max && n < SEARCH_RUNGS_MAX; e += s->interval)
            rungs[n++] = (int)e;
        return n;
    }
    if (s->method != SEARCH_ASHA) return 0;
    for (long e = s->min_epochs; e < s->epochs && n < max && n < SEARCH_RUNGS_MAX; e *= s->reduction_factor)
        rungs[n++] = (int)e;
    return n;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int search_cutoff(const double *recorded, int n, int rf, int mode_max, double *cutoff)
{
    double *v = malloc(sizeof *v * (size_t)(n > 0 ? n : 1));
    if (!v) return -1;
    int m = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(recorded[i])) v[m++] = mode_max ? recorded[i] : -recorded[i];
    if (m == 0) {
        free(v);
        return -1;
    }
    qsort(v, (size_t)m, sizeof *v, cmp_double);
    double pos = (1.0 - 1.0 / rf) * (m - 1);
    int lo = (int)floor(pos);
    double frac = pos - lo;
    *cutoff = lo + 1 < m ? v[lo] + frac * (v[lo + 1] - v[lo]) : v[lo];
    free(v);
    return 0;
}

int search_asha_continue(const double *recorded, int n, double value, int rf, int mode_max)
{
    if (!isfinite(value)) return 0;
    double cutoff;
    if (search_cutoff(recorded, n, rf, mode_max, &cutoff) != 0) return 1;
    return (mode_max ? value : -value) >= cutoff;
}

/* A draw's rng for trial self at point `point`, tag telling the exploit's from the
 * explore's: the same arrivals give the same decisions whatever else happened. */
static void pbt_rng(rng_t *r, const search_t *s, int self, int point, int tag)
{
    rng_seed(r, s->seed * 0x9E3779B97F4A7C15ULL ^ ((uint64_t)(unsigned)self << 24) ^ ((uint64_t)(unsigned)point << 4) ^
                    (uint64_t)tag);
}

typedef struct {
    double v; /* oriented: larger is better */
    int trial;
} ranked_t;

static int ranked_order(const void *a, const void *b)
{
    const ranked_t *x = a, *y = b;
    if (x->v != y->v) return x->v > y->v ? -1 : 1;
    return x->trial - y->trial;
}

int search_pbt_exploit(const search_t *s, const double *values, const int *trials, int n, int self, double value,
                       int point)
{
    ranked_t *r = malloc(sizeof *r * (size_t)(n > 0 ? n : 1));
    if (!r) return -1;
    int m = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(values[i]) && trials[i] != self)
            r[m++] = (ranked_t){s->mode_max ? values[i] : -values[i], trials[i]};
    double sv = isfinite(value) ? (s->mode_max ? value : -value) : -INFINITY;
    int total = m + 1, q = (int)ceil(s->quantile * total - 1e-9);
    if (q > total / 2) q = total / 2;
    int above = 0; /* others ranked before self: ties go first */
    for (int i = 0; i < m; i++) above += r[i].v >= sv;
    int donor = -1;
    if (q >= 1 && above >= total - q) {
        qsort(r, (size_t)m, sizeof *r, ranked_order);
        int better = 0;
        while (better < q && better < m && r[better].v > sv) better++;
        if (better > 0) {
            rng_t g;
            pbt_rng(&g, s, self, point, 1);
            donor = r[rng_below(&g, (uint32_t)better)].trial;
        }
    }
    free(r);
    return donor;
}

static json_t *pbt_perturb(const search_param_t *p, const json_t *v, rng_t *r)
{
    double f = rng_below(r, 2) ? 1.2 : 0.8;
    if (p->dist == SEARCH_CHOICE) {
        int n = (int)json_array_size(p->choices), at = -1;
        for (int i = 0; i < n && at < 0; i++)
            if (v && json_equal(json_array_get(p->choices, (size_t)i), (json_t *)v)) at = i;
        if (at < 0 || unit(r) < SEARCH_PBT_RESAMPLE) at = (int)rng_below(r, (uint32_t)n);
        else at = f > 1 ? (at + 1 < n ? at + 1 : at) : (at > 0 ? at - 1 : 0);
        return json_deep_copy(json_array_get(p->choices, (size_t)at));
    }
    if (!json_is_number(v)) return draw(p, r); /* a damaged donor: a fresh value */
    double x = json_number_value(v) * f;
    x = x < p->lo ? p->lo : x > p->hi ? p->hi : x;
    if (p->dist == SEARCH_INT) return json_integer((json_int_t)llround(x));
    return json_real(round6(x));
}

json_t *search_pbt_explore(const search_t *s, const json_t *donor, int self, int point)
{
    rng_t r;
    pbt_rng(&r, s, self, point, 2);
    json_t *o = json_object();
    for (int i = 0; o && i < s->nparams; i++) {
        json_t *v = pbt_perturb(&s->params[i], json_object_get(donor, s->params[i].key), &r);
        if (!v || json_object_set_new(o, s->params[i].key, v) != 0) {
            json_decref(o);
            return NULL;
        }
    }
    return o;
}

int search_apply(json_t *spec, const char *key, json_t *value)
{
    json_t *o = spec;
    const char *p = key;
    for (;;) {
        size_t n = strcspn(p, ".");
        char part[SEARCH_KEY_MAX];
        if (n == 0 || n >= sizeof part || !json_is_object(o)) {
            json_decref(value);
            return -1;
        }
        memcpy(part, p, n);
        part[n] = 0;
        if (!p[n]) return json_object_set_new(o, part, value);
        json_t *next = json_object_get(o, part);
        if (!next) {
            next = json_object();
            if (json_object_set_new(o, part, next) != 0) {
                json_decref(value);
                return -1;
            }
        }
        o = next;
        p += n + 1;
    }
}
