/* fuzz/fuzz_sched.c - libFuzzer target for pacer-sched-sim's input parsers
 * (sim/sched_input.c, sim/sched_exp.c): the input is read as a cluster file, then as a
 * trace and as an experiment file against a fixed two-class cluster. Build and run: make
 * fuzz-sched.
 *
 * Beyond "no crash, no leak, no UB": a refusal is one non-empty line that names the file;
 * an accepted cluster keeps its bounds (1..8 classes, hosts and slots in range, speeds
 * finite and positive or unknown); an accepted trace's jobs are in arrival order, each
 * within the cluster's slots and with a known type, its max_workers (when given) from its
 * workers to the slots and past its workers only when elastic. An accepted experiment has
 * 1..256 trials within the slots, the first max_concurrent arriving at 0 and the others
 * later; each trial, driven segment by segment, ends within its rungs plus one segment,
 * each segment a positive number of samples, and is worth at least 1; under PBT every
 * trial trains to the end (none stopped), with at most one exploit per point.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sched_exp.h"
#include "sched_input.h"

static void refusal(const char *err)
{
    if (!err[0] || strchr(err, '\n') || strncmp(err, "f:", 2) != 0) abort();
}

/* The text as an experiment file against the fixed cluster, its trials driven to their end. */
static void experiment(const char *text, size_t size, const sched_cluster_t *fixed)
{
    char err[512] = "";
    static sched_exp_t e;
    sched_job_t *j = NULL;
    int n = 0;
    if (sched_exp_parse(text, size, "f", fixed, &e, &j, &n, err, sizeof err) != 0) {
        refusal(err);
        if (j) abort();
        sched_exp_free(&e);
        return;
    }
    int first = e.released; /* the trials that arrive at 0 */
    if (n < 1 || n > SEARCH_TRIALS_MAX || n != e.n || first < 1 || first > n) abort();
    for (int i = 0; i < n; i++)
        if (j[i].workers < 1 || j[i].workers > 8 || !(j[i].samples > 0) || (j[i].arrival_s == 0) != (i < first))
            abort();
    for (int i = 0; i < n; i++) {
        if (!(sched_exp_first(&e, i) > 0) || !(sched_exp_work_left(&e, i, sched_exp_first(&e, i)) <= j[i].samples))
            abort();
        int segs = 1;
        while (sched_exp_reached(&e, j, i, 1.0 + i) > 0)
            if (++segs > e.nrungs + 1 || !(sched_exp_worth(&e, i) >= 1)) abort();
    }
    for (int i = 0; i < n; i++)
        if (!isfinite(j[i].arrival_s)) abort(); /* every trial that ended released the next */
    json_t *sum = sched_exp_summary(&e);
    if (!sum) abort();
    json_t *ex = json_object_get(sum, "exploits");
    if (e.search.method == SEARCH_PBT && (json_integer_value(json_object_get(sum, "stopped")) != 0 ||
                                          json_integer_value(json_object_get(sum, "trained_to_end")) != n ||
                                          !json_is_integer(ex) || json_integer_value(ex) > (json_int_t)n * e.nrungs))
        abort();
    json_decref(sum);
    free(j);
    sched_exp_free(&e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static sched_cluster_t c, fixed;
    char err[512] = "";
    const char *text = (const char *)data;
    if (sched_cluster_parse(text, size, "f", &c, err, sizeof err) != 0) refusal(err);
    else {
        if (c.nclasses < 1 || c.nclasses > POLICY_CLASSES_MAX || c.ntypes < 1 || c.ntypes > SCHED_TYPES_MAX) abort();
        for (int k = 0; k < c.nclasses; k++)
            if (c.classes[k].hosts < 1 || c.classes[k].hosts > SCHED_HOSTS_MAX || c.classes[k].slots < 1 ||
                c.classes[k].slots > SCHED_SLOTS_MAX)
                abort();
        for (int i = 0; i < SCHED_TYPES_MAX * POLICY_CLASSES_MAX; i++)
            if (!isfinite(c.speed[i]) || c.speed[i] < 0) abort();
    }
    static const char cl[] = "{\"classes\": [{\"name\": \"fast\", \"hosts\": 2, \"slots\": 2}, {\"name\": \"slow\", "
                             "\"hosts\": 4}], \"speeds\": {\"resnet\": {\"fast\": 4, \"slow\": 1}, \"a3c\": {}}}";
    if (sched_cluster_parse(cl, sizeof cl - 1, "f", &fixed, err, sizeof err) != 0) abort();
    experiment(text, size, &fixed);
    sched_job_t *j = NULL;
    int n = 0;
    err[0] = 0;
    if (sched_trace_parse(text, size, "f", &fixed, &j, &n, err, sizeof err) != 0) {
        refusal(err);
        if (j) abort();
        return 0;
    }
    for (int i = 0; i < n; i++) {
        if (j[i].workers < 1 || j[i].workers > 8 || j[i].type < 0 || j[i].type >= fixed.ntypes || !(j[i].samples > 0) ||
            !isfinite(j[i].arrival_s) || !j[i].id[0])
            abort();
        if (i && j[i].arrival_s < j[i - 1].arrival_s) abort();
        /* max_workers: not given, or from its workers to the slots, past them only elastic */
        if (j[i].max_workers && (j[i].max_workers < j[i].workers || j[i].max_workers > 8 ||
                                 (j[i].max_workers > j[i].workers && !j[i].elastic)))
            abort();
    }
    free(j);
    return 0;
}
