/* tests/unit/test_sim.c - the simulated cluster's pure parts: the compute-cost model
 * (sim/cost.c), platform files and rank placement (sim/platform.c), and the spec's
 * simulate section. Nothing here needs SimGrid. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "cost.h"
#include "memest.h"
#include "model.h"
#include "onnx_import.h"
#include "op_table.h"
#include "platform.h"
#include "spec.h"

/* LeNet-5 counted by hand: conv1 2*(6*28*28)*25, pool 6*28*28, relu 6*14*14, conv2
 * 2*(16*10*10)*150, pool 1600, relu 400, fc1 2*120*400, relu 120, fc2 2*84*120, relu 84,
 * fc3 2*10*84, softmax and loss 5*10. */
static void test_cost_lenet5(void **state)
{
    (void)state;
    model_t *m = NULL;
    char err[256];
    assert_int_equal(model_create("lenet5", 4, &m, err, sizeof err), 0);
    double fwd = 235200 + 4704 + 1176 + 480000 + 1600 + 400 + 96000 + 120 + 20160 + 84 + 1680 + 50;
    /* a simulated rank's figures (of its built model) and the catalog's row are one */
    catalog_model_t row;
    assert_int_equal(catalog_model_get("lenet5", &row), 0);
    const catalog_model_t *f = cost_figures(m);
    assert_true(cost_forward_flops(f) == fwd && cost_forward_flops(&row) == fwd);
    assert_true(cost_train_flops(f) == 3 * fwd);
    static job_spec_t s;
    assert_int_equal(spec_parse("{\"model\": \"lenet5\"}", &s, err, sizeof err), 0);
    /* the default optimizer: SGD with momentum 0.9 */
    assert_int_equal(cost_optimizer_of(&s), COST_SGD_MOMENTUM);
    assert_true(cost_update_flops(f, &s) == 7.0 * (double)m->nparams);
    model_free(m);
    /* Every model has a cost, the bigger networks more. */
    const char *names[] = {"mlp", "cifar10_quick", "resnet20"};
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(model_create(names[i], 1, &m, err, sizeof err), 0);
        assert_true(cost_forward_flops(cost_figures(m)) > (i ? fwd : 1e5));
        model_free(m);
    }
}

/* The optimizers' operations per parameter (sim/cost.h's table): each rule by the spec's
 * optimizer section, and clipping on top. */
static void test_cost_optimizers(void **state)
{
    (void)state;
    static job_spec_t s;
    char err[256];
    catalog_model_t row;
    assert_int_equal(catalog_model_get("lenet5", &row), 0);
    const double p = (double)row.params;
    static const struct {
        const char *optimizer;
        cost_optimizer_t rule;
        double per_param;
    } CASES[] = {
        {"{\"kind\": \"sgd\", \"momentum\": 0}", COST_SGD, 5},
        {"{\"kind\": \"sgd\", \"momentum\": 0.9}", COST_SGD_MOMENTUM, 7},
        {"{\"kind\": \"sgd\", \"momentum\": 0.9, \"nesterov\": true}", COST_SGD_NESTEROV, 9},
        {"{\"kind\": \"adamw\"}", COST_ADAMW, 15},
        {"{\"kind\": \"adamw\", \"clip_norm\": 1}", COST_ADAMW, 17},
        {"{\"kind\": \"sgd\", \"clip_norm\": 5}", COST_SGD_MOMENTUM, 9},
    };
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        char text[256];
        snprintf(text, sizeof text, "{\"model\": \"lenet5\", \"optimizer\": %s}", CASES[i].optimizer);
        if (spec_parse(text, &s, err, sizeof err) != 0) fail_msg("%s: %s", text, err);
        assert_int_equal(cost_optimizer_of(&s), CASES[i].rule);
        if (cost_update_flops(&row, &s) != CASES[i].per_param * p)
            fail_msg("%s: %.0f flops, want %.0f per parameter", CASES[i].optimizer, cost_update_flops(&row, &s),
                     CASES[i].per_param);
    }
    assert_string_equal(cost_optimizer_name(COST_ADAMW), "adamw");
    assert_true(cost_optimizer_flops_per_param(COST_OPTIMIZER_N) == 0);
}

/* Issue 43: an imported graph's figures come from the operator table's rows (FLOPs per
 * sample, workspaces) through model_describe into its catalog entry, and the memory
 * estimate and the cost model both read that entry, as they read a built-in's. The graph
 * (tests/tools/onnx_cost_graph.py) has rows no built-in network uses. */
