/* tests/unit/test_param_names.c - the parameter names the coordinator checks a spec's
 * freeze and lora.targets against (common/param_names.h), without model/, against the
 * names of the models model/ builds: every built-in catalog model's (model_create) and the
 * built-in GPT's for each of layers 1 to 3, bias and tie_embeddings (model_create_gpt),
 * the same names in the same order; each name marked a matrix product's weight exactly
 * when model_lora_apply takes it as a target; with lora.targets, freeze's names include
 * exactly the adapters' names model_lora_apply gives them. Then the check's refusals
 * (the field, the glob, the model named), the summary's JSON round trip and its bounds. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "gpt.h"
#include "lora.h"
#include "model.h"
#include "param_names.h"
#include "spec.h"

/* The i-th name of p into out (PARAM_NAME_MAX bytes): 0, or -1 past the last. */
static int name_at(const param_names_t *p, size_t i, char *out)
{
    const char *s = p->text;
    for (size_t k = 0; k < i; k++) s = strchr(s, '\n') + 1;
    const char *nl = strchr(s, '\n');
    if (!nl) return -1;
    snprintf(out, PARAM_NAME_MAX, "%.*s", (int)(nl - s), s);
    return 0;
}

/* p against model m: its parameter tensors' names in order, and each marked a product's
 * weight exactly when model_lora_apply adapts it (a target glob of that one name). */
static void same_as_model(const char *what, const param_names_t *p, const model_t *m)
{
    size_t i = 0;
    char name[PARAM_NAME_MAX];
    for (int t = 0; t < m->ntensors; t++) {
        if (m->tensors[t].is_buffer) continue;
        if (name_at(p, i, name) != 0 || strcmp(name, m->tensors[t].name) != 0)
            fail_msg("%s: name %zu: %s here, %s in the model", what, i, i < p->n ? name : "none", m->tensors[t].name);
        const lora_opts_t o = {.rank = 1, .alpha = 1, .dropout = 0, .targets = m->tensors[t].name};
        model_t *l = NULL;
        char err[512];
        const int adapted = model_lora_apply(m, &o, &l, err, sizeof err) == 0;
        model_free(l);
        if (adapted != p->product[i])
            fail_msg("%s: %s is %sa product's weight here, model_lora_apply %s it", what, name,
                     p->product[i] ? "" : "not ", adapted ? "adapts" : "refuses");
        i++;
    }
    if (i != p->n) fail_msg("%s: %zu names here, %zu in the model", what, p->n, i);
}

static job_spec_t *spec_of(const char *model)
{
    job_spec_t *s = calloc(1, sizeof *s);
    assert_non_null(s);
    snprintf(s->model, sizeof s->model, "%s", model);
    return s;
}

static void test_builtin_catalog_names(void **state)
{
    (void)state;
    catalog_model_t row;
    int rows = 0;
    for (size_t r = 0; catalog_model_at(r, &row) == 0; r++) {
        if (row.source != CATALOG_BUILTIN) continue;
        model_t *m = NULL;
        char err[512];
        assert_int_equal(model_create(row.name, 2, &m, err, sizeof err), 0);
        job_spec_t *s = spec_of(row.name);
        param_names_t p;
        assert_int_equal(param_names_builtin(s, &p), 1);
        same_as_model(row.name, &p, m);
        param_names_free(&p);
        model_free(m);
        free(s);
        rows++;
    }
    assert_true(rows >= 4);
}

static void test_gpt_names(void **state)
{
    (void)state;
    for (int layers = 1; layers <= 3; layers++)
        for (int bias = 0; bias < 2; bias++)
            for (int tie = 0; tie < 2; tie++) {
                const model_gpt_t g = {
                    .layers = layers, .heads = 2, .embd = 8, .block = 4, .vocab = 11, .bias = bias, .tie = tie};
                model_t *m = NULL;
                char err[512], what[64];
                assert_int_equal(model_create_gpt("gpt", &g, 1, &m, err, sizeof err), 0);
                job_spec_t *s = spec_of("gpt");
                s->gpt.layers = layers, s->gpt.heads = 2, s->gpt.embd = 8, s->gpt.bias = bias;
                s->gpt.tie_embeddings = tie;
                param_names_t p;
                assert_int_equal(param_names_builtin(s, &p), 1);
                snprintf(what, sizeof what, "gpt layers %d bias %d tie %d", layers, bias, tie);
                same_as_model(what, &p, m);
                param_names_free(&p);
                model_free(m);
                free(s);
            }
}

/* With lora.targets, freeze is matched against the model the worker freezes: the adapted
 * one, whose adapters' names are model_lora_apply's. */
