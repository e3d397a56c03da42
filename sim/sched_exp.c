/* sim/sched_exp.c - an experiment's trials in pacer-sched-sim (sched_exp.h).
 *
 * The metric is synthetic: trial i has a quality q in [0.55, 0.9) drawn from the search's
 * seed and i, and at epoch e the accuracy q - (q - 0.1) exp(-e / tau) (tau = epochs / 8, at
 * least 1) plus a normal noise of 0.01 drawn from the seed, i and e: curves that rise and
 * flatten, mostly in the order of their end, with the noise that makes an early rung's
 * ranking imperfect. A loss metric (mode min) is 1 minus it. Every draw depends on the
 * trial and the epoch only, so each policy sees the same curves; what a policy changes is
 * the order the trials reach their rungs, and so ASHA's asynchronous decisions.
 */
#include "sched_exp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errmsg.h"
#include "rng.h"

void sched_exp_free(sched_exp_t *e)
{
    search_free(&e->search);
    json_decref(e->params);
    free(e->at);
    free(e->rung);
    free(e->stopped);
    free(e->metric);
    free(e->recorded);
    memset(e, 0, sizeof *e);
}

static double metric_at(const sched_exp_t *e, int i, int epoch)
{
    rng_t r;
    rng_seed(&r, e->search.seed * 1000003u + (uint64_t)i);
    double q = 0.55 + 0.35 * rng_uniform(&r);
    rng_seed(&r, (e->search.seed * 1000003u + (uint64_t)i) * 100003u + (uint64_t)epoch + 1);
    double tau = e->search.epochs / 8.0 < 1 ? 1 : e->search.epochs / 8.0;
    double acc = q - (q - 0.1) * exp(-epoch / tau) + 0.01 * rng_normal(&r);
    return e->search.mode_max ? acc : 1 - acc;
}

/* The epoch trial i's segment after epoch `from` ends at: the next rung, or the last epoch. */
static int next_stop(const sched_exp_t *e, int from)
{
    for (int k = 0; k < e->nrungs; k++)
        if (e->rungs[k] > from) return e->rungs[k];
    return e->search.epochs;
}

static int get_field(json_t *root, const char *key, double lo, double hi, double def, double *out)
{
    json_t *v = json_object_get(root, key);
    if (!v) {
        *out = def;
        return def >= lo ? 0 : -1;
    }
    if (!json_is_number(v)) return -1;
    *out = json_number_value(v);
    return isfinite(*out) && *out >= lo && *out <= hi ? 0 : -1;
}

/* The file's fields into e (the search parsed); returns 0 or -1 with err. */
static int parse_fields(json_t *root, const char *file, const sched_cluster_t *c, int slots, sched_exp_t *e, char *err,
                        size_t errlen)
{
    static const char *const known[] = {"type", "workers", "epoch_samples", "epochs", "search"};
    const char *k;
    json_t *v;
    json_object_foreach(root, k, v)
    {
        int ok = 0;
        for (size_t i = 0; i < sizeof known / sizeof *known; i++) ok |= strcmp(k, known[i]) == 0;
        if (!ok)
            return errmsg(err, errlen, "%s: %.40s: unknown field (type, workers, epoch_samples, epochs, search)", file,
                          k);
    }
    const char *type = json_string_value(json_object_get(root, "type"));
    e->type = -1;
    for (int t = 0; type && t < c->ntypes && e->type < 0; t++)
        if (strcmp(c->types[t], type) == 0) e->type = t;
    if (e->type < 0) return errmsg(err, errlen, "%s: type: must be a job type of the cluster file's speeds", file);
    double w, ep;
    if (get_field(root, "workers", 1, slots, 1, &w) != 0 || w != floor(w))
        return errmsg(err, errlen, "%s: workers: must be an integer in 1..%d (the cluster's slots)", file, slots);
    e->workers = (int)w;
    if (get_field(root, "epoch_samples", 1, 1e12, 0, &e->epoch_samples) != 0)
        return errmsg(err, errlen, "%s: epoch_samples: must be a number in [1, 1e12]", file);
    if (get_field(root, "epochs", 1, SCHED_EXP_EPOCHS_MAX, 0, &ep) != 0 || ep != floor(ep))
        return errmsg(err, errlen, "%s: epochs: must be an integer in 1..%d", file, SCHED_EXP_EPOCHS_MAX);
    json_t *search = json_object_get(root, "search");
    if (!json_is_object(search)) return errmsg(err, errlen, "%s: search: must be an object", file);
    char why[400];
    if (search_parse(search, (int)ep, &e->search, why, sizeof why) != 0)
        return errmsg(err, errlen, "%s: %s", file, why);
    /* the simulator's trials follow a synthetic curve: there is no checkpoint to exploit */
    if (e->search.method == SEARCH_PBT)
        return errmsg(err, errlen, "%s: search.method: the simulator runs asha, random and grid searches, not pbt",
                      file);
    return 0;
}