static void test_imported_figures(void **state)
{
    (void)state;
    char dir[] = "/tmp/pacer-cost-XXXXXX", path[128], cmd[256], err[1024];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/graph.onnx", dir);
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 tests/tools/onnx_cost_graph.py %s", path);
    int rc = system(cmd);
    int code = rc != -1 && WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
    if (code == 77) {
        rmdir(dir);
        printf("skip: python3-onnx is not installed\n");
        skip();
    }
    assert_int_equal(code, 0);

    /* the spec's path: the worker's and pacer-sim's loader adds the graph to the catalog */
    spec_set_onnx_loader(onnx_import_catalog_add);
    static job_spec_t s;
    char text[512];
    snprintf(text, sizeof text,
             "{\"model\": {\"onnx\": \"%s\"}, \"dataset\": {\"name\": \"cifar10\", \"resize\": [8, 8]}, "
             "\"batch_size\": 16, \"optimizer\": {\"kind\": \"adamw\"}}",
             path);
    if (spec_parse(text, &s, err, sizeof err) != 0) fail_msg("%s", err);
    spec_set_onnx_loader(NULL);
    catalog_model_t e;
    assert_int_equal(catalog_model_get(s.model, &e), 0);
    assert_int_equal(e.source, CATALOG_ONNX);

    /* the entry is model_describe's of the imported model ... */
    model_t *m = NULL;
    if (onnx_import_file(path, s.model, 16, &m, err, sizeof err) != 0) fail_msg("%s", err);
    catalog_model_t d;
    model_describe(m, &d);
    assert_true(d.params == e.params && d.buffers == e.buffers && d.fixed == e.fixed &&
                d.acts_per_sample == e.acts_per_sample && d.dacts_per_sample == e.dacts_per_sample &&
                d.argmax_per_sample == e.argmax_per_sample && d.flops_per_sample == e.flops_per_sample &&
                d.layers == e.layers && d.classes == e.classes);
    /* ... which is the table's: each row's FLOPs per sample (and the loss's 5 per class),
     * each row's workspace within fixed */
    double flops = 5.0 * m->num_classes;
    int kinds_not_builtin = 0;
    for (int i = 0; i < m->nlayers; i++) {
        const layer_t *l = &m->layers[i];
        flops += MODEL_OPS[l->kind].flops(l);
        if (MODEL_OPS[l->kind].workspace) assert_true(MODEL_OPS[l->kind].workspace(l, 16) <= (size_t)e.fixed);
        /* the built-in networks' kinds come first in layer_kind_t (model.h) */
        kinds_not_builtin += l->kind > LAYER_ADD;
    }
    assert_true(kinds_not_builtin >= 2); /* Sigmoid, the broadcast Mul (and its constant) */
    assert_true(flops == e.flops_per_sample && e.fixed > 0 && e.argmax_per_sample == 64);

    /* the memory estimate of the spec is made of the entry's figures */
    double model_bytes, per_sample;
    memest_model(&e, &model_bytes, &per_sample);
    assert_true(model_bytes == 4.0 * (3.0 * (double)e.params + 4 + (double)e.buffers + (double)e.fixed));
    assert_true(per_sample == 4.0 * ((double)e.acts_per_sample + (double)e.dacts_per_sample +
                                     (double)e.argmax_per_sample + e.classes + 3 * 8 * 8 + 2) +
                                  8.0);
    /* the gradients' arena is planned by liveness: smaller than the outputs' */
    assert_true(e.dacts_per_sample > 0 && e.dacts_per_sample < e.acts_per_sample);
    memest_t est;
    if (memest_rank(&s, 1, &est, err, sizeof err) != 0) fail_msg("%s", err);
    /* AdamW's second moment on top; nothing compressed, one thread */
    assert_true(est.model_bytes == model_bytes + 4.0 * (double)e.params);
    assert_true(est.batch_bytes == (double)est.max_batch * per_sample);

    /* the cost model reads the same figures, from the entry or from the rank's model */
    const catalog_model_t *f = cost_figures(m);
    assert_true(cost_forward_flops(&e) == flops && cost_forward_flops(f) == flops);
    assert_true(cost_train_flops(&e) == 3.0 * flops);
    assert_true(cost_update_flops(&e, &s) == 15.0 * (double)e.params &&
                cost_update_flops(f, &s) == 15.0 * (double)e.params);
    printf("imported graph: %ld parameters, %.0f FLOPs per sample, model %.0f bytes + %.0f per sample\n", e.params,
           flops, est.model_bytes, per_sample);
    model_free(m);
    catalog_model_remove(e.name);
    unlink(path);
    rmdir(dir);
}