static void test_adapter_names(void **state)
{
    (void)state;
    const model_gpt_t g = {.layers = 2, .heads = 2, .embd = 8, .block = 4, .vocab = 11, .bias = 1, .tie = 1};
    model_t *m = NULL, *l = NULL;
    char err[512];
    assert_int_equal(model_create_gpt("gpt", &g, 1, &m, err, sizeof err), 0);
    const lora_opts_t o = {.rank = 2, .alpha = 2, .targets = "*.attn.c_attn.weight"};
    assert_int_equal(model_lora_apply(m, &o, &l, err, sizeof err), 0);
    job_spec_t *s = spec_of("gpt");
    s->gpt.layers = 2, s->gpt.heads = 2, s->gpt.embd = 8, s->gpt.bias = 1, s->gpt.tie_embeddings = 1;
    snprintf(s->lora.targets, sizeof s->lora.targets, "%s", o.targets);
    param_names_t p;
    assert_int_equal(param_names_builtin(s, &p), 1);
    int adapters = 0;
    for (int t = 0; t < l->ntensors; t++) {
        if (!model_lora_is_adapter(l, t)) continue;
        snprintf(s->freeze, sizeof s->freeze, "%s", l->tensors[t].name);
        if (param_names_check(s, &p, "gpt", err, sizeof err) != 0) fail_msg("adapter %s: %s", s->freeze, err);
        adapters++;
    }
    assert_int_equal(adapters, 4); /* A and B of 2 blocks' c_attn */
    /* an adapter the targets do not add, and adapters without lora, are no parameters */
    snprintf(s->freeze, sizeof s->freeze, "transformer.h.0.mlp.c_fc.lora_A.weight");
    assert_int_not_equal(param_names_check(s, &p, "gpt", err, sizeof err), 0);
    s->lora.targets[0] = '\0';
    snprintf(s->freeze, sizeof s->freeze, "*.lora_?.weight");
    assert_int_not_equal(param_names_check(s, &p, "gpt", err, sizeof err), 0);
    param_names_free(&p);
    model_free(l);
    model_free(m);
    free(s);
}

static void test_check_messages(void **state)
{
    (void)state;
    job_spec_t *s = spec_of("gpt");
    s->gpt.layers = 2, s->gpt.heads = 2, s->gpt.embd = 8, s->gpt.bias = 1, s->gpt.tie_embeddings = 1;
    param_names_t p;
    char err[1024];
    assert_int_equal(param_names_builtin(s, &p), 1);
    snprintf(s->freeze, sizeof s->freeze, "transformer.h.1.*\ntransformer.wpe.weight");
    assert_int_equal(param_names_check(s, &p, "gpt", err, sizeof err), 0);
    snprintf(s->freeze, sizeof s->freeze, "transformer.h.1.*\ntransformer.h.9.*");
    assert_int_equal(param_names_check(s, &p, "gpt", err, sizeof err), -1);
    assert_non_null(strstr(err, "freeze: \"transformer.h.9.*\" matches no parameter of model gpt"));
    assert_non_null(strstr(err, "transformer.wte.weight"));
    /* lora.targets: products' weights only; a layer norm's weight is none, nor a tied head */
    s->freeze[0] = '\0';
    snprintf(s->lora.targets, sizeof s->lora.targets, "*.c_attn.weight\n*.mlp.c_*.weight");
    assert_int_equal(param_names_check(s, &p, "gpt", err, sizeof err), 0);
    snprintf(s->lora.targets, sizeof s->lora.targets, "*.ln_1.weight");
    assert_int_equal(param_names_check(s, &p, "gpt", err, sizeof err), -1);
    assert_non_null(strstr(err, "lora.targets: \"*.ln_1.weight\" matches no matrix product's weight of model gpt"));
    assert_non_null(strstr(err, "transformer.h.0.attn.c_attn.weight"));
    snprintf(s->lora.targets, sizeof s->lora.targets, "lm_head.weight");
    assert_int_equal(param_names_check(s, &p, "gpt", err, sizeof err), -1);
    param_names_free(&p);
    /* an untied head is a product */
    s->gpt.tie_embeddings = 0;
    assert_int_equal(param_names_builtin(s, &p), 1);
    assert_int_equal(param_names_check(s, &p, "gpt", err, sizeof err), 0);
    param_names_free(&p);
    /* a model of no known names (uploaded or imported): none here */
    job_spec_t *u = spec_of("nosuch");
    assert_int_equal(param_names_builtin(u, &p), 0);
    free(u);
    free(s);
}

/* The validator's summary members: a round trip, null or absent (no names), and every
 * bound refused by member. */
