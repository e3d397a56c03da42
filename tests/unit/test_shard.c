/* tests/unit/test_shard.c - ZeRO sharding's pure parts: the split of the fused buffer
 * (common/shard_plan.c), algorithm.shard in the spec (common/spec.c: parsing, printing
 * back, the refusals by name) and the per-rank memory estimate (common/memest.c: a rank's,
 * a host's by the largest ranks, and a host's whose ranks are known). The
 * sharded training itself: tests/integration/mpi_shard.sh. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memest.h"
#include "shard_plan.h"
#include "spec.h"

static void check_bounds(size_t np, const double *w, int n, const size_t *b)
{
    double total = 0;
    for (int r = 0; r < n; r++) total += w[r];
    assert_int_equal(b[0], 0);
    assert_int_equal(b[n], np);
    double cum = 0;
    for (int r = 1; r < n; r++) {
        cum += w[r - 1];
        assert_true(b[r] % SHARD_ALIGN == 0); /* every range starts aligned */
        assert_true(b[r] >= b[r - 1]);
        /* within half an alignment unit of the exact share (or clamped at the end) */
        assert_true(fabs((double)b[r] - (double)np * cum / total) <= SHARD_ALIGN / 2.0 + 1e-9 ||
                    b[r] == np / SHARD_ALIGN * SHARD_ALIGN);
    }
}

static void test_plan(void **state)
{
    (void)state;
    size_t b[5];
    const double even[3] = {1, 1, 1}, uneven[3] = {1, 2, 3}, four[4] = {4e9, 1e9, 1e9, 2e9};
    assert_int_equal(shard_plan(61706, even, 3, b), 0);
    check_bounds(61706, even, 3, b);
    assert_int_equal(shard_plan(61706, uneven, 3, b), 0);
    check_bounds(61706, uneven, 3, b);
    assert_int_equal(b[1], 10288); /* 61706 / 6 = 10284.3 -> 643 x 16 */
    assert_int_equal(shard_plan(100000003, four, 4, b), 0);
    check_bounds(100000003, four, 4, b);
    /* fewer parameters than ranks x 16: the last rank holds them, the others nothing */
    assert_int_equal(shard_plan(10, even, 3, b), 0);
    assert_true(b[0] == 0 && b[1] == 0 && b[2] == 0 && b[3] == 10);
    /* one rank owns everything */
    assert_int_equal(shard_plan(77, even, 1, b), 0);
    assert_true(b[0] == 0 && b[1] == 77);
    /* bad weights are refused, not divided by */
    const double zero[2] = {1, 0}, nan2[2] = {1, NAN};
    assert_int_equal(shard_plan(100, zero, 2, b), -1);
    assert_int_equal(shard_plan(100, nan2, 2, b), -1);
    assert_int_equal(shard_plan(100, even, 0, b), -1);
}

#define BASE "{\"model\":\"lenet5\",\"dataset\":{\"name\":\"fashion-mnist\"},\"workers\":3,"

static void parse_ok(const char *text, job_spec_t *s)
{
    char err[512];
    if (spec_parse(text, s, err, sizeof err) != 0) fail_msg("%s: %s", text, err);
}

static void refused(const char *text, const char *want)
{
    job_spec_t s;
    char err[512];
    assert_int_equal(spec_parse(text, &s, err, sizeof err), -1);
    if (!strstr(err, want)) fail_msg("%s\n  gave: %s\n  want: %s", text, err, want);
}

