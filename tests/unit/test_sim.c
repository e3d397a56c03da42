/* tests/unit/test_sim.c - the simulated cluster's pure parts: the compute-cost model
 * (sim/cost.c), platform files and rank placement (sim/platform.c), and the spec's
 * simulate section. Nothing here needs SimGrid. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cost.h"
#include "model.h"
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
    assert_true(cost_forward_flops(m) == fwd);
    assert_true(cost_train_flops(m) == 3 * fwd);
    assert_true(cost_update_flops(m) == 4.0 * (double)m->nparams);
    model_free(m);
    /* Every model has a cost, the bigger networks more. */
    const char *names[] = {"mlp", "cifar10_quick", "resnet20"};
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(model_create(names[i], 1, &m, err, sizeof err), 0);
        assert_true(cost_forward_flops(m) > (i ? fwd : 1e5));
        model_free(m);
    }
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
        cmocka_unit_test(test_cost_lenet5),
        cmocka_unit_test(test_spec_simulate),
        cmocka_unit_test(test_platform_from_spec),
        cmocka_unit_test(test_platform_slots_parsing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