static void test_json(void **state)
{
    (void)state;
    param_names_t p = {0}, q;
    char err[256];
    assert_int_equal(param_names_add(&p, "conv.weight", 0), 0);
    assert_int_equal(param_names_add(&p, "fc.weight", 1), 0);
    assert_int_equal(param_names_add(&p, "fc.bias", 0), 0);
    assert_int_equal(param_names_add(&p, "", 0), -1);
    assert_int_equal(param_names_add(&p, "tab\tname", 0), -1);
    assert_int_equal(param_names_add(&p, "caf\xc3\xa9", 0), -1);
    json_t *j = param_names_json(&p);
    assert_non_null(j);
    assert_int_equal(json_integer_value(json_array_get(json_object_get(j, "product_weights"), 0)), 1);
    assert_int_equal(param_names_from_json(j, &q, err, sizeof err), 1);
    assert_int_equal(q.n, 3);
    assert_string_equal(q.text, p.text);
    assert_memory_equal(q.product, p.product, 3);
    param_names_free(&q);
    json_decref(j);
    param_names_free(&p);

    static const struct {
        const char *json;
        int rc;
        const char *says;
    } cases[] = {
        {"{}", 0, NULL},
        {"{\"parameter_names\": null, \"product_weights\": null}", 0, NULL},
        {"{\"parameter_names\": \"a\", \"product_weights\": []}", -1, "parameter_names: must be an array"},
        {"{\"parameter_names\": [\"a\"]}", -1, "product_weights"},
        {"{\"parameter_names\": [\"a\", 3], \"product_weights\": []}", -1, "parameter_names[1]: must be a string"},
        {"{\"parameter_names\": [\"a\", \"\"], \"product_weights\": []}", -1, "parameter_names[1]: must be 1 to 127"},
        {"{\"parameter_names\": [\"a\\nb\"], \"product_weights\": []}", -1, "printable ASCII"},
        {"{\"parameter_names\": [\"a\", \"b\"], \"product_weights\": [1, 0]}", -1, "product_weights[1]"},
        {"{\"parameter_names\": [\"a\", \"b\"], \"product_weights\": [1, 1]}", -1, "product_weights[1]"},
        {"{\"parameter_names\": [\"a\", \"b\"], \"product_weights\": [2]}", -1, "product_weights[0]"},
        {"{\"parameter_names\": [\"a\", \"b\"], \"product_weights\": [-1]}", -1, "product_weights[0]"},
        {"{\"parameter_names\": [\"a\", \"b\"], \"product_weights\": [0, 1, 1]}", -1, "product_weights"},
        {"{\"parameter_names\": [\"a\", \"b\"], \"product_weights\": [1]}", 1, NULL},
        {"{\"parameter_names\": [], \"product_weights\": []}", 1, NULL}, /* a model of no parameters */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *c = json_loads(cases[i].json, 0, NULL);
        assert_non_null(c);
        err[0] = '\0';
        const int rc = param_names_from_json(c, &q, err, sizeof err);
        if (rc != cases[i].rc || (cases[i].says && !strstr(err, cases[i].says)))
            fail_msg("case %zu %s: %d (%s), want %d (%s)", i, cases[i].json, rc, err, cases[i].rc,
                     cases[i].says ? cases[i].says : "");
        param_names_free(&q);
        json_decref(c);
    }
    /* no parameters (fuzz_paramnames' input): known, empty, and a glob is refused by name */
    json_t *none = json_loads("{\"parameter_names\": [], \"product_weights\": []}", 0, NULL);
    assert_int_equal(param_names_from_json(none, &q, err, sizeof err), 1);
    assert_int_equal(q.n, 0);
    assert_int_equal(q.len, 0);
    json_t *again = param_names_json(&q);
    assert_non_null(again);
    assert_true(json_equal(again, none));
    job_spec_t *s = spec_of("m");
    snprintf(s->freeze, sizeof s->freeze, "*.weight");
    assert_int_equal(param_names_check(s, &q, "m", err, sizeof err), -1);
    assert_non_null(strstr(err, "freeze: \"*.weight\" matches no parameter of model m (it has none)"));
    free(s);
    param_names_free(&q);
    json_decref(again);
    json_decref(none);
    /* the count and byte bounds */
    json_t *names = json_array(), *big = json_object();
    char name[PARAM_NAME_MAX];
    for (int i = 0; i <= PARAM_NAMES_MAX; i++) {
        snprintf(name, sizeof name, "n%d", i);
        json_array_append_new(names, json_string(name));
    }
    json_object_set_new(big, "parameter_names", names);
    json_object_set_new(big, "product_weights", json_array());
    assert_int_equal(param_names_from_json(big, &q, err, sizeof err), -1);
    assert_non_null(strstr(err, "at most 4096"));
    json_array_remove(names, 0);
    assert_int_equal(param_names_from_json(big, &q, err, sizeof err), 1);
    param_names_free(&q);
    json_array_clear(names);
    memset(name, 'x', PARAM_NAME_MAX - 1);
    name[PARAM_NAME_MAX - 1] = '\0';
    for (int i = 0; i < PARAM_NAMES_BYTES / PARAM_NAME_MAX + 1; i++) json_array_append_new(names, json_string(name));
    assert_int_equal(param_names_from_json(big, &q, err, sizeof err), -1);
    assert_non_null(strstr(err, "256 KiB"));
    json_decref(big);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_builtin_catalog_names),
        cmocka_unit_test(test_gpt_names),
        cmocka_unit_test(test_adapter_names),
        cmocka_unit_test(test_check_messages),
        cmocka_unit_test(test_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
