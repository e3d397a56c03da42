/* sim/sched_exp.c - an experiment's trials in pacer-sched-sim (sched_exp.h).
 *
 * The metric is synthetic: trial i has a quality q in [0.55, 0.9) drawn from the search's
 * seed and i, and at epoch e the accuracy q - (q - 0.1) exp(-e / tau) (tau = epochs / 8, at
 * least 1) plus a normal noise of 0.01 drawn from the seed, i and e: curves that rise and
 * flatten, mostly in the order of their end, with the noise that makes an early rung's
 * ranking imperfect. A loss metric (mode min) is 1 minus it. Every draw depends on the
 * trial and the epoch only, so each policy sees the same curves; what a policy changes is
 * the order the trials reach their rungs, and so ASHA's asynchronous decisions.
 *
 * PBT: at each perturbation point a trial is ranked by the daemon's rule
 * (search_pbt_exploit) among the values the trials that reached the point before it
 * recorded there. One that exploits takes over the better trial's weights where that trial
 * last evaluated them (its epoch and metric: a checkpoint at every point, where the daemon
 * takes the newest one), its values explored by search_pbt_explore, and its curve's
 * quality becomes the better trial's plus a normal draw of sd 0.02 from the seed, the
 * trial and the point (values near a good trial's do about as well, a little better or
 * worse: the synthetic metric does not read the values themselves). Its job is then a new
 * one that the policy places again (sched_exp_requeue), after the restart cost.
 */
#include "sched_exp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errmsg.h"
#include "jsonbody.h"
#include "rng.h"

void sched_exp_free(sched_exp_t *e)
{
    search_free(&e->search);
    json_decref(e->params);
    json_decref(e->params_now);
    free(e->at);
    free(e->pos);
    free(e->trained);
    free(e->rung);
    free(e->stopped);
    free(e->metric);
    free(e->quality);
    free(e->recorded);
    free(e->recorder);
    free(e->exploits);
    free(e->requeue);
    memset(e, 0, sizeof *e);
}

/* Trial i's curve's level as drawn for it: in [0.55, 0.9). */
static double quality_drawn(const sched_exp_t *e, int i)
{
    rng_t r;
    rng_seed(&r, e->search.seed * 1000003u + (uint64_t)i);
    return 0.55 + 0.35 * rng_uniform(&r);
}

static double metric_at(const sched_exp_t *e, int i, int epoch)
{
    rng_t r;
    double q = e->quality[i];
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
    if (!root) return errmsg(err, errlen, "%s:%d: not JSON: %s", file, jerr.line, jsonbody_text(&jerr));
    int rc = json_is_object(root) ? parse_fields(root, file, c, slots, e, err, errlen)
                                  : errmsg(err, errlen, "%s: must be a JSON object", file);
    json_decref(root);
    if (rc != 0) {
        errmsg_one_line(err, errlen); /* a key quoted may hold a newline */
        return -1;
    }
    e->n = e->search.trials;
    e->nrungs = search_rungs(&e->search, e->rungs, SEARCH_RUNGS_MAX);
    e->params = search_trial_params(&e->search);
    e->params_now = e->params ? json_deep_copy(e->params) : NULL;
    size_t n = (size_t)e->n, nrec = n * (size_t)(e->nrungs ? e->nrungs : 1);
    e->at = calloc(n, sizeof *e->at);
    e->pos = calloc(n, sizeof *e->pos);
    e->trained = calloc(n, sizeof *e->trained);
    e->rung = calloc(n, sizeof *e->rung);
    e->stopped = calloc(n, sizeof *e->stopped);
    e->metric = calloc(n, sizeof *e->metric);
    e->quality = calloc(n, sizeof *e->quality);
    e->recorded = calloc(nrec, sizeof *e->recorded);
    e->recorder = calloc(nrec, sizeof *e->recorder);
    e->exploits = calloc(n, sizeof *e->exploits);
    e->requeue = calloc(n, sizeof *e->requeue);
    sched_job_t *j = calloc(n, sizeof *j);
    if (!e->params || !e->params_now || !e->at || !e->pos || !e->trained || !e->rung || !e->stopped || !e->metric ||
        !e->quality || !e->recorded || !e->recorder || !e->exploits || !e->requeue || !j) {
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
        e->quality[i] = quality_drawn(e, i);
        e->at[i] = next_stop(e, 0);
    }
    e->released = conc < e->n ? conc : e->n;
    *jobs = j;
    *njobs = e->n;
    return 0;
}

double sched_exp_first(const sched_exp_t *e, int i) { return e->at[i] * e->epoch_samples; }

/* ASHA's decision for trial i at its rung's epoch: 1 it goes on, 0 it stops there. */
static int asha_rung(sched_exp_t *e, int i, int epoch, double m)
{
    if (e->rung[i] >= e->nrungs || e->rungs[e->rung[i]] != epoch) return 1;
    int k = e->rung[i];
    double *rec = e->recorded + (size_t)k * (size_t)e->n;
    int go = search_asha_continue(rec, e->nrec[k], m, e->search.reduction_factor, e->search.mode_max);
    rec[e->nrec[k]++] = m;
    if (go) e->rung[i]++;
    else e->stopped[i] = 1;
    return go;
}