static void test_spec(void **state)
{
    (void)state;
    job_spec_t s;
    parse_ok(BASE "\"algorithm\":{\"name\":\"ssgd\"}}", &s);
    assert_int_equal(s.algorithm.shard.stage, 0); /* off by default */
    parse_ok(BASE "\"algorithm\":{\"name\":\"ssgd\",\"shard\":{\"stage\":2,\"split\":[1,2,3.5]}}}", &s);
    assert_int_equal(s.algorithm.shard.stage, 2);
    assert_string_equal(s.algorithm.shard.split, "weights");
    assert_int_equal(s.algorithm.shard.nweights, 3);
    assert_true(s.algorithm.shard.weights[2] == 3.5);
    /* printed back as given, and read again the same */
    char *text = spec_to_json(&s);
    assert_non_null(strstr(text, "\"shard\":{\"stage\":2,\"split\":[1,2,3.5]}"));
    job_spec_t again;
    parse_ok(text, &again);
    assert_int_equal(again.algorithm.shard.nweights, 3);
    free(text);
    parse_ok(BASE "\"algorithm\":{\"name\":\"ssgd\",\"shard\":{\"stage\":1,\"split\":\"memory\"}}}", &s);
    assert_string_equal(s.algorithm.shard.split, "memory");
    /* a resume may change the sharding: not part of the spec's hash */
    job_spec_t plain;
    parse_ok(BASE "\"algorithm\":{\"name\":\"ssgd\"}}", &plain);
    assert_true(spec_hash(&plain) == spec_hash(&s));

    /* refusals, each by name */
    refused(BASE "\"algorithm\":{\"name\":\"local-sgd\",\"shard\":{\"stage\":1}}}",
            "algorithm.shard: implemented for ssgd only (algorithm.name is local-sgd");
    refused(BASE "\"algorithm\":{\"name\":\"hier-bsp\",\"shard\":{\"stage\":2}}}",
            "algorithm.shard: implemented for ssgd only (algorithm.name is hier-bsp");
    refused(BASE "\"algorithm\":{\"name\":\"asgd\",\"shard\":{\"stage\":1}}}", "implemented for ssgd only");
    refused(BASE "\"algorithm\":{\"name\":\"ssgd\",\"shard\":{\"stage\":1},\"compression\":{\"kind\":\"powersgd\"}}}",
            "algorithm.shard: does not work with algorithm.compression.kind powersgd");
    refused(BASE "\"algorithm\":{\"name\":\"ssgd\",\"shard\":{\"stage\":1},\"compression\":{\"kind\":\"bf16\"}}}",
            "algorithm.compression.kind bf16");
    refused(BASE "\"device\":\"cuda\",\"algorithm\":{\"name\":\"ssgd\",\"shard\":{\"stage\":1}}}",
            "algorithm.shard: implemented on CPU ranks only");
    refused(BASE "\"algorithm\":{\"name\":\"ssgd\",\"shard\":{\"stage\":1,\"split\":[1,2]}}}",
            "algorithm.shard.split: has 2 weights, workers is 3");
    refused(BASE "\"algorithm\":{\"name\":\"ssgd\",\"shard\":{\"split\":[1,2,3]}}}",
            "algorithm.shard.split: only with algorithm.shard.stage 1 or 2");
    refused(BASE "\"algorithm\":{\"name\":\"ssgd\",\"shard\":{\"stage\":3}}}", "algorithm.shard.stage:");
    refused(BASE "\"algorithm\":{\"name\":\"ssgd\",\"shard\":{\"stage\":1,\"split\":[1,0,3]}}}",
            "algorithm.shard.split[1]: must be a number > 0");
    refused(BASE "\"algorithm\":{\"name\":\"ssgd\",\"shard\":{\"stage\":1,\"split\":[1,\"2\",3]}}}",
            "algorithm.shard.split[1]: must be a number > 0");
    refused(BASE "\"algorithm\":{\"name\":\"ssgd\",\"shard\":{\"stage\":1,\"split\":[]}}}",
            "algorithm.shard.split: an empty list");
    refused(BASE "\"algorithm\":{\"name\":\"ssgd\",\"shard\":{\"stage\":1,\"split\":\"weights\"}}}",
            "algorithm.shard.split: must be one of");
    refused(BASE "\"algorithm\":{\"name\":\"ssgd\",\"shard\":{\"stage\":1,\"split\":{}}}}",
            "algorithm.shard.split: must be \"even\", \"memory\" or an array of weights");
    refused(BASE "\"algorithm\":{\"name\":\"ssgd\",\"shard\":{\"stages\":1}}}", "algorithm.shard.stages: unknown field");
}

