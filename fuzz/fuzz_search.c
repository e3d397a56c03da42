/* fuzz/fuzz_search.c - libFuzzer target for an experiment's search object
 * (common/search.h, what POST /api/v1/experiments parses): search_parse for a spec of
 * 1 to 12 epochs (the input's first byte), then what the coordinator does with an accepted
 * one: every trial's params, the rungs, each trial's value set in a spec and parsed by the
 * spec's own rules. Build and run: make fuzz-search.
 *
 * Properties checked (an abort is a finding): an accepted search has 1 to
 * SEARCH_TRIALS_MAX trials and max_concurrent within them; each trial's params has one
 * value per searched field, inside its range; the rungs rise strictly and stay below the
 * epochs; the normalised search (search_to_json) parses again to the same trial set; and
 * for pbt, every trial's explored params stay inside the space and an exploit names another
 * trial that did strictly better, the same one when asked again.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search.h"
#include "spec.h"

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "fuzz_search: %s\n", what);
        abort();
    }
}

static void check_params(const search_t *s, json_t *all)
{
    check(json_array_size(all) == (size_t)s->trials, "one params object per trial");
    for (size_t t = 0; t < json_array_size(all); t++) {
        json_t *o = json_array_get(all, t);
        check(json_object_size(o) == (size_t)s->nparams, "one value per searched field");
        for (int i = 0; i < s->nparams; i++) {
            const search_param_t *p = &s->params[i];
            json_t *v = json_object_get(o, p->key);
            check(v != NULL, "every searched field has a value");
            if (p->dist == SEARCH_CHOICE) continue;
            double x = json_number_value(v);
            /* rounding to 6 digits may step just past a bound: a relative slack */
            double slack = 1e-5 * fmax(fabs(p->lo), fabs(p->hi));
            check(isfinite(x) && x >= p->lo - slack && x <= p->hi + slack, "a value inside its range");
        }
    }
}

/* Each trial's spec, as the coordinator builds it: its values set, then spec_parse. */
static void trial_specs(json_t *all, int epochs)
{
    job_spec_t *s = malloc(sizeof *s);
    for (size_t t = 0; s && t < json_array_size(all) && t < 8; t++) {
        json_t *doc = json_pack("{s:s, s:i}", "model", "lenet5", "epochs", epochs);
        const char *key;
        json_t *v;
        int ok = 1;
        json_object_foreach(json_array_get(all, t), key, v)
        {
            if (ok && search_apply(doc, key, json_deep_copy(v)) != 0) ok = 0;
        }
        char *text = ok ? json_dumps(doc, JSON_COMPACT) : NULL;
        char err[512];
        if (text) spec_parse(text, s, err, sizeof err);
        free(text);
        json_decref(doc);
    }
    free(s);
}

/* PBT's rules on the trial set: trial t's values are taken from the input's bytes. */
static void check_pbt(const search_t *s, json_t *all, const uint8_t *data, size_t size)
{
    int n = s->trials < 16 ? s->trials : 16;
    json_t *explored = json_array();
    double v[16];
    int who[16];
    for (int t = 0; t < n; t++) {
        v[t] = t < (int)size ? data[t] / 255.0 : NAN;
        who[t] = t;
        json_array_append_new(explored, search_pbt_explore(s, json_array_get(all, (size_t)t), t, t + 1));
    }
    json_t *fill = search_trial_params(s); /* check_params wants one object per trial */
    for (int t = n; t < s->trials; t++) json_array_append(explored, json_array_get(fill, (size_t)t));
    check_params(s, explored);
    json_decref(fill);
    json_decref(explored);
    for (int self = 0; self < n; self++) {
        double mine = self + 1 < (int)size ? data[self + 1] / 255.0 : NAN;
        int d = search_pbt_exploit(s, v, who, n, self, mine, 1);
        check(d == search_pbt_exploit(s, v, who, n, self, mine, 1), "an exploit is deterministic");
        if (d < 0) continue;
        check(d != self && d < n && isfinite(v[d]), "an exploit names another trial with a value");
        check(!isfinite(mine) || (s->mode_max ? v[d] > mine : v[d] < mine), "the donor did strictly better");
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    int epochs = data[0] % 12 + 1;
    json_t *o = json_loadb((const char *)data + 1, size - 1, 0, NULL);
    if (!o) return 0;
    search_t s;
    char err[512];
    if (search_parse(o, epochs, &s, err, sizeof err) == 0) {
        check(s.trials >= 1 && s.trials <= SEARCH_TRIALS_MAX, "trials in range");
        check(s.max_concurrent >= 1 && s.max_concurrent <= s.trials, "max_concurrent in range");
        json_t *all = search_trial_params(&s);
        check(all != NULL, "trial params");
        check_params(&s, all);
        int rungs[SEARCH_RUNGS_MAX];
        int n = search_rungs(&s, rungs, SEARCH_RUNGS_MAX);
        for (int k = 0; k < n; k++) check(rungs[k] < epochs && (k == 0 || rungs[k] > rungs[k - 1]), "rungs rise");
        trial_specs(all, epochs);
        if (s.method == SEARCH_PBT) check_pbt(&s, all, data, size);
        json_t *norm = search_to_json(&s);
        search_t again;
        check(norm && search_parse(norm, epochs, &again, err, sizeof err) == 0, "the normalised search parses");
        json_t *all2 = search_trial_params(&again);
        check(json_equal(all, all2), "the normalised search gives the same trials");
        json_decref(all2);
        json_decref(norm);
        search_free(&again);
        json_decref(all);
    } else {
        check(err[0] != 0, "a refusal says why");
    }
    search_free(&s);
    json_decref(o);
    return 0;
}