static int spec_of(const char *simulate, int workers, const char *alg, job_spec_t *s, char *err, size_t len)
{
    char text[1024];
    snprintf(text, sizeof text,
             "{\"model\": \"lenet5\", \"workers\": %d, \"algorithm\": {\"name\": \"%s\"}, "
             "\"simulate\": %s}",
             workers, alg, simulate);
    return spec_parse(text, s, err, len);
}

static void test_spec_simulate(void **state)
{
    (void)state;
    static job_spec_t s;
    char err[512];
    assert_int_equal(spec_of("{}", 4, "ssgd", &s, err, sizeof err), 0);
    assert_int_equal(s.simulate.deterministic, 0);
    assert_true(s.simulate.gflops == 10 && s.simulate.bandwidth_gbps == 10 && s.simulate.latency_us == 5);
    assert_int_equal(s.simulate.gpus_per_node, 1);
    assert_int_equal(spec_of("{\"slowdown\": [1, 1, 2, 4], \"deterministic\": true}", 4, "asgd", &s, err, sizeof err),
                     0);
    assert_int_equal(s.simulate.nslowdown, 4);
    assert_true(s.simulate.slowdown[3] == 4);

    struct {
        const char *sim;
        int workers;
        const char *msg;
    } bad[] = {
        {"{\"slowdown\": [1, 2]}", 4, "simulate.slowdown: has 2 entries, workers is 4"},
        {"{\"slowdown\": [1, 0.5, 1, 1]}", 4, "simulate.slowdown[1]: must be between 1 and 1000"},
        {"{\"gflops\": 0}", 4, "simulate.gflops: must be in (0, 1000000]"},
        {"{\"latency_us\": -1}", 4, "simulate.latency_us: must be between 0 and 1000000"},
        {"{\"gpus_per_node\": 0}", 4, "simulate.gpus_per_node: must be between 1 and 256"},
        {"{\"gpus_per_node\": 2, \"slowdown\": [1, 1, 1, 2]}", 4,
         "simulate.slowdown[3]: must equal simulate.slowdown[2]"},
        {"{\"platform\": \"p.xml\", \"gpus_per_node\": 2}", 4,
         "simulate.gpus_per_node: not used with simulate.platform"},
        {"{\"hostfile\": \"h\"}", 4, "simulate.hostfile: only with simulate.platform"},
        {"{\"platform\": \"x y.xml\"}", 4, "simulate.platform: may contain only"},
        {"{\"platform\": \"$(rm).xml\"}", 4, "simulate.platform: may contain only"},
        {"{\"bandwith_gbps\": 1}", 4, "simulate.bandwith_gbps: unknown field"},
        {"{\"deterministic\": 1}", 4, "simulate.deterministic: must be true or false"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        assert_int_equal(spec_of(bad[i].sim, bad[i].workers, "ssgd", &s, err, sizeof err), -1);
        if (!strstr(err, bad[i].msg)) fail_msg("%s: got '%s', want '%s'", bad[i].sim, err, bad[i].msg);
    }
}

/* precision bf16 computes at its own rate: a generated platform's hosts (and in timing
 * mode what this machine counts as) are simulate.bf16_gflops when given, gflops when not
 * (a CPU without bf16 units runs the portable path); the field belongs to bf16 jobs only. */
static void test_platform_at_bf16(void **state)
{
    (void)state;
    static job_spec_t s;
    static platform_t p;
    char err[512];
    const char *fmt =
        "{\"model\": \"lenet5\", \"workers\": 2, \"algorithm\": {\"name\": \"asgd\"}, \"precision\": \"%s\", \"simulate\": %s}";
    char text[512];
    snprintf(text, sizeof text, fmt, "bf16", "{\"slowdown\": [1, 2], \"gflops\": 10, \"bf16_gflops\": 40}");
    if (spec_parse(text, &s, err, sizeof err) != 0) fail_msg("%s: %s", text, err);
    assert_true(spec_sim_host_flops(&s) == 40e9);
    platform_from_spec(&s, 1, &p);
    assert_true(p.hosts[0].speed == 40e9 && p.hosts[1].speed == 40e9 && p.hosts[2].speed == 20e9);
    assert_non_null(strstr(p.comment, "40 Gflop/s per slowdown-1 host at bf16"));
    snprintf(text, sizeof text, fmt, "bf16", "{\"slowdown\": [1, 2], \"gflops\": 10}");
    if (spec_parse(text, &s, err, sizeof err) != 0) fail_msg("%s: %s", text, err);
    platform_from_spec(&s, 0, &p);
    assert_true(spec_sim_host_flops(&s) == 10e9 && p.hosts[0].speed == 10e9 && p.hosts[1].speed == 5e9);
    snprintf(text, sizeof text, fmt, "fp32", "{\"gflops\": 10}");
    if (spec_parse(text, &s, err, sizeof err) != 0) fail_msg("%s: %s", text, err);
    assert_true(spec_sim_host_flops(&s) == 10e9);

    snprintf(text, sizeof text, fmt, "fp32", "{\"bf16_gflops\": 40}");
    assert_int_equal(spec_parse(text, &s, err, sizeof err), -1);
    assert_non_null(strstr(err, "simulate.bf16_gflops: only with precision bf16"));
    snprintf(text, sizeof text, fmt, "bf16", "{\"bf16_gflops\": -1}");
    assert_int_equal(spec_parse(text, &s, err, sizeof err), -1);
    assert_non_null(strstr(err, "simulate.bf16_gflops: must be between 0 and 1000000"));
}

/* The memory estimate at precision bf16 is fp32's, every figure of it: the activations
 * (and their gradients) a backward pass reads stay float32 at bf16 today, as weights,
 * gradients and optimizer state do at either precision, so a bf16 rank allocates what an
 * fp32 one does (the products' bf16 scratch aside, which the estimate leaves out like
 * OpenBLAS's buffers: common/memest.h). An estimate that took half the activations for bf16
 * would admit jobs that do not fit. Built-in, GPT and threaded AdamW specs alike. */
static void test_memest_bf16_is_fp32s(void **state)
{
    (void)state;
    static const char *const SPECS[] = {
        "{\"model\": \"lenet5\", \"batch_size\": 64, \"precision\": \"%s\"}",
        "{\"model\": \"resnet20\", \"dataset\": {\"name\": \"cifar10\"}, \"batch_size\": 128, \"threads\": 2, "
        "\"optimizer\": {\"kind\": \"adamw\", \"lr\": 0.001}, \"precision\": \"%s\"}",
        "{\"model\": {\"gpt\": {\"layers\": 4, \"heads\": 4, \"embd\": 384, \"block_size\": 64}}, \"dataset\": "
        "{\"format\": \"text\", \"path\": \"/nonexistent\"}, \"batch_size\": 8, \"precision\": \"%s\"}",
    };
    for (size_t i = 0; i < sizeof SPECS / sizeof SPECS[0]; i++) {
        static job_spec_t s;
        memest_t e[2];
        char text[512], err[512];
        for (int b = 0; b < 2; b++) {
            snprintf(text, sizeof text, SPECS[i], b ? "bf16" : "fp32");
            if (spec_parse(text, &s, err, sizeof err) != 0) fail_msg("%s: %s", text, err);
            memset(&e[b], 0, sizeof e[b]);
            if (memest_rank(&s, 1, &e[b], err, sizeof err) != 0) fail_msg("%s: %s", text, err);
        }
        if (memcmp(&e[0], &e[1], sizeof e[0]) != 0)
            fail_msg("%s: at bf16 %.0f bytes a rank (activations and batch %.0f), at fp32 %.0f (%.0f)", SPECS[i],
                     e[1].rank_bytes, e[1].batch_bytes, e[0].rank_bytes, e[0].batch_bytes);
        assert_true(e[0].batch_bytes > 0 && e[0].rank_bytes > e[0].batch_bytes);
    }
}

static char *write_platform(const platform_t *p)
{
    static char path[] = "/tmp/pacer-test-sim-XXXXXX";
    strcpy(path, "/tmp/pacer-test-sim-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    char err[256];
    assert_int_equal(platform_write(p, f, err, sizeof err), 0);
    fclose(f);
    return path;
}

static void test_platform_from_spec(void **state)
{
    (void)state;
    static job_spec_t s;
    static platform_t p;
    char err[512], ps[PLATFORM_NAME_MAX];
    static char slots[64][PLATFORM_NAME_MAX];
    assert_int_equal(spec_of("{\"slowdown\": [1, 1, 2, 4], \"gflops\": 20, \"bandwidth_gbps\": 8, \"latency_us\": 10}",
                             4, "asgd", &s, err, sizeof err),
                     0);
    platform_from_spec(&s, 1, &p);
    assert_int_equal(p.nhosts, 5);
    assert_string_equal(p.hosts[0].name, "ps");
    assert_string_equal(p.hosts[4].name, "w3");
    assert_true(p.hosts[0].speed == 20e9 && p.hosts[3].speed == 10e9 && p.hosts[4].speed == 5e9);
    assert_true(p.bw_bps == 1e9 && p.lat_s > 9.99e-6 && p.lat_s < 10.01e-6);
    assert_int_equal(platform_slots_of(&p, slots, 64, ps), 4);
    assert_string_equal(ps, "ps");
    assert_string_equal(slots[0], "w0");

    /* Written and read back: ps set apart, workers in host order. */
    char *path = write_platform(&p);
    assert_int_equal(platform_slots(path, NULL, slots, 64, ps, err, sizeof err), 4);
    assert_string_equal(ps, "ps");
    assert_string_equal(slots[3], "w3");
    unlink(path);

    /* Nodes of 3: 7 workers on 3 hosts, the last with 1 core. */
    assert_int_equal(spec_of("{\"gpus_per_node\": 3}", 7, "ssgd", &s, err, sizeof err), 0);
    platform_from_spec(&s, 0, &p);
    assert_int_equal(p.nhosts, 3);
    assert_int_equal(p.hosts[0].cores, 3);
    assert_int_equal(p.hosts[2].cores, 1);
    path = write_platform(&p);
    assert_int_equal(platform_slots(path, NULL, slots, 64, ps, err, sizeof err), 7);
    assert_string_equal(ps, "");
    assert_string_equal(slots[2], "n0");
    assert_string_equal(slots[3], "n1");
    assert_string_equal(slots[6], "n2");
    unlink(path);
}

static void test_platform_slots_parsing(void **state)
{
    (void)state;
    char path[] = "/tmp/pacer-test-sim-XXXXXX", hf[] = "/tmp/pacer-test-sim-XXXXXX";
    char err[512], ps[PLATFORM_NAME_MAX];
    static char slots[16][PLATFORM_NAME_MAX];
    int fd = mkstemp(path);
    FILE *f = fdopen(fd, "w");
    fputs("<platform version=\"4.1\"><zone id=\"z\" routing=\"Full\">\n"
          "<!-- <host id=\"commented\" speed=\"1f\"/> -->\n"
          "<host_link id=\"x\" up=\"a\" down=\"b\"/>\n"
          "<host speed='1Gf' id='b' core='2'/>\n"
          "<host\n id=\"a\" speed=\"1Gf\"/></zone></platform>\n",
          f);
    fclose(f);
    assert_int_equal(platform_slots(path, NULL, slots, 16, ps, err, sizeof err), 3);
    assert_string_equal(slots[0], "b");
    assert_string_equal(slots[1], "b");
    assert_string_equal(slots[2], "a");
    /* A hostfile replaces the platform's order. */
    fd = mkstemp(hf);
    f = fdopen(fd, "w");
    fputs("a:3  # three ranks\n\n  b\n", f);
    fclose(f);
    assert_int_equal(platform_slots(path, hf, slots, 16, ps, err, sizeof err), 4);
    assert_string_equal(slots[2], "a");
    assert_string_equal(slots[3], "b");
    /* Placement: the PS first (on the first slot without a "ps" host), then wrap. */
    char *buf = NULL;
    size_t len = 0;
    f = open_memstream(&buf, &len);
    assert_int_equal(platform_write_hostfile(f, slots, 4, "", 6, 1, err, sizeof err), 0);
    fclose(f);
    assert_string_equal(buf, "a\na\na\na\nb\na\na\n");
    free(buf);
    /* Bounded and checked. */
    f = fopen(hf, "w");
    fputs("a:0\n", f);
    fclose(f);
    assert_int_equal(platform_slots(path, hf, slots, 16, ps, err, sizeof err), -1);
    assert_non_null(strstr(err, "slot count 0 must be between 1 and 4096"));
    f = fopen(hf, "w");
    fputs("a:20\n", f);
    fclose(f);
    assert_int_equal(platform_slots(path, hf, slots, 16, ps, err, sizeof err), -1);
    assert_non_null(strstr(err, "more than 16 host slots"));
    unlink(hf);
    unlink(path);
    assert_int_equal(platform_slots("/nonexistent.xml", NULL, slots, 16, ps, err, sizeof err), -1);
    assert_non_null(strstr(err, "/nonexistent.xml: No such file"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cost_lenet5),          cmocka_unit_test(test_cost_optimizers),
        cmocka_unit_test(test_imported_figures),     cmocka_unit_test(test_spec_simulate),
        cmocka_unit_test(test_platform_from_spec),   cmocka_unit_test(test_platform_at_bf16),
        cmocka_unit_test(test_memest_bf16_is_fp32s), cmocka_unit_test(test_platform_slots_parsing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