static void test_memory(void **state)
{
    (void)state;
    job_spec_t plain, s1, s1c;
    char err[512];
    parse_ok(BASE "\"algorithm\":{\"name\":\"ssgd\"},\"optimizer\":{\"kind\":\"adamw\"}}", &plain);
    parse_ok(BASE "\"algorithm\":{\"name\":\"ssgd\",\"shard\":{\"stage\":1,\"split\":[1,2,3]}},"
                  "\"optimizer\":{\"kind\":\"adamw\"}}",
             &s1);
    parse_ok(BASE "\"algorithm\":{\"name\":\"ssgd\",\"shard\":{\"stage\":2,\"split\":[1,2,3]}},"
                  "\"optimizer\":{\"kind\":\"adamw\"},\"checkpoint\":{\"every_steps\":10}}",
             &s1c);
    memest_t full, r[3];
    assert_int_equal(memest_rank(&plain, 3, &full, err, sizeof err), 0);
    const double moments = 8.0 * 61706; /* AdamW's two moments of lenet5 */
    size_t b[4];
    const double w[3] = {1, 2, 3};
    assert_int_equal(shard_plan(61706, w, 3, b), 0);
    for (int k = 0; k < 3; k++) {
        assert_int_equal(memest_rank_of(&s1, 3, k, NULL, &r[k], err, sizeof err), 0);
        const double share = (double)(b[k + 1] - b[k]) / 61706.0;
        assert_true(fabs(r[k].model_bytes - (full.model_bytes - moments * (1 - share))) < 1e-6);
    }
    assert_true(r[0].model_bytes < r[1].model_bytes && r[1].model_bytes < r[2].model_bytes);
    /* with checkpoints rank 0 keeps the whole state (it writes the gathered file) */
    memest_t c0;
    assert_int_equal(memest_rank_of(&s1c, 3, 0, NULL, &c0, err, sizeof err), 0);
    assert_true(c0.model_bytes == full.model_bytes);
    /* a host of 2 of the 3 ranks: the two largest */
    memest_t host;
    assert_int_equal(memest_host_rank(&s1, 3, 2, &host, err, sizeof err), 0);
    assert_true(fabs(2 * host.rank_bytes - (r[1].rank_bytes + r[2].rank_bytes)) < 1e-3);
    assert_int_equal(memest_host_rank(&plain, 3, 2, &host, err, sizeof err), 0);
    assert_true(host.rank_bytes == full.rank_bytes);
}

/* Stage 2 of the built-in GPT: each rank's gradient outside its range is counted only as
 * the buckets the backward pass may hold at once (the one it writes and SHARD_LAG in
 * transfer, each SHARD_BUCKET and twice the largest tensor, here an MLP matrix of
 * 4 x 768^2); stage 1 counts it whole; LeNet-5 (tensors not
 * known to the estimate) whole at both stages. */
static void test_memory_stage2(void **state)
{
    (void)state;
    job_spec_t g1, g2, l1, l2;
    char err[512];
#define GPT                                                                             \
    "{\"model\":{\"gpt\":{\"layers\":14,\"heads\":12,\"embd\":768,\"block_size\":64}}," \
    "\"dataset\":{\"format\":\"text\",\"path\":\"/d\"},\"workers\":4,\"optimizer\":{\"kind\":\"adamw\"},"
    parse_ok(GPT "\"algorithm\":{\"name\":\"ssgd\",\"shard\":{\"stage\":1}}}", &g1);
    parse_ok(GPT "\"algorithm\":{\"name\":\"ssgd\",\"shard\":{\"stage\":2}}}", &g2);
#undef GPT
    parse_ok(BASE "\"algorithm\":{\"name\":\"ssgd\",\"shard\":{\"stage\":1}}}", &l1);
    parse_ok(BASE "\"algorithm\":{\"name\":\"ssgd\",\"shard\":{\"stage\":2}}}", &l2);
    memest_t a, b;
    for (int k = 0; k < 4; k++) {
        assert_int_equal(memest_rank_of(&g1, 4, k, NULL, &a, err, sizeof err), 0);
        assert_int_equal(memest_rank_of(&g2, 4, k, NULL, &b, err, sizeof err), 0);
        size_t bounds[5];
        const double w[4] = {1, 1, 1, 1};
        assert_int_equal(shard_plan((size_t)a.params, w, 4, bounds), 0);
        const double outside = a.params - (double)(bounds[k + 1] - bounds[k]);
        const double pending = (1.0 + SHARD_LAG) * ((double)SHARD_BUCKET + 2.0 * 4 * 768.0 * 768.0);
        assert_true(a.params > 9e7 && outside > pending);
        assert_true(fabs((a.model_bytes - b.model_bytes) - 4.0 * (outside - pending)) < 1.0);
    }
    for (int k = 0; k < 3; k++) {
        assert_int_equal(memest_rank_of(&l1, 3, k, NULL, &a, err, sizeof err), 0);
        assert_int_equal(memest_rank_of(&l2, 3, k, NULL, &b, err, sizeof err), 0);
        assert_true(a.model_bytes == b.model_bytes);
    }
}