int sched_exp_parse(const char *text, size_t len, const char *file, const sched_cluster_t *c, sched_exp_t *e,
                    sched_job_t **jobs, int *njobs, char *err, size_t errlen)
{
    memset(e, 0, sizeof *e);
    *jobs = NULL;
    *njobs = 0;
    int slots = 0;
    for (int k = 0; k < c->nclasses; k++) slots += c->classes[k].hosts * c->classes[k].slots;
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) return errmsg(err, errlen, "%s:%d: not JSON: %s", file, jerr.line, jerr.text);
    int rc = json_is_object(root) ? parse_fields(root, file, c, slots, e, err, errlen)
                                  : errmsg(err, errlen, "%s: must be a JSON object", file);
    json_decref(root);
    if (rc != 0) return -1;
    e->n = e->search.trials;
    e->nrungs = search_rungs(&e->search, e->rungs, SEARCH_RUNGS_MAX);
    e->params = search_trial_params(&e->search);
    e->at = calloc((size_t)e->n, sizeof *e->at);
    e->rung = calloc((size_t)e->n, sizeof *e->rung);
    e->stopped = calloc((size_t)e->n, sizeof *e->stopped);
    e->metric = calloc((size_t)e->n, sizeof *e->metric);
    e->recorded = calloc((size_t)(e->n * (e->nrungs ? e->nrungs : 1)), sizeof *e->recorded);
    sched_job_t *j = calloc((size_t)e->n, sizeof *j);
    if (!e->params || !e->at || !e->rung || !e->stopped || !e->metric || !e->recorded || !j) {
        free(j);
        return errmsg(err, errlen, "%s: out of memory", file);
    }
    int conc = e->search.max_concurrent > 0 ? e->search.max_concurrent : e->n;
    for (int i = 0; i < e->n; i++) {
        snprintf(j[i].id, sizeof j[i].id, "t%d", i);
        snprintf(j[i].user, sizeof j[i].user, "experiment");
        j[i].arrival_s = i < conc ? 0 : INFINITY;
        j[i].type = e->type;
        j[i].workers = e->workers;
        j[i].samples = e->search.epochs * e->epoch_samples;
        j[i].line = i + 1;
        e->metric[i] = NAN;
        e->at[i] = next_stop(e, 0);
    }
    e->released = conc < e->n ? conc : e->n;
    *jobs = j;
    *njobs = e->n;
    return 0;
}

double sched_exp_first(const sched_exp_t *e, int i) { return e->at[i] * e->epoch_samples; }

double sched_exp_reached(sched_exp_t *e, sched_job_t *jobs, int i, double t)
{
    int epoch = e->at[i];
    double m = metric_at(e, i, epoch);
    e->metric[i] = m;
    int go = epoch < e->search.epochs;
    if (go && e->rung[i] < e->nrungs && e->rungs[e->rung[i]] == epoch) {
        int k = e->rung[i];
        double *rec = e->recorded + (size_t)k * (size_t)e->n;
        go = search_asha_continue(rec, e->nrec[k], m, e->search.reduction_factor, e->search.mode_max);
        rec[e->nrec[k]++] = m;
        if (go) e->rung[i]++;
        else e->stopped[i] = 1;
    }
    if (go) {
        e->at[i] = next_stop(e, epoch);
        return (e->at[i] - epoch) * e->epoch_samples;
    }
    if (e->released < e->n) jobs[e->released++].arrival_s = t;
    return 0;
}

double sched_exp_worth(const sched_exp_t *e, int i) { return pow(e->search.reduction_factor, e->rung[i]); }

double sched_exp_work_left(const sched_exp_t *e, int i, double remaining)
{
    return remaining + (e->search.epochs - e->at[i]) * e->epoch_samples;
}

json_t *sched_exp_summary(const sched_exp_t *e)
{
    int stopped = 0, full = 0, best = -1;
    long epochs = 0;
    for (int i = 0; i < e->n; i++) {
        stopped += e->stopped[i];
        if (isfinite(e->metric[i])) epochs += e->at[i];
        if (e->stopped[i] || e->at[i] != e->search.epochs || !isfinite(e->metric[i])) continue;
        full++;
        if (best < 0 || (e->search.mode_max ? e->metric[i] > e->metric[best] : e->metric[i] < e->metric[best]))
            best = i;
    }
    json_t *b = best < 0 ? json_null()
                         : json_pack("{s:i, s:f, s:O}", "trial", best, "metric", e->metric[best], "params",
                                     json_array_get(e->params, (size_t)best));
    return json_pack("{s:s, s:I, s:i, s:i, s:i, s:I, s:o}", "method",
                     e->search.method == SEARCH_ASHA   ? "asha"
                     : e->search.method == SEARCH_GRID ? "grid"
                                                       : "random",
                     "search_seed", (json_int_t)e->search.seed, "trials", e->n, "stopped", stopped, "trained_to_end",
                     full, "epochs_trained", (json_int_t)epochs, "best", b);
}