/* PBT's decision for trial i at the point at epoch (if it is one): it exploits a better
 * trial d (its weights' epoch and metric, its values explored, its quality drawn near d's)
 * or goes on as it is (also when out of memory, as the daemon's trial does). */
static void pbt_point(sched_exp_t *e, int i, int epoch, double m)
{
    int k = 0;
    while (k < e->nrungs && e->rungs[k] != epoch) k++;
    if (k == e->nrungs) return;
    double *rec = e->recorded + (size_t)k * (size_t)e->n;
    int *who = e->recorder + (size_t)k * (size_t)e->n;
    int d = search_pbt_exploit(&e->search, rec, who, e->nrec[k], i, m, k);
    rec[e->nrec[k]] = m;
    who[e->nrec[k]++] = i;
    e->rung[i] = k + 1;
    if (d < 0 || d >= e->n) return;
    json_t *np = search_pbt_explore(&e->search, json_array_get(e->params_now, (size_t)d), i, k);
    if (!np || json_array_set_new(e->params_now, (size_t)i, np) != 0) return;
    rng_t r;
    rng_seed(&r, ((e->search.seed * 1000003u + (uint64_t)i) * 7919u + (uint64_t)k) ^ 0x9e3779b97f4a7c15u);
    double q = e->quality[d] + 0.02 * rng_normal(&r);
    e->quality[i] = q < 0.1 ? 0.1 : q > 0.99 ? 0.99 : q;
    e->pos[i] = e->pos[d];
    e->metric[i] = e->metric[d];
    while (e->rung[i] < e->nrungs && e->rungs[e->rung[i]] <= e->pos[i]) e->rung[i]++; /* the points it skips */
    e->exploits[i]++;
    e->requeue[i] = 1;
}

double sched_exp_reached(sched_exp_t *e, sched_job_t *jobs, int i, double t)
{
    int epoch = e->at[i];
    double m = metric_at(e, i, epoch);
    e->metric[i] = m;
    e->trained[i] += epoch - e->pos[i];
    e->pos[i] = epoch;
    int go = epoch < e->search.epochs;
    if (go && e->search.method == SEARCH_PBT) {
        pbt_point(e, i, epoch, m);
        go = e->pos[i] < e->search.epochs; /* an exploit of a trial that ended: nothing left */
    } else if (go) go = asha_rung(e, i, epoch, m);
    if (go) {
        e->at[i] = next_stop(e, e->pos[i]);
        return (e->at[i] - e->pos[i]) * e->epoch_samples;
    }
    if (e->released < e->n) jobs[e->released++].arrival_s = t;
    return 0;
}

int sched_exp_requeue(sched_exp_t *e, int i)
{
    int r = e->requeue[i];
    e->requeue[i] = 0;
    return r;
}

double sched_exp_worth(const sched_exp_t *e, int i)
{
    return e->search.method == SEARCH_ASHA ? pow(e->search.reduction_factor, e->rung[i]) : 1;
}

double sched_exp_work_left(const sched_exp_t *e, int i, double remaining)
{
    return remaining + (e->search.epochs - e->at[i]) * e->epoch_samples;
}

json_t *sched_exp_summary(const sched_exp_t *e)
{
    int stopped = 0, full = 0, best = -1, exploits = 0;
    long epochs = 0;
    double sum = 0;
    for (int i = 0; i < e->n; i++) {
        stopped += e->stopped[i];
        exploits += e->exploits[i];
        if (isfinite(e->metric[i])) epochs += e->trained[i];
        if (e->stopped[i] || e->pos[i] != e->search.epochs || !isfinite(e->metric[i])) continue;
        full++;
        sum += e->metric[i];
        if (best < 0 || (e->search.mode_max ? e->metric[i] > e->metric[best] : e->metric[i] < e->metric[best]))
            best = i;
    }
    static const char *const names[] = {
        [SEARCH_RANDOM] = "random", [SEARCH_GRID] = "grid", [SEARCH_ASHA] = "asha", [SEARCH_PBT] = "pbt"};
    json_t *b = best < 0 ? json_null()
                         : json_pack("{s:i, s:f, s:O}", "trial", best, "metric", e->metric[best], "params",
                                     json_array_get(e->params_now, (size_t)best));
    json_t *o = json_pack("{s:s, s:I, s:i, s:i, s:i, s:I, s:o}", "method", names[e->search.method], "search_seed",
                          (json_int_t)e->search.seed, "trials", e->n, "stopped", stopped, "trained_to_end", full,
                          "epochs_trained", (json_int_t)epochs, "best", b);
    /* the mean of the trials trained to the end: what PBT's exploits raise */
    if (o) json_object_set_new(o, "mean_metric", full ? json_real(sum / full) : json_null());
    if (o && e->search.method == SEARCH_PBT) json_object_set_new(o, "exploits", json_integer(exploits));
    return o;
}