/* The worker's check of a host whose ranks it knows (memest_ranks): a split by memory
 * gives the rank of a small host a small range, and the check counts that range, not an
 * even share nor the job's largest; so a job a small host could not hold split evenly
 * fits it split by memory. A list of weights likewise, and a host of both ranks counts
 * their mean. */
static void test_memory_known_ranks(void **state)
{
    (void)state;
    job_spec_t m, wt;
    char err[512];
#define GPT                                                                             \
    "{\"model\":{\"gpt\":{\"layers\":14,\"heads\":12,\"embd\":768,\"block_size\":64}}," \
    "\"dataset\":{\"format\":\"text\",\"path\":\"/d\"},\"workers\":2,\"batch_size\":1,\"optimizer\":{\"kind\":\"adamw\"},"
    parse_ok(GPT "\"algorithm\":{\"name\":\"ssgd\",\"shard\":{\"stage\":2,\"split\":\"memory\"}}}", &m);
    parse_ok(GPT "\"algorithm\":{\"name\":\"ssgd\",\"shard\":{\"stage\":2,\"split\":[1,3]}}}", &wt);
#undef GPT
    const double mem[2] = {1e9, 9e9}; /* rank 0's host has a tenth of the memory */
    const int small[1] = {0}, both[2] = {0, 1};
    memest_t known, largest, r0, r1;
    assert_int_equal(memest_ranks(&m, 2, small, 1, mem, &known, err, sizeof err), 0);
    assert_int_equal(memest_host_rank(&m, 2, 1, &largest, err, sizeof err), 0);
    assert_int_equal(memest_rank_of(&m, 2, 0, mem, &r0, err, sizeof err), 0);
    assert_true(known.rank_bytes == r0.rank_bytes);
    assert_true(known.rank_bytes < 0.8 * largest.rank_bytes);
    const double avail = (known.rank_bytes + largest.rank_bytes) / 2;
    assert_int_equal(memest_check(&known, 1, avail, "a small host", err, sizeof err), 0);
    assert_int_equal(memest_check(&largest, 1, avail, "a small host", err, sizeof err), -1);
    /* weights [1, 3]: rank 0 alone on its host is checked for its quarter */
    assert_int_equal(memest_ranks(&wt, 2, small, 1, NULL, &known, err, sizeof err), 0);
    assert_int_equal(memest_host_rank(&wt, 2, 1, &largest, err, sizeof err), 0);
    assert_int_equal(memest_rank_of(&wt, 2, 1, NULL, &r1, err, sizeof err), 0);
    assert_true(largest.rank_bytes == r1.rank_bytes && known.rank_bytes < r1.rank_bytes);
    /* both ranks on one host: their mean, the larger one's breakdown */
    assert_int_equal(memest_rank_of(&wt, 2, 0, NULL, &r0, err, sizeof err), 0);
    assert_int_equal(memest_ranks(&wt, 2, both, 2, NULL, &known, err, sizeof err), 0);
    assert_true(fabs(2 * known.rank_bytes - (r0.rank_bytes + r1.rank_bytes)) < 1e-3);
    assert_true(known.model_bytes == r1.model_bytes);
    /* no ranks known: memest_rank's whole estimate */
    memest_t whole;
    assert_int_equal(memest_rank(&m, 2, &whole, err, sizeof err), 0);
    assert_int_equal(memest_ranks(&m, 2, NULL, 0, mem, &known, err, sizeof err), 0);
    assert_true(known.rank_bytes == whole.rank_bytes);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plan),
        cmocka_unit_test(test_spec),
        cmocka_unit_test(test_memory),
        cmocka_unit_test(test_memory_stage2),
        cmocka_unit_test(test_memory_known_ranks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
