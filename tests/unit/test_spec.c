/* tests/unit/test_spec.c - the job spec parser and validator (common/spec.c).
 *
 * Runs with the repository root as the current directory: it reads the examples/ specs and
 * docs/JOB_SPEC.md from there.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "catalog.h"
#include "memest.h"
#include "modelstore.h"
#include "planner.h"
#include "spec.h"
#include "suggest.h"

/* ---- helpers ------------------------------------------------------------------------ */

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (cap - n - 1 == 0) {
            char *bigger = realloc(buf, cap * 2);
            if (!bigger) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = bigger;
            cap *= 2;
        }
    }
    fclose(f);
    if (buf) buf[n] = '\0';
    return buf;
}

/* Parses text that must be valid; fails the test with the parser's message otherwise. */
static void parse_ok(const char *text, job_spec_t *s)
{
    char err[256] = "";
    int rc = spec_parse(text, s, err, sizeof err);
    if (rc != 0) fail_msg("spec_parse failed: %s\n  on: %s", err, text);
}

/* parse_ok of fmt with each algorithm of algs in turn (its one %s), into *s. */
static void parse_ok_algs(const char *fmt, const char *const *algs, size_t n, job_spec_t *s)
{
    for (size_t i = 0; i < n; i++) {
        char text[256];
        snprintf(text, sizeof text, fmt, algs[i]);
        parse_ok(text, s);
    }
}

/* Everything set, nothing at its default (where the type allows). */
static const char *FULL_SPEC =
    "{\n"
    "  \"name\": \"full-1.x_y\",\n"
    "  \"model\": \"resnet20\",\n"
    "  \"dataset\": {\"name\": \"cifar10\", \"path\": \"/data/cifar\", \"train_subset\": 5000,\n"
    "              \"test_subset\": 1000, \"augment\": true},\n"
    "  \"batch_size\": 32, \"epochs\": 7, \"workers\": 4, \"device\": \"cuda\",\n"
    "  \"seed\": 1234567890123, \"threads\": 2, \"target_accuracy\": 0.75, \"log_every\": 10,\n"
    "  \"on_collapse\": \"restart\",\n"
    "  \"optimizer\": {\"lr\": 0.1, \"momentum\": 0.5, \"nesterov\": true,\n"
    "                \"weight_decay\": 0.0001, \"clip_norm\": 5, \"async_momentum\": \"explicit\",\n"
    "                \"lr_schedule\": {\"kind\": \"cosine\", \"warmup_epochs\": 0.5,\n"
    "                                \"step_epochs\": 2.5, \"gamma\": 0.5, \"min_lr\": 0.001}},\n"
    "  \"algorithm\": {\"name\": \"dc-asgd\", \"dynamic_batch\": true, \"replan_steps\": 7,\n"
    "                \"min_batch\": 16, \"max_batch\": 128, \"k_steps\": 3, \"group_size\": 2,\n"
    "                \"local_steps\": 5, \"n\": 2, \"dc_variant\": \"c\", \"lambda0\": 0.5,\n"
    "                \"dc_m\": 0.9, \"kappa\": 2.5, \"gamma\": 0.8, \"eps\": 1e-8,\n"
    "                \"tau_max\": 16},\n"
    "  \"checkpoint\": {\"every_steps\": 500, \"dir\": \"/tmp/ck\"},\n"
    "  \"emulate\": {\"slowdown\": [1, 1.5, 2, 4],\n"
    "              \"schedule\": [{\"step\": 100, \"rank\": 3, \"slowdown\": 1},\n"
    "                           {\"step\": 200, \"rank\": 0, \"slowdown\": 3}]}\n"
    "}\n";

/* ---- defaults and a full spec --------------------------------------------------------- */

static void test_defaults(void **state)
{
    (void)state;
    job_spec_t s;
    spec_defaults(&s);
    assert_string_equal(s.name, "job");
    assert_string_equal(s.model, "");
    assert_string_equal(s.dataset.name, "fashion-mnist");
    assert_string_equal(s.dataset.path, "");
    assert_int_equal(s.dataset.train_subset, 0);
    assert_int_equal(s.dataset.test_subset, 0);
    assert_int_equal(s.dataset.augment, 0);
    assert_int_equal(s.dataset.crop_padding, 4);
    assert_int_equal(s.dataset.hflip, 1);
    assert_string_equal(s.dataset.format, "auto");
    assert_string_equal(s.dataset.layout, "nhwc");
    assert_string_equal(s.dataset.cache_dir, "");
    assert_int_equal(s.dataset.nresize, 0);
    assert_int_equal(s.dataset.nmean, 0);
    assert_int_equal(s.dataset.nstd, 0);
    assert_string_equal(spec_dataset_format(&s), "idx");
    assert_int_equal(spec_dataset_is_user(&s), 0);
    assert_string_equal(s.algorithm.name, "sgd");
    assert_int_equal(s.algorithm.dynamic_batch, 0);
    assert_int_equal(s.algorithm.replan_steps, 20);
    assert_int_equal(s.algorithm.min_batch, 0);
    assert_int_equal(s.algorithm.max_batch, 0);
    assert_int_equal(s.algorithm.k_steps, 8);
    assert_int_equal(s.algorithm.group_size, 0);
    assert_int_equal(s.algorithm.local_steps, 8);
    assert_int_equal(s.algorithm.n, 1);
    assert_string_equal(s.algorithm.dc_variant, "a");
    assert_true(s.algorithm.lambda0 == 0.0); /* resolved: sgd has no delay compensation */
    assert_true(s.algorithm.dc_m == 0.95);
    assert_true(s.algorithm.kappa == 1.0);
    assert_true(s.algorithm.gamma == 0.9);
    assert_true(s.algorithm.eps == 1e-7);
    assert_int_equal(s.algorithm.tau_max, 0);
    assert_true(s.optimizer.lr == 0.01);
    assert_true(s.optimizer.momentum == 0.9);
    assert_int_equal(s.optimizer.nesterov, 0);
    assert_true(s.optimizer.weight_decay == 0.0);
    assert_true(s.optimizer.clip_norm == 0.0);
    assert_string_equal(s.optimizer.async_momentum, "compensated");
    assert_string_equal(s.on_collapse, "continue");
    assert_string_equal(s.optimizer.lr_schedule.kind, "constant");
    assert_true(s.optimizer.lr_schedule.warmup_epochs == 0.0);
    assert_true(s.optimizer.lr_schedule.step_epochs == 1.0);
    assert_true(s.optimizer.lr_schedule.gamma == 0.1);
    assert_true(s.optimizer.lr_schedule.min_lr == 0.0);
    assert_int_equal(s.batch_size, 64);
    assert_int_equal(s.epochs, 1);
    assert_int_equal(s.workers, 1);
    assert_string_equal(s.device, "auto");
    assert_int_equal(s.seed, 42);
    assert_int_equal(s.threads, 1);
    assert_int_equal(s.checkpoint.every_steps, 0);
    assert_string_equal(s.checkpoint.dir, "checkpoints");
    assert_int_equal(s.emulate.nslowdown, 0);
    for (int i = 0; i < SPEC_MAX_WORKERS; i++) assert_true(s.emulate.slowdown[i] == 1.0);
    assert_int_equal(s.emulate.nschedule, 0);
    assert_true(s.target_accuracy == 0.0);
    assert_int_equal(s.log_every, 100);
    assert_false(spec_is_async(&s));

    /* Deterministic bytes (padding included), so memcmp compares specs. */
    job_spec_t t;
    memset(&t, 0xAB, sizeof t);
    spec_defaults(&t);
    assert_memory_equal(&s, &t, sizeof s);
}

static void test_minimal_spec_gets_defaults(void **state)
{
    (void)state;
    job_spec_t s, d;
    parse_ok("{\"model\": \"lenet5\"}", &s);
    spec_defaults(&d);
    strcpy(d.model, "lenet5");
    assert_memory_equal(&s, &d, sizeof s);
}

static void test_full_spec(void **state)
{
    (void)state;
    job_spec_t s;
    parse_ok(FULL_SPEC, &s);
    assert_string_equal(s.name, "full-1.x_y");
    assert_string_equal(s.model, "resnet20");
    assert_string_equal(s.dataset.name, "cifar10");
    assert_string_equal(s.dataset.path, "/data/cifar");
    assert_int_equal(s.dataset.train_subset, 5000);
    assert_int_equal(s.dataset.test_subset, 1000);
    assert_int_equal(s.dataset.augment, 1);
    assert_int_equal(s.batch_size, 32);
    assert_int_equal(s.epochs, 7);
    assert_int_equal(s.workers, 4);
    assert_string_equal(s.device, "cuda");
    assert_true(s.seed == 1234567890123UL);
    assert_int_equal(s.threads, 2);
    assert_true(s.target_accuracy == 0.75);
    assert_int_equal(s.log_every, 10);
    assert_true(s.optimizer.lr == 0.1);
    assert_true(s.optimizer.momentum == 0.5);
    assert_int_equal(s.optimizer.nesterov, 1);
    assert_true(s.optimizer.weight_decay == 0.0001);
    assert_true(s.optimizer.clip_norm == 5.0);
    assert_string_equal(s.optimizer.async_momentum, "explicit");
    assert_string_equal(s.on_collapse, "restart");
    assert_string_equal(s.optimizer.lr_schedule.kind, "cosine");
    assert_true(s.optimizer.lr_schedule.warmup_epochs == 0.5);
    assert_true(s.optimizer.lr_schedule.step_epochs == 2.5);
    assert_true(s.optimizer.lr_schedule.gamma == 0.5);
    assert_true(s.optimizer.lr_schedule.min_lr == 0.001);
    assert_string_equal(s.algorithm.name, "dc-asgd");
    assert_int_equal(s.algorithm.dynamic_batch, 1);
    assert_int_equal(s.algorithm.replan_steps, 7);
    assert_int_equal(s.algorithm.min_batch, 16);
    assert_int_equal(s.algorithm.max_batch, 128);
    assert_int_equal(s.algorithm.k_steps, 3);
    assert_int_equal(s.algorithm.group_size, 2);
    assert_int_equal(s.algorithm.local_steps, 5);
    assert_int_equal(s.algorithm.n, 2);
    assert_string_equal(s.algorithm.dc_variant, "c");
    assert_true(s.algorithm.lambda0 == 0.5);
    assert_true(s.algorithm.dc_m == 0.9);
    assert_true(s.algorithm.kappa == 2.5);
    assert_true(s.algorithm.gamma == 0.8);
    assert_true(s.algorithm.eps == 1e-8);
    assert_int_equal(s.algorithm.tau_max, 16);
    assert_int_equal(s.checkpoint.every_steps, 500);
    assert_string_equal(s.checkpoint.dir, "/tmp/ck");
    assert_int_equal(s.emulate.nslowdown, 4);
    assert_true(s.emulate.slowdown[0] == 1.0);
    assert_true(s.emulate.slowdown[1] == 1.5);
    assert_true(s.emulate.slowdown[2] == 2.0);
    assert_true(s.emulate.slowdown[3] == 4.0);
    assert_true(s.emulate.slowdown[4] == 1.0); /* past the given entries: the default */
    assert_int_equal(s.emulate.nschedule, 2);
    assert_int_equal(s.emulate.schedule[0].step, 100);
    assert_int_equal(s.emulate.schedule[0].rank, 3);
    assert_true(s.emulate.schedule[0].slowdown == 1.0);
    assert_int_equal(s.emulate.schedule[1].step, 200);
    assert_int_equal(s.emulate.schedule[1].rank, 0);
    assert_true(s.emulate.schedule[1].slowdown == 3.0);
    assert_true(spec_is_async(&s));
}

/* ---- invalid specs ------------------------------------------------------------------ */

typedef struct {
    const char *json;
    const char *want; /* substring of the error message */
} bad_case_t;

#define W4 "\"model\":\"lenet5\",\"workers\":4,\"algorithm\":{\"name\":\"ssgd\"}"

static const bad_case_t BAD[] = {
    /* unknown fields, top level and nested */
    {"{\"model\":\"lenet5\",\"batch_sise\":64}", "batch_sise: unknown field"},
    {"{\"model\":\"lenet5\",\"optimizer\":{\"momentun\":0.9}}", "optimizer.momentun: unknown field"},
    {"{\"model\":\"lenet5\",\"optimizer\":{\"lr_schedule\":{\"decay\":2}}}",
     "optimizer.lr_schedule.decay: unknown field"},
    {"{\"model\":\"lenet5\",\"dataset\":{\"name\":\"mnist\",\"dir\":\"x\"}}", "dataset.dir: unknown field"},
    {"{\"model\":\"lenet5\",\"params\":{}}", "params: unknown field"},
    {"{\"model\":\"lenet5\",\"algorithm\":{\"params\":{\"name\":\"ssgd\"}}}", "algorithm.params.name: unknown field"},
    {"{\"model\":\"lenet5\",\"algorithm\":{\"params\":{\"params\":{}}}}", "algorithm.params.params: unknown field"},
    {"{" W4 ",\"emulate\":{\"schedule\":[{\"step\":1,\"rank\":0,\"slowdown\":2,\"when\":1}]}}",
     "emulate.schedule[0].when: unknown field"},
    {"{\"model\":\"lenet5\",\"emulate\":{\"jitter\":0.1}}", "emulate.jitter: unknown field"},
    {"{\"model\":\"lenet5\",\"a\\nb\":1}", "a?b: unknown field"},
    /* issue 29's fields: enums, strictly typed, where the table puts them */
    {"{\"model\":\"lenet5\",\"optimizer\":{\"async_momentum\":\"implicit\"}}",
     "optimizer.async_momentum: must be one of explicit, compensated"},
    {"{\"model\":\"lenet5\",\"optimizer\":{\"async_momentum\":true}}", "optimizer.async_momentum: must be a string"},
    {"{\"model\":\"lenet5\",\"optimizer\":{\"async_momentum\":\"Compensated\"}}",
     "optimizer.async_momentum: must be one of explicit, compensated"},
    {"{\"model\":\"lenet5\",\"async_momentum\":\"compensated\"}", "async_momentum: unknown field"},
    {"{\"model\":\"lenet5\",\"on_collapse\":\"retry\"}", "on_collapse: must be one of continue, fail, restart"},
    {"{\"model\":\"lenet5\",\"on_collapse\":null}", "on_collapse: must be a string"},
    {"{\"model\":\"lenet5\",\"on_collapse\":2}", "on_collapse: must be a string"},
    {"{\"model\":\"lenet5\",\"algorithm\":{\"on_collapse\":\"fail\"}}", "algorithm.on_collapse: unknown field"},
    {"{\"model\":\"lenet5\",\"optimizer.lr\":0.1}", "optimizer.lr: unknown field (keys cannot"},
    {"{\"model\":\"lenet5\",\"optimizer\":{\"lr_schedule.kind\":\"step\"}}",
     "optimizer.lr_schedule.kind: unknown field"},
    {"{\"model\":\"lenet5\",\"\":1}", "\"\": unknown field"},
    /* wrong types, one per kind */
    {"{\"model\":\"lenet5\",\"optimizer\":{\"lr\":\"0.1\"}}", "optimizer.lr: must be a number"},
    {"{\"model\":\"lenet5\",\"optimizer\":{\"lr\":null}}", "optimizer.lr: must be a number"},
    {"{\"model\":5}", "model: must be a string"},
    {"{\"model\":\"lenet5\",\"name\":[\"a\"]}", "name: must be a string"},
    {"{\"model\":\"lenet5\",\"optimizer\":{\"nesterov\":1}}", "optimizer.nesterov: must be true or false"},
    {"{\"model\":\"lenet5\",\"dataset\":{\"augment\":\"yes\"}}", "dataset.augment: must be true or false"},
    {"{\"model\":\"lenet5\",\"batch_size\":64.5}", "batch_size: must be an integer"},
    {"{\"model\":\"lenet5\",\"batch_size\":64.0}", "batch_size: must be an integer"},
    {"{\"model\":\"lenet5\",\"epochs\":\"3\"}", "epochs: must be an integer"},
    {"{\"model\":\"lenet5\",\"seed\":true}", "seed: must be an integer"},
    {"{\"model\":\"lenet5\",\"checkpoint\":{\"every_steps\":1.5}}", "checkpoint.every_steps: must be an integer"},
    {"{\"model\":\"lenet5\",\"optimizer\":5}", "optimizer: must be an object"},
    {"{\"model\":\"lenet5\",\"optimizer\":{\"lr_schedule\":\"cosine\"}}", "optimizer.lr_schedule: must be an object"},
    {"{\"model\":\"lenet5\",\"algorithm\":{\"params\":[1]}}", "algorithm.params: must be an object"},
    {"{\"model\":\"lenet5\",\"emulate\":{\"slowdown\":2}}", "emulate.slowdown: must be an array of numbers"},
    {"{" W4 ",\"emulate\":{\"slowdown\":[1,\"2\",1,1]}}", "emulate.slowdown[1]: must be a number"},
    {"{\"model\":\"lenet5\",\"emulate\":{\"schedule\":{}}}", "emulate.schedule: must be an array"},
    {"{\"model\":\"lenet5\",\"emulate\":{\"schedule\":[1]}}", "emulate.schedule[0]: must be an object"},
    {"{" W4 ",\"emulate\":{\"schedule\":[{\"step\":\"1\",\"rank\":0,\"slowdown\":2}]}}",
     "emulate.schedule[0].step: must be an integer"},
    /* out of range */
    {"{\"model\":\"lenet5\",\"optimizer\":{\"lr\":0}}", "optimizer.lr: must be in (0, 1000]"},
    {"{\"model\":\"lenet5\",\"optimizer\":{\"lr\":-0.1}}", "optimizer.lr: must be in (0, 1000]"},
    {"{\"model\":\"lenet5\",\"optimizer\":{\"momentum\":1}}", "optimizer.momentum: must be in [0, 1)"},
    {"{\"model\":\"lenet5\",\"optimizer\":{\"momentum\":-0.5}}", "optimizer.momentum: must be in [0, 1)"},
    {"{\"model\":\"lenet5\",\"optimizer\":{\"weight_decay\":-1}}", "optimizer.weight_decay: must be between 0 and 1"},
    {"{\"model\":\"lenet5\",\"optimizer\":{\"lr_schedule\":{\"gamma\":0}}}",
     "optimizer.lr_schedule.gamma: must be in (0, 1]"},
    {"{\"model\":\"lenet5\",\"batch_size\":0}", "batch_size: must be between 1 and 65536"},
    {"{\"model\":\"lenet5\",\"batch_size\":65537}", "batch_size: must be between 1 and 65536"},
    {"{\"model\":\"lenet5\",\"epochs\":0}", "epochs: must be between 1 and 100000"},
    {"{\"model\":\"lenet5\",\"workers\":0}", "workers: must be between 1 and 256"},
    {"{\"model\":\"lenet5\",\"workers\":257}", "workers: must be between 1 and 256"},
    {"{\"model\":\"lenet5\",\"threads\":0}", "threads: must be between 1 and 256"},
    {"{\"model\":\"lenet5\",\"seed\":-1}", "seed: must be between 0 and 9223372036854775807"},
    {"{\"model\":\"lenet5\",\"log_every\":-1}", "log_every: must be between 0 and 1000000000"},
    {"{\"model\":\"lenet5\",\"target_accuracy\":1.5}", "target_accuracy: must be between 0 and 1"},
    {"{\"model\":\"lenet5\",\"dataset\":{\"train_subset\":3000000000}}",
     "dataset.train_subset: must be between 0 and 1000000000"},
    {"{\"model\":\"lenet5\",\"checkpoint\":{\"every_steps\":-5}}",
     "checkpoint.every_steps: must be between 0 and 1000000000000"},
    {"{\"model\":\"lenet5\",\"algorithm\":{\"lambda0\":-1}}", "algorithm.lambda0: must be between 0 and 1000"},
    {"{\"model\":\"lenet5\",\"algorithm\":{\"params\":{\"eps\":0}}}", "algorithm.params.eps: must be in (0, 1]"},
    {"{\"model\":\"lenet5\",\"algorithm\":{\"replan_steps\":0}}",
     "algorithm.replan_steps: must be between 1 and 1000000000"},
    /* emulate */
    {"{" W4 ",\"emulate\":{\"slowdown\":[1,1,0.5,1]}}", "emulate.slowdown[2]: must be between 1 and 1000"},
    {"{" W4 ",\"emulate\":{\"slowdown\":[1,1,2]}}", "emulate.slowdown: has 3 entries, workers is 4"},
    {"{\"model\":\"lenet5\",\"emulate\":{\"slowdown\":[1,2]}}", "emulate.slowdown: has 2 entries, workers is 1"},
    {"{" W4 ",\"emulate\":{\"schedule\":[{\"step\":0,\"rank\":4,\"slowdown\":2}]}}",
     "emulate.schedule[0].rank: must be < workers (4)"},
    {"{" W4 ",\"emulate\":{\"schedule\":[{\"step\":0,\"rank\":-1,\"slowdown\":2}]}}",
     "emulate.schedule[0].rank: must be between 0 and 255"},
    {"{" W4 ",\"emulate\":{\"schedule\":[{\"step\":-1,\"rank\":0,\"slowdown\":2}]}}",
     "emulate.schedule[0].step: must be between 0 and 1000000000000"},
    {"{" W4 ",\"emulate\":{\"schedule\":[{\"step\":0,\"rank\":1,\"slowdown\":0.9}]}}",
     "emulate.schedule[0].slowdown: must be between 1 and 1000"},
    {"{" W4 ",\"emulate\":{\"schedule\":[{\"step\":0,\"rank\":1}]}}", "emulate.schedule[0].slowdown: required"},
    {"{" W4 ",\"emulate\":{\"schedule\":[{\"step\":9,\"rank\":1,\"slowdown\":2},"
     "{\"step\":5,\"rank\":2,\"slowdown\":2}]}}",
     "emulate.schedule[1].step: must be >= the previous entry's step (9)"},
    /* enums */
    {"{\"model\":\"vgg16\"}", "model: must be one of mlp, lenet5, cifar10_quick, resnet20"},
    {"{\"model\":\"lenet5\",\"dataset\":{\"name\":\"imagenet\"}}",
     "dataset.name: must be one of fashion-mnist, mnist, cifar10"},
    {"{\"model\":\"lenet5\",\"algorithm\":{\"name\":\"adam\"}}",
     "algorithm.name: must be one of sgd, ssgd, hier-bsp, hpsgd, local-sgd, asgd, nsoftsync, "
     "dc-asgd, ddc-asgd, dbs-sgd"},
    {"{\"model\":\"lenet5\",\"device\":\"tpu\"}", "device: must be one of auto, cpu, cuda"},
    {"{\"model\":\"lenet5\",\"optimizer\":{\"lr_schedule\":{\"kind\":\"linear\"}}}",
     "optimizer.lr_schedule.kind: must be one of constant, step, cosine"},
    /* AdamW and label smoothing (issue 44) */
    {"{\"model\":\"lenet5\",\"optimizer\":{\"kind\":\"adam\"}}", "optimizer.kind: must be one of sgd, adamw"},
    {"{\"model\":\"lenet5\",\"optimizer\":{\"kind\":\"adamw\",\"betas\":[0.9,1]}}",
     "optimizer.betas[1]: must be in [0, 1)"},
    {"{\"model\":\"lenet5\",\"optimizer\":{\"kind\":\"adamw\",\"betas\":[-0.1,0.999]}}",
     "optimizer.betas[0]: must be in [0, 1)"},
    {"{\"model\":\"lenet5\",\"optimizer\":{\"kind\":\"adamw\",\"betas\":[0.9]}}",
     "optimizer.betas: must be [b1, b2], has 1 entries"},
    {"{\"model\":\"lenet5\",\"optimizer\":{\"kind\":\"adamw\",\"betas\":[0.9,0.99,0.9]}}",
     "optimizer.betas: at most 2 entries, has 3"},
    {"{\"model\":\"lenet5\",\"optimizer\":{\"kind\":\"adamw\",\"eps\":0}}", "optimizer.eps: must be in (0, 1]"},
    {"{\"model\":\"lenet5\",\"optimizer\":{\"kind\":\"adamw\",\"eps\":-1e-8}}", "optimizer.eps: must be in (0, 1]"},
    {"{\"model\":\"lenet5\",\"optimizer\":{\"no_decay\":\"bias\"}}",
     "optimizer.no_decay: must be one of default, auto, none"},
    {"{\"model\":\"lenet5\",\"loss\":{\"label_smoothing\":1}}", "loss.label_smoothing: must be in [0, 1)"},
    {"{\"model\":\"lenet5\",\"loss\":{\"label_smoothing\":-0.1}}", "loss.label_smoothing: must be in [0, 1)"},
    {"{\"model\":\"lenet5\",\"loss\":{\"smoothing\":0.1}}", "loss.smoothing: unknown field"},
    {"{\"model\":\"lenet5\",\"workers\":2,\"algorithm\":{\"name\":\"ddc-asgd\"},\"optimizer\":{\"kind\":\"adamw\"}}",
     "optimizer.kind: adamw is not applied by ddc-asgd, whose update is its own momentum rule; use asgd, dc-asgd, "
     "nsoftsync, dbs-sgd or a synchronous algorithm, or optimizer.kind sgd"},
    {"{\"model\":\"lenet5\",\"algorithm\":{\"dc_variant\":\"b\"}}", "algorithm.dc_variant: must be one of c, a"},
    {"{\"model\":\"LeNet5\"}", "model: must be one of"},
    /* not JSON, not an object */
    {"{\"model\": \"lenet5\",}", "spec: invalid JSON at line 1 column"},
    {"{\n  \"model\": \"lenet5\"\n  \"epochs\": 2\n}", "spec: invalid JSON at line 3 column"},
    {"", "spec: invalid JSON at line 1"},
    {"{\"model\":\"lenet5\",\"model\":\"mlp\"}", "spec: invalid JSON at line 1"},
    {"{\"model\":\"lenet5\"} trailing", "spec: invalid JSON"},
    {"{\"model\":\"le\\u0000net5\"}", "spec: invalid JSON"},
    {"[1, 2]", "spec: must be a JSON object"},
    {"42", "spec: must be a JSON object"},
    {"\"lenet5\"", "spec: must be a JSON object"},
    {"null", "spec: must be a JSON object"},
    /* strings */
    {"{\"model\":\"lenet5\",\"name\":"
     "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}",
     "name: too long (64 bytes, at most 63)"},
    {"{\"model\":\"lenet5\",\"name\":\"my job\"}", "name: may contain only letters, digits, '.', '_' and '-'"},
    {"{\"model\":\"lenet5\",\"name\":\"..\"}",
     "name: may contain only letters, digits, '.', '_' and '-', and may not be . or .."},
    {"{\"model\":\"lenet5\",\"name\":\"\"}", "name: must not be empty"},
    {"{\"model\":\"lenet5\",\"checkpoint\":{\"dir\":\"\"}}", "checkpoint.dir: must not be empty"},
    /* required */
    {"{}", "model: required"},
    {"{\"name\":\"x\",\"optimizer\":{\"lr\":0.1}}", "model: required"},
    /* cross-field rules */
    {"{\"model\":\"lenet5\",\"workers\":2}", "algorithm.name: sgd is single-process; use ssgd for workers > 1"},
    {"{\"model\":\"lenet5\",\"workers\":2,\"algorithm\":{\"name\":\"sgd\"}}",
     "algorithm.name: sgd is single-process; use ssgd for workers > 1"},
    {"{\"model\":\"lenet5\",\"dataset\":{\"name\":\"cifar10\"}}",
     "model: lenet5 takes 1x28x28 images, dataset.name cifar10 has 3x32x32"},
    {"{\"model\":\"mlp\",\"dataset\":{\"name\":\"cifar10\"}}",
     "model: mlp takes 1x28x28 images, dataset.name cifar10 has 3x32x32"},
    {"{\"model\":\"resnet20\",\"dataset\":{\"name\":\"mnist\"}}",
     "model: resnet20 takes 3x32x32 images, dataset.name mnist has 1x28x28"},
    {"{\"model\":\"cifar10_quick\"}",
     "model: cifar10_quick takes 3x32x32 images, dataset.name fashion-mnist has 1x28x28"},
    {"{\"model\":\"lenet5\",\"dataset\":{\"format\":\"imagefolder\"}}",
     "dataset.path: required with dataset.format imagefolder (the folder that holds train/ and test/)"},
    {"{\"model\":\"lenet5\",\"dataset\":{\"format\":\"npz\"}}",
     "dataset.path: required with dataset.format npz (the .npz file)"},
    {"{\"model\":\"lenet5\",\"dataset\":{\"format\":\"cifar\"}}",
     "dataset.format: cifar is not the format of dataset.name fashion-mnist (idx)"},
    {"{\"model\":\"resnet20\",\"dataset\":{\"name\":\"cifar10\",\"format\":\"idx\"}}",
     "dataset.format: idx is not the format of dataset.name cifar10 (cifar)"},
    {"{\"model\":\"lenet5\",\"dataset\":{\"format\":\"tfrecord\"}}",
     "dataset.format: must be one of auto, idx, cifar, imagefolder, npz"},
    {"{\"model\":\"lenet5\",\"dataset\":{\"resize\":[28]}}", "dataset.resize: must be [H, W] or [], has 1 entry"},
    {"{\"model\":\"lenet5\",\"dataset\":{\"resize\":[28, 28.5]}}", "dataset.resize[1]: must be an integer"},
    {"{\"model\":\"lenet5\",\"dataset\":{\"resize\":[28, 0]}}", "dataset.resize[1]: must be between 1 and 16384"},
    {"{\"model\":\"lenet5\",\"dataset\":{\"mean\":[0.1, 0.2]}}",
     "dataset.mean: one value (every channel) or one per channel (3), has 2"},
    {"{\"model\":\"lenet5\",\"dataset\":{\"std\":[0]}}", "dataset.std[0]: must be in (0, 10]"},
    {"{\"model\":\"lenet5\",\"dataset\":{\"layout\":\"hwc\"}}", "dataset.layout: must be one of nhwc, nchw"},
    {"{\"model\":\"lenet5\",\"workers\":4,\"algorithm\":{\"name\":\"nsoftsync\",\"n\":5}}",
     "algorithm.n: must be between 1 and workers (4)"},
    {"{\"model\":\"lenet5\",\"workers\":2,\"algorithm\":{\"name\":\"ddc-asgd\"},"
     "\"optimizer\":{\"nesterov\":true}}",
     "optimizer.nesterov: ddc-asgd's delay-adapted momentum has no Nesterov form; set it to false or "
     "choose another algorithm"},
    {"{\"model\":\"lenet5\",\"workers\":4,\"algorithm\":{\"name\":\"nsoftsync\","
     "\"params\":{\"n\":8}}}",
     "algorithm.n: must be between 1 and workers (4)"},
    {"{\"model\":\"lenet5\",\"workers\":4,\"algorithm\":{\"name\":\"nsoftsync\",\"n\":2,"
     "\"params\":{\"n\":2}}}",
     "algorithm.params.n: also given as algorithm.n"},
    {"{\"model\":\"lenet5\",\"workers\":4,\"algorithm\":{\"name\":\"nsoftsync\","
     "\"params\":{\"n\":2},\"n\":2}}",
     "algorithm.n: also given as algorithm.params.n"},
    {"{\"model\":\"lenet5\",\"workers\":4,\"algorithm\":{\"name\":\"hier-bsp\",\"group_size\":8}}",
     "algorithm.group_size: must be <= workers (4)"},
    {"{\"model\":\"lenet5\",\"workers\":2,\"algorithm\":{\"name\":\"ssgd\",\"min_batch\":64,"
     "\"max_batch\":32}}",
     "algorithm.min_batch: must be <= algorithm.max_batch (32)"},
    {"{\"model\":\"lenet5\",\"workers\":2,\"batch_size\":32,\"algorithm\":{\"name\":\"ssgd\",\"min_batch\":48}}",
     "algorithm.min_batch: must be <= batch_size (32)"},
    {"{\"model\":\"lenet5\",\"workers\":2,\"batch_size\":32,\"algorithm\":{\"name\":\"ssgd\",\"max_batch\":16}}",
     "algorithm.max_batch: must be >= batch_size (32)"},
    {"{\"model\":\"lenet5\",\"optimizer\":{\"lr\":0.01,\"lr_schedule\":{\"kind\":\"cosine\","
     "\"min_lr\":0.1}}}",
     "optimizer.lr_schedule.min_lr: must be <= optimizer.lr (0.01)"},
    /* the goodput planner */
    {"{\"model\":\"lenet5\",\"workers\":2,\"algorithm\":{\"name\":\"asgd\",\"goodput\":true}}",
     "algorithm.goodput: only for ssgd (the other algorithms report the noise scale but do not plan by it), "
     "algorithm.name is asgd"},
    {"{\"model\":\"lenet5\",\"algorithm\":{\"name\":\"ssgd\",\"goodput\":true}}",
     "algorithm.goodput: needs workers >= 2"},
    {"{\"model\":\"lenet5\",\"workers\":2,\"algorithm\":{\"name\":\"ssgd\",\"goodput\":true,"
     "\"dynamic_batch\":true}}",
     "algorithm.dynamic_batch: the goodput planner splits the batches itself; set one of dynamic_batch and goodput"},
    {"{\"model\":\"lenet5\",\"workers\":2,\"algorithm\":{\"name\":\"ssgd\",\"max_global_batch\":512}}",
     "algorithm.max_global_batch: only with algorithm.goodput"},
    {"{\"model\":\"lenet5\",\"workers\":2,\"batch_size\":32,\"algorithm\":{\"name\":\"ssgd\",\"goodput\":true,"
     "\"max_global_batch\":32}}",
     "algorithm.max_global_batch: must be >= workers x batch_size (64)"},
    {"{\"model\":\"lenet5\",\"workers\":2,\"algorithm\":{\"name\":\"ssgd\",\"goodput\":true,"
     "\"goodput_model\":\"adaptdl\"}}",
     "algorithm.goodput_model: must be one of nodes, equal"},
    {"{\"model\":\"lenet5\",\"eval_every_steps\":-1}", "eval_every_steps: must be between 0 and"},
    /* gradient compression (issue 47: ssgd, local-sgd, hier-bsp, hpsgd; bf16 for the PS family) */
    {"{\"model\":\"lenet5\",\"workers\":1,\"algorithm\":{\"name\":\"sgd\",\"compression\":{\"kind\":"
     "\"powersgd\"}}}",
     "algorithm.compression.kind: powersgd is implemented for ssgd, local-sgd, hier-bsp, hpsgd and (bf16) the "
     "parameter-server family only (algorithm.name is sgd); use one of them or kind none"},
    {"{\"model\":\"lenet5\",\"workers\":1,\"algorithm\":{\"name\":\"sgd\",\"compression\":{\"kind\":"
     "\"bf16\"}}}",
     "algorithm.compression.kind: bf16 is implemented for ssgd, local-sgd, hier-bsp, hpsgd and (bf16) the "
     "parameter-server family only (algorithm.name is sgd)"},
    {"{\"model\":\"lenet5\",\"workers\":2,\"algorithm\":{\"name\":\"hpsgd\",\"compression\":{\"kind\":"
     "\"powersgd\",\"warmup_steps\":5}}}",
     "algorithm.compression.warmup_steps: hpsgd has no warm-up (its ranks start a round at different steps); set 0"},
    /* the measured choice: powersgd's, timing the warm-up's last probe_steps */
    {"{\"model\":\"lenet5\",\"workers\":2,\"algorithm\":{\"name\":\"ssgd\",\"compression\":{\"kind\":"
     "\"bf16\",\"min_gain\":0.15}}}",
     "algorithm.compression.min_gain: the measured choice is powersgd's (kind is bf16); set 0"},
    {"{\"model\":\"lenet5\",\"workers\":2,\"algorithm\":{\"name\":\"ssgd\",\"compression\":{\"kind\":"
     "\"powersgd\",\"min_gain\":0.15,\"warmup_steps\":10}}}",
     "algorithm.compression.min_gain: the probe times the warm-up's last probe_steps (20) plain steps, and "
     "warmup_steps is 10: set warmup_steps to at least 20, or probe_steps lower"},
    {"{\"model\":\"lenet5\",\"workers\":2,\"algorithm\":{\"name\":\"ssgd\",\"compression\":{\"kind\":"
     "\"powersgd\",\"min_gain\":1.5,\"warmup_steps\":30}}}",
     "algorithm.compression.min_gain"},
    {"{\"model\":\"lenet5\",\"workers\":2,\"algorithm\":{\"name\":\"asgd\",\"compression\":{\"kind\":"
     "\"powersgd\"}}}",
     "algorithm.compression.kind: powersgd needs one Q shared by all ranks, which the asynchronous pushes of asgd do "
     "not have; use bf16 (each worker keeps its own error feedback) or none"},
    {"{\"model\":\"lenet5\",\"workers\":2,\"algorithm\":{\"name\":\"ddc-asgd\",\"compression\":{\"kind\":"
     "\"powersgd\",\"rank\":4}}}",
     "algorithm.compression.kind: powersgd needs one Q shared by all ranks, which the asynchronous pushes of "
     "ddc-asgd do not have"},
    {"{\"model\":\"lenet5\",\"workers\":2,\"algorithm\":{\"name\":\"ssgd\",\"goodput\":true,"
     "\"compression\":{\"kind\":\"bf16\"}}}",
     "algorithm.compression.kind: bf16 does not work with algorithm.goodput"},
    {"{\"model\":\"lenet5\",\"workers\":2,\"algorithm\":{\"name\":\"ssgd\",\"compression\":{\"kind\":"
     "\"topk\"}}}",
     "algorithm.compression.kind: must be one of none, bf16, powersgd"},
    {"{\"model\":\"lenet5\",\"workers\":2,\"algorithm\":{\"name\":\"ssgd\",\"compression\":{\"kind\":"
     "\"powersgd\",\"rank\":0}}}",
     "algorithm.compression.rank: must be between 1 and 64"},
    {"{\"model\":\"lenet5\",\"workers\":2,\"algorithm\":{\"name\":\"ssgd\",\"compression\":{\"kind\":"
     "\"powersgd\",\"ranks\":2}}}",
     "algorithm.compression.ranks"},
    /* max_workers (issue 46): growth past workers where it cannot work */
    {"{\"model\":\"lenet5\",\"workers\":3,\"max_workers\":2,\"algorithm\":{\"name\":\"ssgd\"}}",
     "max_workers: must be >= workers (3), is 2"},
    {"{\"model\":\"lenet5\",\"max_workers\":0}", "max_workers: must be between 1 and 256"},
    {"{\"model\":\"lenet5\",\"max_workers\":257}", "max_workers: must be between 1 and 256"},
    {"{\"model\":\"lenet5\",\"max_workers\":2}",
     "max_workers: algorithm sgd does not grow past its workers (only ssgd, hier-bsp, hpsgd and local-sgd do)"},
    {"{\"model\":\"lenet5\",\"workers\":2,\"max_workers\":3,\"algorithm\":{\"name\":\"asgd\"}}",
     "max_workers: algorithm asgd does not grow past its workers"},
    {"{\"model\":\"lenet5\",\"workers\":2,\"max_workers\":4,\"algorithm\":{\"name\":\"dbs-sgd\"}}",
     "max_workers: algorithm dbs-sgd does not grow past its workers"},
    {"{\"model\":\"lenet5\",\"workers\":2,\"batch_size\":2,\"max_workers\":5,\"algorithm\":{\"name\":"
     "\"ssgd\"}}",
     "max_workers: 5 ranks cannot share the global batch of 4 (workers x batch_size) with at least 1 sample each; "
     "at most 4"},
    {"{\"model\":\"lenet5\",\"workers\":2,\"batch_size\":16,\"max_workers\":3,\"algorithm\":{\"name\":"
     "\"ssgd\",\"dynamic_batch\":true,\"params\":{\"min_batch\":16}}}",
     "max_workers: 3 ranks cannot share the global batch of 32 (workers x batch_size) with at least 16 samples "
     "each; at most 2"},
    {"{\"model\":\"lenet5\",\"workers\":2,\"max_workers\":3,\"algorithm\":{\"name\":\"ssgd\"},"
     "\"simulate\":{\"enabled\":true}}",
     "max_workers: a simulated job (simulate.enabled) runs on its workers (2)"},
    /* min_workers (issue 46): the fewest workers it may start on or shrink to */
    {"{\"model\":\"lenet5\",\"min_workers\":0}", "min_workers: must be between 1 and 256"},
    {"{\"model\":\"lenet5\",\"min_workers\":257}", "min_workers: must be between 1 and 256"},
    {"{\"model\":\"lenet5\",\"min_workers\":-1}", "min_workers: must be between 1 and 256"},
    {"{\"model\":\"lenet5\",\"workers\":2,\"min_workers\":3,\"algorithm\":{\"name\":\"ssgd\"}}",
     "min_workers: must be <= workers (2), is 3"},
    {"{\"model\":\"lenet5\",\"min_workers\":\"2\"}", "min_workers"},
};

static void test_invalid_specs(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        job_spec_t s, before;
        memset(&s, 0x5A, sizeof s);
        memcpy(&before, &s, sizeof s);
        char err[512] = "";
        int rc = spec_parse(BAD[i].json, &s, err, sizeof err);
        if (rc != -1) fail_msg("case %zu accepted: %s", i, BAD[i].json);
        if (!strstr(err, BAD[i].want))
            fail_msg("case %zu: error \"%s\"\n  does not contain \"%s\"\n  on: %s", i, err, BAD[i].want, BAD[i].json);
        if (strchr(err, '\n')) fail_msg("case %zu: error is not one line: %s", i, err);
        /* A failed parse leaves the output alone. */
        assert_memory_equal(&s, &before, sizeof s);
    }
}

/* An unknown field a typo away from a known one of the same object names it, with its
 * whole path; one far from every known field, or absurdly long, names none. */
static void test_unknown_field_suggestions(void **state)
{
    (void)state;
    static char huge[9000];
    static const struct {
        const char *json, *says; /* the whole message */
    } cases[] = {
        {"{\"model\":\"lenet5\",\"epoch\":2}", "epoch: unknown field (did you mean epochs?)"},
        {"{\"model\":\"lenet5\",\"Epochs\":2}", "Epochs: unknown field (did you mean epochs?)"},
        {"{\"model\":\"lenet5\",\"sed\":2}", "sed: unknown field (did you mean seed?)"},
        {"{\"model\":\"lenet5\",\"batch_sise\":64}", "batch_sise: unknown field (did you mean batch_size?)"},
        {"{\"model\":\"lenet5\",\"optimiser\":{}}", "optimiser: unknown field (did you mean optimizer?)"},
        {"{\"model\":\"lenet5\",\"optimizer\":{\"momentun\":0.9}}",
         "optimizer.momentun: unknown field (did you mean optimizer.momentum?)"},
        {"{\"model\":\"lenet5\",\"algorithm\":{\"parms\":{}}}",
         "algorithm.parms: unknown field (did you mean algorithm.params?)"},
        {"{\"model\":\"lenet5\",\"algorithm\":{\"params\":{\"replan_step\":5}}}",
         "algorithm.params.replan_step: unknown field (did you mean algorithm.params.replan_steps?)"},
        /* algorithm.params holds algorithm parameters only: its name is no suggestion there */
        {"{\"model\":\"lenet5\",\"algorithm\":{\"params\":{\"nam\":\"ssgd\"}}}", "algorithm.params.nam: unknown field"},
        {"{\"model\":\"lenet5\",\"emulate\":{\"schedule\":[{\"step\":1,\"rnk\":0,\"slowdown\":2}]}}",
         "emulate.schedule[0].rnk: unknown field (did you mean emulate.schedule[0].rank?)"},
        {"{\"model\":\"lenet5\",\"frobnicate\":1}", "frobnicate: unknown field"},
        {"{\"model\":\"lenet5\",\"xy\":1}", "xy: unknown field"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        job_spec_t s;
        char err[512] = "";
        assert_int_equal(spec_parse(cases[i].json, &s, err, sizeof err), -1);
        if (strcmp(err, cases[i].says) != 0) fail_msg("case %zu: \"%s\", want \"%s\"", i, err, cases[i].says);
    }
    /* a key of 8000 characters, one edit from nothing: refused whole, no suggestion */
    int n = snprintf(huge, sizeof huge, "{\"model\":\"lenet5\",\"");
    memset(huge + n, 'e', 8000);
    snprintf(huge + n + 8000, sizeof huge - (size_t)n - 8000, "\":1}");
    job_spec_t s;
    char err[512] = "";
    assert_int_equal(spec_parse(huge, &s, err, sizeof err), -1);
    assert_non_null(strstr(err, "unknown field"));
    assert_null(strstr(err, "did you mean"));

    /* the distance itself: capped at max + 1, symmetric, and a short word gets one edit */
    assert_int_equal(suggest_distance("epoch", 5, "epochs", 6, 2), 1);
    assert_int_equal(suggest_distance("epochs", 6, "epoch", 5, 2), 1);
    assert_int_equal(suggest_distance("kitten", 6, "sitting", 7, 2), 3); /* 3 edits: over the cap */
    assert_int_equal(suggest_distance("flaw", 4, "lawn", 4, 2), 2);
    assert_int_equal(suggest_distance("abc", 3, "abc", 3, 2), 0);
    assert_int_equal(suggest_distance(huge, 8000, "epochs", 6, 2), 3);
    suggest_t g;
    char hint[128];
    suggest_init(&g, "jsn", 3);
    suggest_offer(&g, "json", 4);
    suggest_offer(&g, "js", 2); /* as close, but later: the first stays */
    suggest_hint(&g, "--", hint, sizeof hint);
    assert_string_equal(hint, " (did you mean --json?)");
    suggest_init(&g, "tail", 4);
    suggest_offer(&g, "tail", 4); /* the word itself is no suggestion */
    suggest_offer(&g, "tl", 2);   /* two edits: beyond a short word's one */
    suggest_hint(&g, NULL, hint, sizeof hint);
    assert_string_equal(hint, "");
}

/* ---- bounds of every numeric field, from the table itself (issue 13) ---------------- */

/* {"model":"lenet5","a":{"b":{"c":raw}}} for path "a.b.c"; a row of the model object
 * ("model.gpt.layers") without the name. */
static void nest(char *buf, size_t len, const char *path, const char *raw)
{
    size_t o = (size_t)snprintf(buf, len, strncmp(path, "model.", 6) == 0 ? "{" : "{\"model\":\"lenet5\",");
    const char *p = path, *dot;
    int depth = 0;
    for (; (dot = strchr(p, '.')) != NULL; p = dot + 1, depth++)
        o += (size_t)snprintf(buf + o, len - o, "\"%.*s\":{", (int)(dot - p), p);
    o += (size_t)snprintf(buf + o, len - o, "\"%s\":%s", p, raw);
    while (depth-- > 0) o += (size_t)snprintf(buf + o, len - o, "}");
    snprintf(buf + o, len - o, "}");
}

/* A spec whose field f is value: an array-of-numbers row gets [value], an element row
 * ("emulate.schedule[].step") one element with the value and the other required fields. */
static void doc_with(char *buf, size_t len, const spec_field_info_t *f, const char *value)
{
    char raw[256];
    const char *arr = strstr(f->path, "[]");
    if (arr) {
        static const char *const ELEM[][2] = {{"step", "0"}, {"rank", "0"}, {"slowdown", "1"}};
        const char *leaf = arr + 3;
        size_t o = (size_t)snprintf(raw, sizeof raw, "[{");
        for (size_t i = 0; i < 3; i++)
            if (strcmp(ELEM[i][0], leaf) != 0)
                o += (size_t)snprintf(raw + o, sizeof raw - o, "\"%s\":%s,", ELEM[i][0], ELEM[i][1]);
        snprintf(raw + o, sizeof raw - o, "\"%s\":%s}]", leaf, value);
        char prefix[128];
        snprintf(prefix, sizeof prefix, "%.*s", (int)(arr - f->path), f->path);
        nest(buf, len, prefix, raw);
    } else {
        snprintf(raw, sizeof raw, f->array ? "[%s]" : "%s", value);
        nest(buf, len, f->path, raw);
    }
}

/* The error for a value just outside a bound names the field (an array entry as
 * path[0]) and says "must be"; returns it in out. */
static void expect_range_error(const spec_field_info_t *f, const char *value, char *out, size_t outlen)
{
    char doc[1024], err[512] = "";
    job_spec_t s;
    doc_with(doc, sizeof doc, f, value);
    if (spec_parse(doc, &s, err, sizeof err) == 0) fail_msg("%s = %s accepted: %s", f->path, value, doc);
    char want[160];
    const char *arr = strstr(f->path, "[]");
    if (arr) snprintf(want, sizeof want, "%.*s[0]%s: must be", (int)(arr - f->path), f->path, arr + 2);
    else if (f->array) snprintf(want, sizeof want, "%s[0]: must be", f->path);
    else snprintf(want, sizeof want, "%s: must be", f->path);
    if (strncmp(err, want, strlen(want)) != 0)
        fail_msg("%s = %s: error \"%s\", want \"%s ...\"\n  on: %s", f->path, value, err, want, doc);
    snprintf(out, outlen, "%s", err);
}

/* A bound itself (when inclusive) is not refused with the range error: other rules (a
 * rank below workers) may still refuse the document, but not with that message. */
static void expect_no_range_error(const spec_field_info_t *f, const char *value, const char *range_err)
{
    char doc[1024], err[512] = "";
    job_spec_t s;
    doc_with(doc, sizeof doc, f, value);
    if (spec_parse(doc, &s, err, sizeof err) == 0) return;
    if (strcmp(err, range_err) == 0)
        fail_msg("%s = %s refused as out of range: %s\n  on: %s", f->path, value, err, doc);
}

static void fmt_value(char *buf, size_t len, const spec_field_info_t *f, double x)
{
    if (f->integer) snprintf(buf, len, "%.0f", x);
    else snprintf(buf, len, "%.17g", x);
}

static void test_every_number_is_bounded(void **state)
{
    (void)state;
    spec_field_info_t f;
    int numeric = 0;
    for (size_t i = 0; spec_field_info(i, &f) == 0; i++) {
        if (!f.numeric) continue;
        numeric++;
        if (!f.has_min || !f.has_max) fail_msg("%s has no %s bound", f.path, f.has_min ? "upper" : "lower");
        /* small enough that every consumer's conversion (to float, to a step count) fits */
        if (!f.integer) assert_true(f.max <= 1e6);
        char v[64], above[512] = "", below[512] = "";
        /* just above the upper bound: max itself when exclusive, else the next value up */
        if (f.integer && f.max >= 9.2e18) {
            /* the seed: the bound is the type's; one more does not even parse */
            char doc[256], err[256];
            job_spec_t s;
            nest(doc, sizeof doc, f.path, "9223372036854775808");
            assert_int_equal(spec_parse(doc, &s, err, sizeof err), -1);
        } else {
            fmt_value(v, sizeof v, &f, f.max_excl ? f.max : f.integer ? f.max + 1 : nextafter(f.max, INFINITY));
            expect_range_error(&f, v, above, sizeof above);
            if (!f.integer) expect_range_error(&f, "1e300", above, sizeof above);
        }
        fmt_value(v, sizeof v, &f, f.min_excl ? f.min : f.integer ? f.min - 1 : nextafter(f.min, -INFINITY));
        expect_range_error(&f, v, below, sizeof below);
        if (!f.integer) expect_range_error(&f, "-1e300", below, sizeof below);
        if (!f.max_excl && above[0]) {
            fmt_value(v, sizeof v, &f, f.max);
            expect_no_range_error(&f, v, above);
        }
        if (!f.min_excl) {
            fmt_value(v, sizeof v, &f, f.min);
            expect_no_range_error(&f, v, below);
        }
    }
    assert_true(numeric >= 30);
}

/* spec_hash covers every field but the resume_free ones, which docs/JOB_SPEC.md lists
 * under "Resuming from a checkpoint". */
static void test_spec_hash(void **state)
{
    (void)state;
    job_spec_t a, b;
    parse_ok("{\"model\":\"lenet5\"}", &a);
    parse_ok("{\"model\":\"lenet5\"}", &b);
    assert_true(spec_hash(&a) == spec_hash(&b));
    parse_ok("{\"model\":\"lenet5\",\"name\":\"x\",\"threads\":4,\"device\":\"cpu\",\"log_every\":1,"
             "\"dataset\":{\"path\":\"/d\",\"cache_dir\":\"/e\"},\"checkpoint\":{\"dir\":\"/c\",\"every_steps\":5,\"keep_last\":3,"
             "\"keep_best\":true},\"on_collapse\":\"restart\"}",
             &b);
    assert_true(spec_hash(&a) == spec_hash(&b));
    /* Compression none hashes as a spec from before compression (older checkpoints
     * resume), whatever its rank; powersgd's rank and warm-up are part of the run. */
    parse_ok("{\"model\":\"lenet5\",\"algorithm\":{\"compression\":{\"kind\":\"none\",\"rank\":7}}}", &b);
    assert_true(spec_hash(&a) == spec_hash(&b));
    /* sgd ignores AdamW's fields and, without label smoothing or parameter groups, hashes
     * as a spec from before them (older sgd checkpoints resume). */
    parse_ok("{\"model\":\"lenet5\",\"optimizer\":{\"kind\":\"sgd\",\"betas\":[0.8,0.9],\"eps\":1e-6,"
             "\"no_decay\":\"none\"},\"loss\":{\"label_smoothing\":0}}",
             &b);
    assert_true(spec_hash(&a) == spec_hash(&b));
    job_spec_t c;
    parse_ok("{\"model\":\"lenet5\",\"algorithm\":{\"name\":\"ssgd\",\"compression\":{\"kind\":\"powersgd\"}}}", &b);
    parse_ok("{\"model\":\"lenet5\",\"algorithm\":{\"name\":\"ssgd\",\"compression\":{\"kind\":\"powersgd\","
             "\"rank\":3}}}",
             &c);
    assert_true(spec_hash(&b) != spec_hash(&c));
    /* Without min_gain the probe's fields hash as before they existed (earlier powersgd
     * checkpoints resume); with it they are part of the run. */
    parse_ok("{\"model\":\"lenet5\",\"algorithm\":{\"name\":\"ssgd\",\"compression\":{\"kind\":\"powersgd\","
             "\"probe_steps\":50}}}",
             &c);
    assert_true(spec_hash(&b) == spec_hash(&c));
    parse_ok("{\"model\":\"lenet5\",\"algorithm\":{\"name\":\"ssgd\",\"compression\":{\"kind\":\"powersgd\","
             "\"min_gain\":0.15,\"warmup_steps\":20}}}",
             &c);
    job_spec_t d;
    parse_ok("{\"model\":\"lenet5\",\"algorithm\":{\"name\":\"ssgd\",\"compression\":{\"kind\":\"powersgd\","
             "\"warmup_steps\":20}}}",
             &d);
    assert_true(spec_hash(&c) != spec_hash(&d));
    /* hpsgd compresses its rounds (no warm-up); the PS family its pushes, in bf16. */
    parse_ok("{\"model\":\"lenet5\",\"workers\":2,\"algorithm\":{\"name\":\"dbs-sgd\",\"compression\":{"
             "\"kind\":\"bf16\"}}}",
             &c);
    parse_ok("{\"model\":\"lenet5\",\"workers\":2,\"algorithm\":{\"name\":\"hpsgd\",\"compression\":{\"kind\":"
             "\"powersgd\",\"rank\":2}}}",
             &c);
    const char *differ[] = {
        "{\"model\":\"mlp\"}",
        "{\"model\":\"lenet5\",\"epochs\":2}",
        "{\"model\":\"lenet5\",\"optimizer\":{\"lr\":0.010000000000000002}}",
        "{\"model\":\"lenet5\",\"seed\":43}",
        "{\"model\":\"lenet5\",\"optimizer\":{\"async_momentum\":\"explicit\"}}",
        "{\"model\":\"lenet5\",\"dataset\":{\"train_subset\":5}}",
        "{\"model\":\"lenet5\",\"emulate\":{\"schedule\":[{\"step\":1,\"rank\":0,\"slowdown\":2}]}}",
        "{\"model\":\"lenet5\",\"algorithm\":{\"name\":\"ssgd\",\"compression\":{\"kind\":\"bf16\"}}}",
        "{\"model\":\"lenet5\",\"optimizer\":{\"kind\":\"adamw\"}}",
        "{\"model\":\"lenet5\",\"optimizer\":{\"no_decay\":\"auto\"}}",
        "{\"model\":\"lenet5\",\"loss\":{\"label_smoothing\":0.1}}",
    };
    /* the parameter server applies AdamW but in ddc-asgd (refused above) */
    static const char *const ps_algs[] = {"asgd", "dc-asgd", "nsoftsync", "dbs-sgd"};
    parse_ok_algs("{\"model\":\"lenet5\",\"workers\":2,\"algorithm\":{\"name\":\"%s\"},"
                  "\"optimizer\":{\"kind\":\"adamw\"}}",
                  ps_algs, sizeof ps_algs / sizeof ps_algs[0], &b);
    /* AdamW's own fields are part of an adamw run */
    parse_ok("{\"model\":\"lenet5\",\"optimizer\":{\"kind\":\"adamw\"}}", &b);
    parse_ok("{\"model\":\"lenet5\",\"optimizer\":{\"kind\":\"adamw\",\"betas\":[0.9,0.95]}}", &c);
    assert_true(spec_hash(&b) != spec_hash(&c));
    double b1, b2;
    spec_adamw_betas(&b, &b1, &b2);
    assert_true(b1 == 0.9 && b2 == 0.999);
    spec_adamw_betas(&c, &b1, &b2);
    assert_true(b1 == 0.9 && b2 == 0.95);
    assert_true(spec_no_decay(&b) && !spec_no_decay(&a));
    for (size_t i = 0; i < sizeof differ / sizeof differ[0]; i++) {
        parse_ok(differ[i], &b);
        if (spec_hash(&a) == spec_hash(&b)) fail_msg("same hash for %s", differ[i]);
    }
    char *doc = read_text("docs/JOB_SPEC.md");
    if (!doc) fail_msg("docs/JOB_SPEC.md not found: run the tests from the repository root");
    char *sec = strstr(doc, "## Resuming from a checkpoint");
    assert_non_null(sec);
    char *end = strstr(sec + 3, "\n## ");
    if (end) *end = 0;
    spec_field_info_t f;
    int nfree = 0;
    for (size_t i = 0; spec_field_info(i, &f) == 0; i++) {
        if (!f.resume_free) continue;
        nfree++;
        char quoted[128];
        snprintf(quoted, sizeof quoted, "`%s`", f.path);
        if (!strstr(sec, quoted)) fail_msg("docs/JOB_SPEC.md, Resuming from a checkpoint: %s is not listed", quoted);
    }
    /* model.onnx: the path, model.sha256 (the name is hashed); algorithm.shard.stage and split;
     * eval_sample and eval_sample_tokens; precision (the weights are float32 at either); the
     * four init fields (a fresh run's starting weights: a resumed run has its own);
     * lora.export (how exports write the adapters) */
    assert_int_equal(nfree, 27);
    free(doc);
}

/* Arrays past their capacity, built rather than spelled out. */
static void test_array_capacity(void **state)
{
    (void)state;
    size_t cap = 64 * 1024;
    char *text = malloc(cap);
    assert_non_null(text);
    job_spec_t s;
    char err[256];

    /* 257 slowdowns */
    static const char HEAD[] = "{\"model\":\"lenet5\",\"workers\":256,"
                               "\"algorithm\":{\"name\":\"ssgd\"},\"emulate\":{\"slowdown\":[";
    size_t n = (size_t)snprintf(text, cap, "%s", HEAD);
    for (int i = 0; i < SPEC_MAX_WORKERS + 1; i++) n += (size_t)snprintf(text + n, cap - n, "%s1", i ? "," : "");
    snprintf(text + n, cap - n, "]}}");
    assert_int_equal(spec_parse(text, &s, err, sizeof err), -1);
    assert_non_null(strstr(err, "emulate.slowdown: at most 256 entries, has 257"));

    /* exactly 256 is fine */
    n = (size_t)snprintf(text, cap, "%s", HEAD);
    for (int i = 0; i < SPEC_MAX_WORKERS; i++)
        n += (size_t)snprintf(text + n, cap - n, "%s%d", i ? "," : "", 1 + i % 3);
    snprintf(text + n, cap - n, "]}}");
    parse_ok(text, &s);
    assert_int_equal(s.emulate.nslowdown, 256);
    assert_true(s.emulate.slowdown[255] == 1.0 + 255 % 3);

    /* 65 schedule entries */
    n = (size_t)snprintf(text, cap, "{\"model\":\"lenet5\",\"emulate\":{\"schedule\":[");
    for (int i = 0; i < SPEC_MAX_SCHEDULE + 1; i++)
        n += (size_t)snprintf(text + n, cap - n, "%s{\"step\":%d,\"rank\":0,\"slowdown\":2}", i ? "," : "", i);
    snprintf(text + n, cap - n, "]}}");
    assert_int_equal(spec_parse(text, &s, err, sizeof err), -1);
    assert_non_null(strstr(err, "emulate.schedule: at most 64 entries, has 65"));
    free(text);
}

/* Every truncation of a valid spec is rejected cleanly (and, under ASan, without leaks
 * on any of the decoder's error paths). */
static void test_truncated_specs(void **state)
{
    (void)state;
    size_t len = strlen(FULL_SPEC);
    char *buf = malloc(len + 1);
    assert_non_null(buf);
    job_spec_t s;
    char err[256];
    for (size_t n = 0; n < len; n++) {
        memcpy(buf, FULL_SPEC, n);
        buf[n] = '\0';
        /* The only proper prefixes that are complete documents end after the closing brace
         * (the trailing newline is optional). */
        int want = n >= len - 1 ? 0 : -1;
        int rc = spec_parse(buf, &s, err, sizeof err);
        if (rc != want) fail_msg("prefix of %zu bytes: rc %d (%s)", n, rc, err);
    }
    free(buf);
}

static void test_error_buffer_edges(void **state)
{
    (void)state;
    job_spec_t s;
    const char *bad = "{\"model\":\"lenet5\",\"batch_size\":0}";
    char small[8];
    memset(small, 'x', sizeof small);
    assert_int_equal(spec_parse(bad, &s, small, sizeof small), -1);
    assert_int_equal(strlen(small), 7); /* truncated, terminated, not overflowed */
    assert_int_equal(spec_parse(bad, &s, NULL, 0), -1);
    char one[1] = {'x'};
    assert_int_equal(spec_parse(bad, &s, one, 0), -1);
    assert_int_equal(one[0], 'x'); /* errlen 0: nothing written */
    char err[64];
    assert_int_equal(spec_parse(NULL, &s, err, sizeof err), -1);
    assert_non_null(strstr(err, "spec:"));
}

/* ---- algorithm-specific behaviour -------------------------------------------------- */

static void test_lambda0_default_per_algorithm(void **state)
{
    (void)state;
    job_spec_t s;
    parse_ok("{\"model\":\"lenet5\",\"workers\":2,\"algorithm\":{\"name\":\"dc-asgd\","
             "\"dc_variant\":\"c\"}}",
             &s);
    assert_true(s.algorithm.lambda0 == 0.04);
    parse_ok("{\"model\":\"lenet5\",\"workers\":2,\"algorithm\":{\"name\":\"dc-asgd\"}}", &s);
    assert_string_equal(s.algorithm.dc_variant, "a");
    assert_true(s.algorithm.lambda0 == 2.0);
    parse_ok("{\"model\":\"lenet5\",\"workers\":2,\"algorithm\":{\"name\":\"ddc-asgd\"}}", &s);
    assert_true(s.algorithm.lambda0 == 1.0);
    parse_ok("{\"model\":\"lenet5\",\"workers\":2,\"algorithm\":{\"name\":\"asgd\"}}", &s);
    assert_true(s.algorithm.lambda0 == 0.0);
    /* given explicitly: kept, whatever the algorithm */
    parse_ok("{\"model\":\"lenet5\",\"workers\":2,\"algorithm\":{\"name\":\"dc-asgd\","
             "\"params\":{\"lambda0\":0.3}}}",
             &s);
    assert_true(s.algorithm.lambda0 == 0.3);
    parse_ok("{\"model\":\"lenet5\",\"workers\":2,\"algorithm\":{\"name\":\"ddc-asgd\","
             "\"lambda0\":0}}",
             &s);
    assert_true(s.algorithm.lambda0 == 0.0);
}

static void test_params_both_spellings(void **state)
{
    (void)state;
    job_spec_t a, b;
    parse_ok("{\"model\":\"lenet5\",\"workers\":4,\"algorithm\":{\"name\":\"nsoftsync\",\"n\":2,"
             "\"tau_max\":5,\"dynamic_batch\":true}}",
             &a);
    parse_ok("{\"model\":\"lenet5\",\"workers\":4,\"algorithm\":{\"name\":\"nsoftsync\","
             "\"params\":{\"n\":2,\"tau_max\":5,\"dynamic_batch\":true}}}",
             &b);
    assert_int_equal(a.algorithm.n, 2);
    assert_int_equal(a.algorithm.tau_max, 5);
    assert_memory_equal(&a, &b, sizeof a);
    /* mixed: some direct, some under params */
    parse_ok("{\"model\":\"lenet5\",\"workers\":4,\"algorithm\":{\"name\":\"nsoftsync\","
             "\"n\":2,\"params\":{\"tau_max\":5},\"dynamic_batch\":true}}",
             &b);
    assert_memory_equal(&a, &b, sizeof a);
}

static void test_dbs_sgd_forces_dynamic_batch(void **state)
{
    (void)state;
    job_spec_t s;
    parse_ok("{\"model\":\"lenet5\",\"workers\":2,\"algorithm\":{\"name\":\"dbs-sgd\"}}", &s);
    assert_int_equal(s.algorithm.dynamic_batch, 1);
    parse_ok("{\"model\":\"lenet5\",\"workers\":2,\"algorithm\":{\"name\":\"dbs-sgd\","
             "\"dynamic_batch\":false}}",
             &s);
    assert_int_equal(s.algorithm.dynamic_batch, 1);
    parse_ok("{\"model\":\"lenet5\",\"workers\":2,\"algorithm\":{\"name\":\"ssgd\"}}", &s);
    assert_int_equal(s.algorithm.dynamic_batch, 0);
}

/* A goodput spec parses with its parameters under algorithm or algorithm.params, and the
 * planner's bounds follow max_global_batch (planner.h). */
static void test_goodput_fields(void **state)
{
    (void)state;
    job_spec_t s;
    parse_ok("{\"model\":\"lenet5\",\"workers\":4,\"batch_size\":16,\"eval_every_steps\":50,"
             "\"algorithm\":{\"name\":\"ssgd\",\"goodput\":true,\"params\":{\"max_global_batch\":512,"
             "\"goodput_model\":\"equal\"}}}",
             &s);
    assert_int_equal(s.algorithm.goodput, 1);
    assert_int_equal(s.algorithm.max_global_batch, 512);
    assert_string_equal(s.algorithm.goodput_model, "equal");
    assert_int_equal(s.eval_every_steps, 50);
    assert_int_equal(planner_max_global(&s, 0), 512);
    assert_int_equal(planner_max_global(&s, 300), 300); /* the training set caps it */
    assert_int_equal(planner_max_global(&s, 10), 64);   /* never below B0 */
    int lo, hi;
    planner_bounds(&s, &lo, &hi);
    assert_int_equal(lo, 1);
    assert_int_equal(hi, 512);
    parse_ok("{\"model\":\"lenet5\",\"workers\":4,\"batch_size\":16,\"algorithm\":{\"name\":\"ssgd\","
             "\"goodput\":true}}",
             &s);
    assert_string_equal(s.algorithm.goodput_model, "nodes");
    assert_int_equal(planner_max_global(&s, 0), GOODPUT_DERIVED_FACTOR * 64);
}

/* max_workers: workers when not given (never grows); the growing algorithms take it,
 * and it may change on resume (a resize is not another run). */
static void test_max_workers(void **state)
{
    (void)state;
    job_spec_t s, t;
    parse_ok("{\"model\":\"lenet5\",\"workers\":3,\"algorithm\":{\"name\":\"ssgd\"}}", &s);
    assert_int_equal(s.max_workers, 3);
    static const char *const grows[] = {"ssgd", "hier-bsp", "hpsgd", "local-sgd"};
    parse_ok_algs("{\"model\":\"lenet5\",\"workers\":2,\"batch_size\":2,\"max_workers\":4,\"algorithm\":{"
                  "\"name\":\"%s\"}}",
                  grows, sizeof grows / sizeof grows[0], &t);
    assert_int_equal(t.max_workers, 4);
    assert_int_equal(spec_max_workers(&t), 4);
    /* a spec built by hand with more workers than its max_workers: never below workers */
    spec_defaults(&t);
    t.workers = 3;
    assert_int_equal(spec_max_workers(&t), 3);
    /* the parameter-server family may name its workers again */
    parse_ok("{\"model\":\"lenet5\",\"workers\":2,\"max_workers\":2,\"algorithm\":{\"name\":\"asgd\"}}", &t);
    parse_ok("{\"model\":\"lenet5\",\"workers\":3,\"max_workers\":5,\"algorithm\":{\"name\":\"ssgd\"}}", &t);
    assert_true(spec_hash(&s) == spec_hash(&t));
}

/* min_workers: 1 when not given (today's elastic jobs); any value up to workers, for every
 * algorithm (lost hosts shrink any job); it may change on resume, as max_workers. */
static void test_min_workers(void **state)
{
    (void)state;
    job_spec_t s, t;
    parse_ok("{\"model\":\"lenet5\",\"workers\":3,\"algorithm\":{\"name\":\"ssgd\"}}", &s);
    assert_int_equal(s.min_workers, 1);
    parse_ok("{\"model\":\"lenet5\",\"workers\":3,\"min_workers\":3,\"algorithm\":{\"name\":\"ssgd\"}}", &t);
    assert_int_equal(t.min_workers, 3);
    assert_true(spec_hash(&s) == spec_hash(&t));
    parse_ok("{\"model\":\"lenet5\",\"workers\":4,\"min_workers\":2,\"max_workers\":6,\"batch_size\":8,"
             "\"algorithm\":{\"name\":\"ssgd\"}}",
             &t);
    assert_int_equal(t.min_workers, 2);
    parse_ok("{\"model\":\"lenet5\",\"workers\":3,\"min_workers\":2,\"algorithm\":{\"name\":\"asgd\"}}", &t);
    assert_int_equal(t.min_workers, 2);
    parse_ok("{\"model\":\"lenet5\",\"min_workers\":1}", &t);
}

/* sync_batchnorm: off by default, hashing as before it existed (older checkpoints resume);
 * on, with ssgd (or sgd, one process), part of the run; refused by name with every
 * algorithm whose ranks do not take every step together, with the goodput planner (which
 * may leave a rank out of a step's all-reduces) and with device cuda. */
static void assert_round_trip(const job_spec_t *s);

static void test_sync_batchnorm(void **state)
{
    (void)state;
    job_spec_t s, t;
    parse_ok("{\"model\":\"lenet5\",\"workers\":2,\"algorithm\":{\"name\":\"ssgd\"}}", &s);
    assert_int_equal(s.sync_batchnorm, 0);
    parse_ok("{\"model\":\"lenet5\",\"workers\":2,\"sync_batchnorm\":false,\"algorithm\":{\"name\":\"ssgd\"}}", &t);
    assert_true(spec_hash(&s) == spec_hash(&t));
    parse_ok("{\"model\":\"lenet5\",\"workers\":2,\"sync_batchnorm\":true,\"algorithm\":{\"name\":\"ssgd\","
             "\"dynamic_batch\":true}}",
             &t);
    assert_int_equal(t.sync_batchnorm, 1);
    assert_true(spec_hash(&s) != spec_hash(&t));
    assert_round_trip(&t);
    parse_ok("{\"model\":\"lenet5\",\"sync_batchnorm\":true,\"device\":\"auto\"}", &t); /* sgd */
    static const char *const refused[] = {"hier-bsp",  "hpsgd",   "local-sgd", "asgd",
                                          "nsoftsync", "dc-asgd", "ddc-asgd",  "dbs-sgd"};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        char text[256], err[512] = "", want[128];
        snprintf(text, sizeof text,
                 "{\"model\":\"lenet5\",\"workers\":2,\"sync_batchnorm\":true,\"algorithm\":{\"name\":\"%s\"}}",
                 refused[i]);
        assert_int_equal(spec_parse(text, &t, err, sizeof err), -1);
        snprintf(want, sizeof want, "sync_batchnorm: only ssgd (or sgd, one process) has every rank take every step");
        if (!strstr(err, want) || !strstr(err, refused[i])) fail_msg("%s: %s", refused[i], err);
    }
    char err[512] = "";
    assert_int_equal(spec_parse("{\"model\":\"lenet5\",\"workers\":2,\"sync_batchnorm\":true,\"algorithm\":{"
                                "\"name\":\"ssgd\",\"goodput\":true}}",
                                &t, err, sizeof err),
                     -1);
    assert_non_null(strstr(err, "sync_batchnorm: the goodput planner may leave a rank out of a step"));
    assert_int_equal(spec_parse("{\"model\":\"lenet5\",\"workers\":2,\"sync_batchnorm\":true,\"device\":\"cuda\","
                                "\"algorithm\":{\"name\":\"ssgd\"}}",
                                &t, err, sizeof err),
                     -1);
    assert_non_null(strstr(err, "sync_batchnorm: implemented on CPU ranks only"));
    assert_int_equal(spec_parse("{\"model\":\"lenet5\",\"sync_batchnorm\":1}", &t, err, sizeof err), -1);
    assert_non_null(strstr(err, "sync_batchnorm: must be"));
}

/* precision: fp32 by default, bf16 on CPU ranks; anything else refused by name. */
static void test_precision(void **state)
{
    job_spec_t t;
    char err[512] = "";
    assert_int_equal(spec_parse("{\"model\":\"lenet5\"}", &t, err, sizeof err), 0);
    assert_string_equal(t.precision, "fp32");
    assert_int_equal(spec_parse("{\"model\":\"lenet5\",\"precision\":\"bf16\"}", &t, err, sizeof err), 0);
    assert_string_equal(t.precision, "bf16");
    const char *bad[] = {"\"fp16\"", "\"BF16\"", "16", "null", "\"\""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[128];
        snprintf(text, sizeof text, "{\"model\":\"lenet5\",\"precision\":%s}", bad[i]);
        assert_int_equal(spec_parse(text, &t, err, sizeof err), -1);
        if (!strstr(err, "precision")) fail_msg("%s: %s", bad[i], err);
    }
    assert_int_equal(spec_parse("{\"model\":\"lenet5\",\"precision\":\"bf16\",\"device\":\"cuda\"}", &t, err,
                                sizeof err),
                     -1);
    assert_non_null(strstr(err, "precision bf16: implemented on CPU ranks only"));
    /* not in the fingerprint: a checkpoint resumes at either precision */
    job_spec_t a;
    assert_int_equal(spec_parse("{\"model\":\"lenet5\"}", &a, err, sizeof err), 0);
    assert_int_equal(spec_parse("{\"model\":\"lenet5\",\"precision\":\"bf16\"}", &t, err, sizeof err), 0);
    assert_true(spec_hash(&a) == spec_hash(&t));
}

static void test_is_async(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        int async;
    } ALGS[] = {{"sgd", 0},  {"ssgd", 0},      {"hier-bsp", 0}, {"hpsgd", 0},    {"local-sgd", 0},
                {"asgd", 1}, {"nsoftsync", 1}, {"dc-asgd", 1},  {"ddc-asgd", 1}, {"dbs-sgd", 1}};
    for (size_t i = 0; i < sizeof ALGS / sizeof ALGS[0]; i++) {
        char text[256];
        snprintf(text, sizeof text, "{\"model\":\"lenet5\",\"workers\":%d,\"algorithm\":{\"name\":\"%s\"}}",
                 strcmp(ALGS[i].name, "sgd") == 0 ? 1 : 3, ALGS[i].name);
        job_spec_t s;
        parse_ok(text, &s);
        if (spec_is_async(&s) != ALGS[i].async) fail_msg("spec_is_async(%s) = %d", ALGS[i].name, spec_is_async(&s));
    }
}

/* spec_warnings (issue 29): an asynchronous algorithm with explicit momentum at the
 * threshold on enough workers, and nothing else. */
static void test_spec_warnings(void **state)
{
    (void)state;
    static const struct {
        const char *alg, *extra;
        double momentum;
        int workers, want;
    } CASES[] = {
        {"asgd", "", 0.9, 3, 1},
        {"dbs-sgd", "", 0.95, 8, 1},
        {"nsoftsync", ",\"n\":3", 0.9, 3, 1},
        {"asgd", "", 0.9, 2, 0},              /* fewer workers */
        {"asgd", "", 0.85, 3, 0},             /* lower momentum */
        {"ssgd", "", 0.9, 4, 0},              /* synchronous: no staleness */
        {"nsoftsync", ",\"n\":1", 0.9, 3, 0}, /* hard sync: no staleness */
    };
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        for (int comp = 0; comp < 2; comp++) {
            char text[512], warn[4][SPEC_WARNING_MAX];
            snprintf(text, sizeof text,
                     "{\"model\":\"lenet5\",\"workers\":%d,\"algorithm\":{\"name\":\"%s\"%s},"
                     "\"optimizer\":{\"momentum\":%g,\"async_momentum\":\"%s\"}}",
                     CASES[i].workers, CASES[i].alg, CASES[i].extra, CASES[i].momentum,
                     comp ? "compensated" : "explicit");
            job_spec_t s;
            parse_ok(text, &s);
            int n = spec_warnings(&s, warn, 4);
            int want = comp ? 0 : CASES[i].want; /* compensated never warns */
            if (n != want) fail_msg("%d warnings for %s, want %d", n, text, want);
            if (n) {
                assert_non_null(strstr(warn[0], "async_momentum"));
                assert_non_null(strstr(warn[0], "optimizer.momentum"));
                assert_null(strchr(warn[0], '\n'));
            }
            assert_int_equal(spec_warnings(&s, warn, 0), 0); /* no room: none written */
        }
    }
}

static void test_empty_slowdown_is_absent(void **state)
{
    (void)state;
    job_spec_t s;
    parse_ok("{\"model\":\"lenet5\",\"workers\":4,\"algorithm\":{\"name\":\"asgd\"},"
             "\"emulate\":{\"slowdown\":[],\"schedule\":[]}}",
             &s);
    assert_int_equal(s.emulate.nslowdown, 0);
    assert_int_equal(s.emulate.nschedule, 0);
    assert_true(s.emulate.slowdown[3] == 1.0);
}

/* ---- serialisation ----------------------------------------------------------------- */

static void assert_round_trip(const job_spec_t *s)
{
    char *text = spec_to_json(s);
    assert_non_null(text);
    job_spec_t back;
    char err[256] = "";
    if (spec_parse(text, &back, err, sizeof err) != 0)
        fail_msg("spec_to_json output does not parse: %s\n  %s", err, text);
    if (memcmp(s, &back, sizeof back) != 0) fail_msg("round trip changed the spec: %s", text);
    char *again = spec_to_json(&back);
    assert_non_null(again);
    assert_string_equal(text, again);
    /* The document spec_to_json_doc hands back is what decoding its text gives (the
     * coordinator's submit path uses it instead of decoding), and spec_from_json on a
     * decoded document is spec_parse. */
    json_t *doc = NULL;
    char *third = spec_to_json_doc(s, &doc);
    assert_non_null(third);
    assert_string_equal(text, third);
    json_t *decoded = json_loads(text, 0, NULL);
    assert_non_null(doc);
    assert_non_null(decoded);
    assert_true(json_equal(doc, decoded));
    job_spec_t from_doc;
    memset(&from_doc, 0, sizeof from_doc);
    assert_int_equal(spec_from_json(decoded, &from_doc, err, sizeof err), 0);
    assert_memory_equal(&from_doc, &back, sizeof back);
    json_decref(decoded);
    json_decref(doc);
    free(third);
    free(again);
    free(text);
}

static void test_round_trip(void **state)
{
    (void)state;
    job_spec_t s;
    parse_ok(FULL_SPEC, &s);
    assert_round_trip(&s);

    spec_defaults(&s);
    strcpy(s.model, "lenet5");
    assert_round_trip(&s);

    /* awkward numbers: need all 17 digits, tiny, huge */
    parse_ok("{\"model\":\"lenet5\",\"optimizer\":{\"lr\":0.1234567890123456789,"
             "\"weight_decay\":5e-300,\"clip_norm\":987654.32109876543},\"seed\":9223372036854775807,"
             "\"dataset\":{\"path\":\"d\\u00e9j\\u00e0 \\\"vu\\\"\\\\x\"}}",
             &s);
    assert_true(s.seed == 9223372036854775807UL);
    assert_string_equal(s.dataset.path, "d\xc3\xa9j\xc3\xa0 \"vu\"\\x");
    assert_round_trip(&s);

    const char *examples[] = {"examples/ssgd-4.json", "examples/dbs-sgd-4.json", "examples/resnet20-cifar10.json"};
    for (size_t i = 0; i < sizeof examples / sizeof examples[0]; i++) {
        char err[256];
        if (spec_load_file(examples[i], &s, err, sizeof err) != 0) fail_msg("%s", err);
        assert_round_trip(&s);
    }
}

static void test_to_json_is_normalised(void **state)
{
    (void)state;
    job_spec_t s;
    parse_ok("{\"model\":\"lenet5\",\"workers\":4,\"algorithm\":{\"name\":\"nsoftsync\","
             "\"params\":{\"n\":2}}}",
             &s);
    char *text = spec_to_json(&s);
    assert_non_null(text);
    /* compact, shortest numbers, parameters directly under algorithm, every field there */
    assert_null(strchr(text, '\n'));
    assert_non_null(strstr(text, "\"lr\":0.01,"));
    assert_null(strstr(text, "00000000")); /* no 0.010000000000000000208 */
    assert_non_null(strstr(text, "\"algorithm\":{\"name\":\"nsoftsync\""));
    assert_non_null(strstr(text, "\"n\":2"));
    assert_null(strstr(text, "params"));
    assert_non_null(strstr(text, "\"lambda0\":0"));
    for (size_t i = 0; spec_field_path(i); i++) {
        const char *path = spec_field_path(i);
        const char *dot = strrchr(path, '.');
        const char *key = dot ? dot + 1 : path;
        if (strstr(path, "[]")) continue; /* element fields: only with entries */
        /* "model": {"onnx": PATH} only when given (test_model_onnx) */
        if (strcmp(path, "model.onnx") == 0 || strcmp(path, "model.sha256") == 0) continue;
        if (strncmp(path, "model.gpt.", 10) == 0) continue;         /* {"gpt": {...}} only when given (test_gpt_spec) */
        if (strncmp(path, "dataset.tokenizer.", 18) == 0) continue; /* the bpe object only when given */
        if (strncmp(path, "lora.", 5) == 0) continue; /* the lora object only with targets (test_lora_spec) */
        char quoted[80];
        snprintf(quoted, sizeof quoted, "\"%s\":", key);
        if (!strstr(text, quoted)) fail_msg("%s missing from %s", path, text);
    }
    free(text);
}

/* ---- files ------------------------------------------------------------------------ */

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static void test_examples_parse(void **state)
{
    (void)state;
    DIR *d = opendir("examples");
    if (!d) fail_msg("examples/ not found: run the tests from the repository root");
    int count = 0;
    struct dirent *ent;
    while ((ent = readdir(d)) != NULL) {
        /* an experiment's spec is not a job's: examples.sh submits it */
        if (!ends_with(ent->d_name, ".json") || strncmp(ent->d_name, "experiment-", 11) == 0) continue;
        char path[512], err[512];
        snprintf(path, sizeof path, "examples/%s", ent->d_name);
        job_spec_t s;
        if (spec_load_file(path, &s, err, sizeof err) != 0) fail_msg("%s", err);
        count++;
    }
    closedir(d);
    assert_true(count >= 7);

    job_spec_t s;
    char err[512];
    assert_int_equal(spec_load_file("examples/lenet5-fashion.json", &s, err, sizeof err), 0);
    assert_string_equal(s.model, "lenet5");
    assert_string_equal(s.dataset.name, "fashion-mnist");
    assert_string_equal(s.algorithm.name, "sgd");
    assert_int_equal(s.epochs, 5);
    assert_int_equal(s.batch_size, 64);
    assert_int_equal(s.workers, 1);
    assert_true(s.optimizer.lr == 0.02);
    assert_true(s.optimizer.momentum == 0.9);

    assert_int_equal(spec_load_file("examples/mlp-fashion.json", &s, err, sizeof err), 0);
    assert_string_equal(s.model, "mlp");

    assert_int_equal(spec_load_file("examples/lenet5-mnist.json", &s, err, sizeof err), 0);
    assert_string_equal(s.dataset.name, "mnist");
    assert_int_equal(s.epochs, 3);

    assert_int_equal(spec_load_file("examples/cifar10-quick.json", &s, err, sizeof err), 0);
    assert_string_equal(s.model, "cifar10_quick");
    assert_string_equal(s.dataset.name, "cifar10");

    assert_int_equal(spec_load_file("examples/resnet20-cifar10.json", &s, err, sizeof err), 0);
    assert_string_equal(s.model, "resnet20");

    assert_int_equal(spec_load_file("examples/ssgd-4.json", &s, err, sizeof err), 0);
    assert_string_equal(s.algorithm.name, "ssgd");
    assert_int_equal(s.workers, 4);
    assert_int_equal(s.algorithm.dynamic_batch, 1);
    assert_int_equal(s.emulate.nslowdown, 4);
    assert_true(s.emulate.slowdown[0] == 1 && s.emulate.slowdown[1] == 1 && s.emulate.slowdown[2] == 2 &&
                s.emulate.slowdown[3] == 4);
    assert_false(spec_is_async(&s));

    assert_int_equal(spec_load_file("examples/dbs-sgd-4.json", &s, err, sizeof err), 0);
    assert_string_equal(s.algorithm.name, "dbs-sgd");
    assert_int_equal(s.workers, 4);
    assert_int_equal(s.algorithm.dynamic_batch, 1);
    assert_int_equal(s.emulate.nslowdown, 4);
    assert_true(s.emulate.slowdown[3] == 4);
    assert_true(spec_is_async(&s));
}

static void test_load_file_errors(void **state)
{
    (void)state;
    job_spec_t s;
    char err[512];
    assert_int_equal(spec_load_file("no/such/spec.json", &s, err, sizeof err), -1);
    assert_non_null(strstr(err, "no/such/spec.json: "));

    char path[] = "/tmp/test_spec_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    fputs("{\"model\": \"lenet5\",\n \"optimizer\": {\"lr\": 0}}\n", f);
    fclose(f);
    assert_int_equal(spec_load_file(path, &s, err, sizeof err), -1);
    char want[128];
    snprintf(want, sizeof want, "%s: optimizer.lr: must be in (0, 1000]", path);
    assert_string_equal(err, want);
    unlink(path);
}

/* ---- docs -------------------------------------------------------------------------- */

static void test_print_fields(void **state)
{
    (void)state;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    spec_print_fields(f);
    fclose(f);
    assert_true(strncmp(buf, "| field | type | default | allowed | description |\n", 51) == 0);
    assert_non_null(strstr(buf, "| `optimizer.lr` | number | 0.01 | in (0, 1000] |"));
    assert_non_null(strstr(buf, "| `batch_size` | integer | 64 | between 1 and 65536 |"));
    assert_non_null(strstr(buf, "| `model` | string | required | a name of the catalog; built in: `mlp`, `lenet5`, "
                                "`cifar10_quick`, `resnet20` |"));
    size_t rows = 0;
    for (const char *p = buf; (p = strchr(p, '\n')) != NULL; p++) rows++;
    size_t paths = 0;
    while (spec_field_path(paths)) paths++;
    assert_int_equal(rows, paths + 2); /* header, separator, one line per field */
    free(buf);
}

/* docs/JOB_SPEC.md names every field, and carries the generated table verbatim: a field
 * added to, or changed in, the table fails here until the doc is regenerated. */
static void test_doc_covers_every_field(void **state)
{
    (void)state;
    char *doc = read_text("docs/JOB_SPEC.md");
    if (!doc) fail_msg("docs/JOB_SPEC.md not found: run the tests from the repository root");
    size_t n = 0;
    for (const char *path; (path = spec_field_path(n)) != NULL; n++) {
        char quoted[128];
        snprintf(quoted, sizeof quoted, "`%s`", path);
        if (!strstr(doc, quoted)) fail_msg("docs/JOB_SPEC.md does not mention %s", quoted);
    }
    assert_true(n > 40);

    char *table = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&table, &len);
    assert_non_null(f);
    spec_print_fields(f);
    fclose(f);
    for (char *line = strtok(table, "\n"); line; line = strtok(NULL, "\n"))
        if (!strstr(doc, line))
            fail_msg("docs/JOB_SPEC.md lacks the generated table line\n  %s\n"
                     "regenerate the table with spec_print_fields",
                     line);
    free(table);
    free(doc);
}

/* A stand-in for the worker's ONNX loader (model/onnx_import.c's onnx_import_catalog_add,
 * tested with real files by tests/integration/onnx_train.sh): a 1x28x28 model of 10
 * classes, of 7 when the path says "seven", refused when it says "softplus"; counts its
 * calls. */
static int fake_loads;
static int fake_onnx_loader(const char *path, const char *name, const char *sha256, char *err, size_t errlen)
{
    (void)sha256;
    fake_loads++;
    if (strstr(path, "softplus")) {
        snprintf(err, errlen, "%s: node '/Softplus': operator Softplus is not supported", path);
        return -1;
    }
    catalog_model_t m;
    memset(&m, 0, sizeof m);
    snprintf(m.name, sizeof m.name, "%s", name);
    m.source = CATALOG_ONNX;
    m.C = 1, m.H = 28, m.W = 28, m.classes = strstr(path, "seven") ? 7 : 10, m.layers = 5;
    m.params = 1000, m.acts_per_sample = 100, m.dacts_per_sample = 60, m.flops_per_sample = 1e5;
    return catalog_model_add(&m, err, errlen);
}

/* Every ```json block of docs/JOB_SPEC.md is a valid spec, so the examples there keep
 * up with the validator. */
static void test_doc_examples_parse(void **state)
{
    (void)state;
    char *doc = read_text("docs/JOB_SPEC.md");
    if (!doc) fail_msg("docs/JOB_SPEC.md not found: run the tests from the repository root");
    int blocks = 0;
    /* the ONNX example is read as pacer-worker reads it (its loader stood in for) */
    spec_set_onnx_loader(fake_onnx_loader);
    for (char *p = doc; (p = strstr(p, "```json\n")) != NULL;) {
        p += strlen("```json\n");
        char *end = strstr(p, "```");
        assert_non_null(end);
        *end = '\0';
        job_spec_t s;
        char err[256];
        if (spec_parse(p, &s, err, sizeof err) != 0)
            fail_msg("docs/JOB_SPEC.md example %d: %s\n%s", blocks + 1, err, p);
        blocks++;
        p = end + 3;
    }
    assert_true(blocks >= 3);
    free(doc);
    spec_set_onnx_loader(NULL);
    catalog_model_remove("cnn.onnx"); /* the later tests list the catalog's names */
}

/* Every numeric field's range error, table-driven from the field table itself
 * (spec_field_info), so a bound added to a row is tested without touching this test:
 * for each bound, the first value beyond it (min - 1 / max + 1 for integers, the bound
 * itself when exclusive, the next double beyond it otherwise), built as a JSON value
 * rather than text, must be refused with an error naming the field; an integer field
 * must refuse 1.5. Arrays of numbers get the bad
 * value as an entry; the fields of emulate.schedule[] sit in an otherwise valid entry. */
static json_t *spec_with(const char *path, json_t *value, char *where, size_t wlen)
{
    json_t *root = json_pack("{s:s, s:s, s:{s:s}}", "model", "mlp", "name", "range", "dataset", "name", "fashion-mnist");
    char p[128];
    snprintf(p, sizeof p, "%s", path);
    char *arr = strstr(p, "[]");
    if (arr) { /* emulate.schedule[].step: one valid entry with this field replaced */
        json_t *entry = json_pack("{s:i, s:i, s:f}", "step", 0, "rank", 0, "slowdown", 1.0);
        json_object_set_new(entry, arr + 3, value);
        json_object_set_new(json_object_get(root, "dataset"), "train_subset", json_integer(0));
        json_object_set_new(root, "emulate", json_pack("{s:[o]}", "schedule", entry));
        *arr = 0;
        snprintf(where, wlen, "%s[0].%s", p, arr + 3);
        return root;
    }
    snprintf(where, wlen, "%s", path);
    /* a row of the model object ("model.gpt.layers"): the object instead of the name */
    if (strncmp(path, "model.", 6) == 0) json_object_set_new(root, "model", json_object());
    json_t *obj = root;
    char *key = p, *dot;
    while ((dot = strchr(key, '.')) != NULL) {
        *dot = 0;
        json_t *next = json_object_get(obj, key);
        if (!next) {
            next = json_object();
            json_object_set_new(obj, key, next);
        }
        obj = next;
        key = dot + 1;
    }
    json_object_set_new(obj, key, value);
    return root;
}

static int refused(const char *path, json_t *value, const char *what)
{
    char where[160], err[512] = "";
    json_t *root = spec_with(path, value, where, sizeof where);
    char *text = json_dumps(root, JSON_COMPACT | JSON_REAL_PRECISION(17));
    json_decref(root);
    assert_non_null(text);
    job_spec_t s;
    int rc = spec_parse(text, &s, err, sizeof err);
    if (rc == 0) fail_msg("%s: %s accepted (%s)", path, what, text);
    if (!strstr(err, where) || !strstr(err, "must be"))
        fail_msg("%s: %s refused, but the error does not name %s: %s", path, what, where, err);
    free(text);
    return 1;
}

static void test_range_errors_every_numeric_field(void **state)
{
    (void)state;
    int fields = 0, checks = 0;
    spec_field_info_t f;
    for (size_t i = 0; spec_field_info(i, &f) == 0; i++) {
        if (!f.numeric) continue;
        const char *path = f.path;
        fields++;
        int bounded = 0;
        char what[96];
        for (int side = 0; side < 2; side++) {
            if (!(side == 0 ? f.has_min : f.has_max)) continue;
            double b = side == 0 ? f.min : f.max;
            /* the seed's upper bound is its type's: one more is not a JSON integer jansson
             * holds (test_every_number_is_bounded checks that it does not parse) */
            if (f.integer && side == 1 && b >= 9.2e18) {
                bounded = 1;
                continue;
            }
            int excl = side == 0 ? f.min_excl : f.max_excl;
            double bad = excl ? b : f.integer ? b + (side ? 1 : -1) : nextafter(b, side ? INFINITY : -INFINITY);
            json_t *v = f.integer ? json_integer((json_int_t)bad) : json_real(bad);
            if (f.array) v = json_pack("[o]", v);
            snprintf(what, sizeof what, "%.17g (%s bound %.17g%s)", bad, side ? "upper" : "lower", b,
                     excl ? ", exclusive" : "");
            checks += refused(path, v, what);
            bounded = 1;
        }
        if (f.integer) checks += refused(path, json_real(1.5), "1.5 (not an integer)");
        if (!bounded) fail_msg("%s: numeric field with no bound at all", path);
    }
    assert_true(fields >= 30);
    print_message("%d numeric fields, %d out-of-range values refused, each naming its field\n", fields, checks);
}

/* A user's data set (issue 26): its fields parse, the format resolves, augmentation is
 * any data set's, and a built-in set resized or read as a user format skips the
 * name-based model pairing (the worker checks the shape it produces). */
static void test_dataset_fields(void **state)
{
    (void)state;
    job_spec_t s;
    char err[512];
    assert_int_equal(spec_parse("{\"model\":\"lenet5\",\"dataset\":{\"format\":\"imagefolder\",\"path\":\"/d\","
                                "\"resize\":[28,28],\"mean\":[0.5],\"std\":[0.25],\"augment\":true,"
                                "\"crop_padding\":2,\"hflip\":false,\"cache_dir\":\"/c\"}}",
                                &s, err, sizeof err),
                     0);
    assert_string_equal(spec_dataset_format(&s), "imagefolder");
    assert_int_equal(spec_dataset_is_user(&s), 1);
    assert_int_equal(s.dataset.nresize, 2);
    assert_true(s.dataset.resize[1] == 28);
    assert_int_equal(s.dataset.nmean, 1);
    assert_int_equal(s.dataset.crop_padding, 2);
    assert_int_equal(s.dataset.hflip, 0);
    assert_string_equal(s.dataset.cache_dir, "/c");
    assert_int_equal(spec_parse("{\"model\":\"lenet5\",\"dataset\":{\"name\":\"mnist\",\"augment\":true}}", &s, err,
                                sizeof err),
                     0);
    assert_int_equal(spec_parse("{\"model\":\"lenet5\",\"dataset\":{\"name\":\"cifar10\",\"resize\":[28,28]}}", &s, err,
                                sizeof err),
                     0);
    assert_string_equal(spec_dataset_format(&s), "cifar");
    assert_int_equal(spec_parse("{\"model\":\"resnet20\",\"dataset\":{\"format\":\"npz\",\"path\":\"/x.npz\","
                                "\"layout\":\"nchw\",\"mean\":[0.4,0.5,0.6]}}",
                                &s, err, sizeof err),
                     0);
    assert_string_equal(s.dataset.layout, "nchw");
    /* cache_dir says where things are: a resumed run may change it */
    job_spec_t a, b;
    assert_int_equal(spec_parse("{\"model\":\"lenet5\",\"dataset\":{\"cache_dir\":\"/a\"}}", &a, err, sizeof err), 0);
    assert_int_equal(spec_parse("{\"model\":\"lenet5\",\"dataset\":{\"cache_dir\":\"/b\"}}", &b, err, sizeof err), 0);
    assert_true(spec_hash(&a) == spec_hash(&b));
    assert_int_equal(spec_parse("{\"model\":\"lenet5\",\"dataset\":{\"resize\":[28,28]}}", &b, err, sizeof err), 0);
    assert_true(spec_hash(&a) != spec_hash(&b));
}

/* ---- the catalog: a model added at run time takes the built-ins' paths ---------------- */

/* An imported model (what the ONNX importer will add): a 3x32x32 network with `classes`
 * outputs and sizes of its own. */
static catalog_model_t imported(const char *name, int classes)
{
    catalog_model_t m;
    memset(&m, 0, sizeof m);
    snprintf(m.name, sizeof m.name, "%s", name);
    snprintf(m.title, sizeof m.title, "an imported net");
    m.source = CATALOG_ONNX;
    m.C = 3, m.H = 32, m.W = 32, m.classes = classes, m.layers = 300;
    m.params = 11000000, m.buffers = 9600, m.fixed = 200000, m.acts_per_sample = 2000000;
    m.dacts_per_sample = 2000000;
    m.argmax_per_sample = 16384, m.flops_per_sample = 1.1e9;
    snprintf(m.dataset, sizeof m.dataset, "cifar10");
    return m;
}

/* An uploaded model's index entry (coordinator/modelstore.c): its activation gradients'
 * figure read where the entry has it, refused by name when it is not a size, and, in an
 * index written before the field was, the activations' own (an upper bound: the estimate
 * then admits no job it would have refused before). */
static void test_index_gradients_figure(void **state)
{
    (void)state;
    static const char ENTRY[] =
        "{\"models\": [{\"name\": \"cnn\", \"sha256\": "
        "\"d0cedd8ac2e8e0a5e6834487867f41bddce4aea28efa6caaee67e5751efd1fad\", \"input\": [1, 28, 28], "
        "\"classes\": 10, \"layers\": 10, \"parameters\": 7482, \"buffers\": 48, \"fixed\": 31152, "
        "\"activations_per_sample\": 25994, \"argmax_per_sample\": 1968, \"flops_per_sample\": 985666.0%s}]}";
    static const struct {
        const char *field;
        long want; /* -1: refused */
    } CASES[] = {{"", 25994},
                 {", \"activation_gradients_per_sample\": 4112", 4112},
                 {", \"activation_gradients_per_sample\": 0", -1},
                 {", \"activation_gradients_per_sample\": \"4112\"", -1}};
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        char text[1024], err[256] = "";
        snprintf(text, sizeof text, ENTRY, CASES[i].field);
        catalog_model_t m[2];
        const int n = modelstore_index_parse(text, strlen(text), m, 2, err, sizeof err);
        if (CASES[i].want < 0) {
            assert_int_equal(n, -1);
            if (!strstr(err, "activation_gradients_per_sample: must be an integer from 1"))
                fail_msg("case %zu: %s", i, err);
            continue;
        }
        if (n != 1) fail_msg("case %zu: %s", i, err);
        assert_int_equal(m[0].dacts_per_sample, CASES[i].want);
    }
}

static void test_catalog_added_model(void **state)
{
    (void)state;
    catalog_model_t m = imported("resnet-user", 10), got;
    char err[512];
    job_spec_t s;
    static const char *const SPEC = "{\"model\":\"resnet-user\",\"dataset\":{\"name\":\"cifar10\"}}";
    /* unknown before it is added: the list of names is the catalog's */
    assert_int_equal(spec_parse(SPEC, &s, err, sizeof err), -1);
    assert_string_equal(err, "model: must be one of mlp, lenet5, cifar10_quick, resnet20");

    if (catalog_model_add(&m, err, sizeof err) != 0) fail_msg("%s", err);
    assert_int_equal(catalog_model_get("resnet-user", &got), 0);
    assert_memory_equal(&got, &m, sizeof m);
    /* listed after the built-ins, and named in the "must be one of" list */
    assert_int_equal(catalog_model_at(4, &got), 0);
    assert_string_equal(got.name, "resnet-user");
    assert_int_equal(spec_parse("{\"model\":\"vgg\"}", &s, err, sizeof err), -1);
    assert_string_equal(err, "model: must be one of mlp, lenet5, cifar10_quick, resnet20, resnet-user");

    /* validation: the spec names it, the pairing is by its shape and classes */
    if (spec_parse(SPEC, &s, err, sizeof err) != 0) fail_msg("%s", err);
    assert_int_equal(spec_parse("{\"model\":\"resnet-user\"}", &s, err, sizeof err), -1);
    assert_string_equal(err, "model: resnet-user takes 3x32x32 images, dataset.name fashion-mnist has 1x28x28");

    /* the memory estimate sizes it from its own figures: 11M parameters x 3 x 4 bytes and
     * 2M activations x 2 x 4 bytes a sample */
    memest_t e;
    assert_int_equal(spec_parse("{\"model\":\"resnet-user\",\"dataset\":{\"name\":\"cifar10\"},\"batch_size\":32}", &s,
                                err, sizeof err),
                     0);
    assert_int_equal(memest_rank(&s, 1, &e, err, sizeof err), 0);
    assert_true(e.model_bytes == 4.0 * (3.0 * 11000000 + 4 /* MODEL_GRAD_EXTRA */ + 9600 + 200000));
    assert_true(e.batch_bytes > 32 * 16.0e6 && e.batch_bytes < 32 * 16.2e6);
    assert_int_equal(e.max_batch, 32);
    /* threads: 4: a workspace slice and a weight-gradient partial per kernel thread,
     * bounded by 4 x (fixed + params) in all */
    const double one = e.model_bytes;
    assert_int_equal(spec_parse("{\"model\":\"resnet-user\",\"dataset\":{\"name\":\"cifar10\"},\"batch_size\":32,"
                                "\"threads\":4}",
                                &s, err, sizeof err),
                     0);
    assert_int_equal(memest_rank(&s, 1, &e, err, sizeof err), 0);
    assert_true(e.model_bytes == one + 4.0 * (4.0 * (200000 + 11000000) - 200000));
    /* adamw: its second moment, one more float per parameter (the first is the momentum
     * buffer, counted in the 3 x params above) */
    assert_int_equal(spec_parse("{\"model\":\"resnet-user\",\"dataset\":{\"name\":\"cifar10\"},\"batch_size\":32,"
                                "\"optimizer\":{\"kind\":\"adamw\"}}",
                                &s, err, sizeof err),
                     0);
    assert_int_equal(memest_rank(&s, 1, &e, err, sizeof err), 0);
    assert_true(e.model_bytes == one + 4.0 * 11000000);

    /* a model whose output width is not the data set's classes: both named */
    catalog_model_t wide = imported("wide-user", 100);
    if (catalog_model_add(&wide, err, sizeof err) != 0) fail_msg("%s", err);
    assert_int_equal(spec_parse("{\"model\":\"wide-user\",\"dataset\":{\"name\":\"cifar10\"}}", &s, err, sizeof err),
                     -1);
    assert_string_equal(err, "model: wide-user has 100 outputs (classes), dataset.name cifar10 has 10 classes");

    /* removed: refused again, and an estimate of a spec parsed before is refused, not
     * skipped (the coordinator's admission and the worker's check refuse the job) */
    assert_int_equal(spec_parse(SPEC, &s, err, sizeof err), 0);
    assert_int_equal(catalog_model_remove("resnet-user"), 0);
    assert_int_equal(catalog_model_remove("resnet-user"), -1);
    assert_int_equal(memest_rank(&s, 1, &e, err, sizeof err), -1);
    assert_string_equal(err, "model: resnet-user is not in the catalog: no memory estimate");
    assert_int_equal(spec_parse(SPEC, &s, err, sizeof err), -1);
    assert_int_equal(catalog_model_remove("wide-user"), 0);
    /* built-ins stay */
    assert_int_equal(catalog_model_remove("lenet5"), -1);
    assert_int_equal(catalog_model_get("lenet5", &got), 0);
}

/* Every figure of an added entry is checked: an entry in the catalog can always be
 * estimated, paired and listed. */
static void test_catalog_add_refusals(void **state)
{
    (void)state;
    static const struct {
        const char *what;
        const char *want;
    } CASES[] = {
        {"name", "model name: must be 1 to 63 letters, digits, '.', '_' or '-'"},
        {"builtin-name", "model lenet5: a built-in model has that name"},
        {"source", "model x: source must be onnx"},
        {"shape", "model x: input shape 0x32x32 is not a shape"},
        {"classes", "model x: classes must be >= 1 (is 0)"},
        {"layers", "model x: layers must be >= 1 (is 0)"},
        {"params", "model x: sizes must be known (parameters 0,"},
        {"acts", "model x: sizes must be known (parameters 11000000, buffers 9600, fixed 200000, activations per "
                 "sample -1,"},
        {"dacts", "activations per sample 2000000, their gradients per sample 0,"},
        {"flops", "model x: FLOPs per sample must be known (is nan)"},
        {"dataset", "model x: data set imagenet is not in the catalog"},
        {"duplicate", "model x: already in the catalog"},
    };
    char err[512];
    catalog_model_t ok = imported("x", 10);
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        catalog_model_t m = ok;
        const char *w = CASES[i].what;
        if (!strcmp(w, "name")) snprintf(m.name, sizeof m.name, "a/b");
        if (!strcmp(w, "builtin-name")) snprintf(m.name, sizeof m.name, "lenet5");
        if (!strcmp(w, "source")) m.source = CATALOG_BUILTIN;
        if (!strcmp(w, "shape")) m.C = 0;
        if (!strcmp(w, "classes")) m.classes = 0;
        if (!strcmp(w, "layers")) m.layers = 0;
        if (!strcmp(w, "params")) m.params = 0;
        if (!strcmp(w, "acts")) m.acts_per_sample = -1;
        if (!strcmp(w, "dacts")) m.dacts_per_sample = 0;
        if (!strcmp(w, "flops")) m.flops_per_sample = NAN;
        if (!strcmp(w, "dataset")) snprintf(m.dataset, sizeof m.dataset, "imagenet");
        if (!strcmp(w, "duplicate") && catalog_model_add(&m, err, sizeof err) != 0) fail_msg("%s", err);
        assert_int_equal(catalog_model_add(&m, err, sizeof err), -1);
        if (!strstr(err, CASES[i].want)) fail_msg("%s: \"%s\" does not say \"%s\"", w, err, CASES[i].want);
    }
    assert_int_equal(catalog_model_remove("x"), 0);
    catalog_model_t m;
    assert_int_equal(catalog_model_get("x", &m), -1);

    /* a data set: the same, and its entry is usable by name once added */
    catalog_dataset_t d;
    assert_int_equal(catalog_dataset_get("cifar10", &d), 0);
    assert_int_equal(catalog_dataset_add(&d, err, sizeof err), -1);
    assert_non_null(strstr(err, "data set cifar10: source must be user"));
    d.source = CATALOG_USER;
    assert_int_equal(catalog_dataset_add(&d, err, sizeof err), -1);
    assert_non_null(strstr(err, "data set cifar10: a built-in data set has that name"));
    snprintf(d.name, sizeof d.name, "my-cifar");
    snprintf(d.test_files[0], sizeof d.test_files[0], "../etc/passwd");
    assert_int_equal(catalog_dataset_add(&d, err, sizeof err), -1);
    assert_non_null(strstr(err, "data set my-cifar: test file 0 is not a file name"));
    snprintf(d.test_files[0], sizeof d.test_files[0], "test_batch.bin");
    d.classes = 100;
    if (catalog_dataset_add(&d, err, sizeof err) != 0) fail_msg("%s", err);
    assert_int_equal(catalog_dataset_add(&d, err, sizeof err), -1);
    assert_non_null(strstr(err, "data set my-cifar: already in the catalog"));
    /* a built-in's head takes the data set's 100 classes (issue 42): the estimate sizes
     * it so, 90 more classes of 64 weights and a bias (3 copies: parameters, gradients,
     * momentum), and per sample 90 more logits and probabilities, and 96 more floats of
     * their gradients (the slot's end aligned to 16: model/plan.c) */
    job_spec_t s;
    memest_t e100, e10;
    if (spec_parse("{\"model\":\"resnet20\",\"dataset\":{\"name\":\"my-cifar\"},\"batch_size\":16}", &s, err,
                   sizeof err) != 0)
        fail_msg("%s", err);
    if (memest_rank(&s, 1, &e100, err, sizeof err) != 0) fail_msg("%s", err);
    if (spec_parse("{\"model\":\"resnet20\",\"dataset\":{\"name\":\"cifar10\"},\"batch_size\":16}", &s, err,
                   sizeof err) != 0)
        fail_msg("%s", err);
    if (memest_rank(&s, 1, &e10, err, sizeof err) != 0) fail_msg("%s", err);
    assert_true(e100.model_bytes - e10.model_bytes == 4.0 * 3 * 90 * 65);
    assert_true(e100.batch_bytes - e10.batch_bytes == 16 * 4.0 * (90 + 96 + 90));
    assert_int_equal(catalog_dataset_remove("my-cifar"), 0);
    assert_int_equal(catalog_dataset_remove("cifar10"), -1);
}

/* "model": {"onnx": PATH}: the loader adds the model under the file's base name before the
 * pairing checks read it; without a loader (the coordinator) the path is refused; the
 * normalised spec gives the object back, the hash takes the name, not the path. */
/* "model": {"gpt": {...}} on a text data set: the name "gpt", the fields as given, written
 * back as the same object (what the coordinator stores and the worker reads), and the
 * refusals that name what is wrong. */
/* dataset.tokenizer: "bytes", "chars" or a bpe object, round-tripped through to_json; the
 * refusals name the field (and a near miss). */
static void test_tokenizer_spec(void **state)
{
    (void)state;
    job_spec_t s, back;
    char err[512] = "";
#define TEXT_SPEC(TOK) \
    "{\"model\":{\"gpt\":{\"layers\":1}},\"dataset\":{\"format\":\"text\",\"path\":\"/d\",\"tokenizer\":" TOK "}}"
    parse_ok(TEXT_SPEC("\"chars\""), &s);
    assert_string_equal(s.dataset.tokenizer, "chars");
    parse_ok(TEXT_SPEC("{\"kind\":\"bpe\",\"vocab\":\"/d/vocab.json\",\"merges\":\"/d/merges.txt\"}"), &s);
    assert_string_equal(s.dataset.tokenizer, "bpe");
    assert_string_equal(s.dataset.tokenizer_vocab, "/d/vocab.json");
    char *text = spec_to_json(&s);
    assert_non_null(
        strstr(text, "\"tokenizer\":{\"kind\":\"bpe\",\"vocab\":\"/d/vocab.json\",\"merges\":\"/d/merges.txt\"}"));
    parse_ok(text, &back);
    assert_string_equal(back.dataset.tokenizer_merges, "/d/merges.txt");
    free(text);
    parse_ok(TEXT_SPEC("{\"kind\":\"bpe\",\"file\":\"/d/tokenizer.json\"}"), &s);
    assert_string_equal(s.dataset.tokenizer, "bpe");
    text = spec_to_json(&s);
    parse_ok(text, &back);
    assert_string_equal(back.dataset.tokenizer_file, "/d/tokenizer.json");
    assert_int_equal(spec_hash(&s), spec_hash(&back));
    free(text);
    /* the memory estimate counts a BPE's vocabulary as GPT-2's (its files are not read here) */
    memest_t eb, ebpe;
    if (memest_rank(&s, 1, &ebpe, err, sizeof err) != 0) fail_msg("%s", err);
    parse_ok(TEXT_SPEC("\"bytes\""), &s);
    if (memest_rank(&s, 1, &eb, err, sizeof err) != 0) fail_msg("%s", err);
    assert_true(ebpe.model_bytes >= eb.model_bytes + 4.0 * 128 * (50257 - 256)); /* the embedding, embd 128 */
    static const char *const REFUSED[][2] = {
        {TEXT_SPEC("\"char\""), "dataset.tokenizer: must be one of bytes, chars (did you mean chars?)"},
        {TEXT_SPEC("{}"), "dataset.tokenizer: an empty object"},
        {TEXT_SPEC("{\"vocab\":\"/v\",\"merges\":\"/m\"}"), "dataset.tokenizer.kind: required"},
        {TEXT_SPEC("{\"kind\":\"chars\"}"), "dataset.tokenizer.kind: must be one of bpe"},
        {TEXT_SPEC("{\"kind\":\"bpe\"}"), "dataset.tokenizer.vocab: required"},
        {TEXT_SPEC("{\"kind\":\"bpe\",\"vocab\":\"/v\"}"), "dataset.tokenizer.merges: required with vocab"},
        {TEXT_SPEC("{\"kind\":\"bpe\",\"file\":\"/f\",\"vocab\":\"/v\"}"), "dataset.tokenizer.file: give"},
        {TEXT_SPEC("{\"kind\":\"bpe\",\"merge\":\"/m\"}"),
         "dataset.tokenizer.merge: unknown field (did you mean dataset.tokenizer.merges?)"},
        {TEXT_SPEC("{\"kind\":\"bpe\",\"file\":\"\"}"), "dataset.tokenizer.file: must not be empty"},
        {TEXT_SPEC("7"), "dataset.tokenizer: must be a string"},
        {"{\"model\":{\"gpt\":{\"layers\":1}},\"dataset\":{\"format\":\"tokens\",\"path\":\"/d\",\"vocab_size\":9,"
         "\"tokenizer\":\"chars\"}}",
         "dataset.tokenizer: chars reads text (dataset.format text), not tokens"},
        {"{\"model\":\"mlp\",\"dataset\":{\"name\":\"mnist\",\"tokenizer\":\"chars\"}}",
         "dataset.tokenizer: chars reads text (dataset.format text), not idx"},
        {"{\"model\":{\"gpt\":{\"layers\":1}},\"dataset\":{\"format\":\"text\",\"path\":\"/d\",\"vocab_size\":256,"
         "\"tokenizer\":\"chars\"}}",
         "dataset.vocab_size: the chars tokenizer's vocabulary is its own"},
    };
#undef TEXT_SPEC
    for (size_t i = 0; i < sizeof REFUSED / sizeof REFUSED[0]; i++) {
        assert_int_equal(spec_parse(REFUSED[i][0], &s, err, sizeof err), -1);
        if (strncmp(err, REFUSED[i][1], strlen(REFUSED[i][1])) != 0)
            fail_msg("%s: '%s', want '%s'", REFUSED[i][0], err, REFUSED[i][1]);
    }
}

/* Text tokenized in memory is counted: the encoder's 4-byte ids of the larger split beside
 * its 2-byte layout while it loads (6 bytes a byte of train.txt here), and 2 bytes a byte of
 * both splits while it runs; text read as bytes is mapped, not counted. */
static void test_memest_tokenized_text(void **state)
{
    (void)state;
    char dir[64], path[96], spec[512], err[512] = "";
    snprintf(dir, sizeof dir, "/tmp/pacer-memest-%d", (int)getpid());
    assert_int_equal(mkdir(dir, 0700), 0);
    const size_t sizes[2] = {100000, 10000};
    const char *names[2] = {"train.txt", "val.txt"};
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        FILE *f = fopen(path, "wb");
        assert_non_null(f);
        for (size_t k = 0; k < sizes[i]; k++) fputc("ab \n"[k % 4], f);
        fclose(f);
    }
    memest_t eb, ec;
    job_spec_t s;
    snprintf(spec, sizeof spec,
             "{\"model\":{\"gpt\":{\"layers\":1,\"vocab_size\":4}},\"dataset\":{\"format\":\"text\",\"path\":\"%s\","
             "\"tokenizer\":\"%s\"}}",
             dir, "bytes");
    parse_ok(spec, &s);
    if (memest_rank(&s, 1, &eb, err, sizeof err) != 0) fail_msg("%s", err);
    snprintf(spec, sizeof spec,
             "{\"model\":{\"gpt\":{\"layers\":1,\"vocab_size\":4}},\"dataset\":{\"format\":\"text\",\"path\":\"%s\","
             "\"tokenizer\":\"%s\"}}",
             dir, "chars");
    parse_ok(spec, &s);
    if (memest_rank(&s, 1, &ec, err, sizeof err) != 0) fail_msg("%s", err);
    assert_true(ec.load_bytes - eb.load_bytes == 6.0 * 100000);
    assert_true(ec.data_bytes - eb.data_bytes == 2.0 * 110000);
    assert_true(ec.rank_bytes >= 6.0 * 100000);
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        unlink(path);
    }
    rmdir(dir);
}

/* lora: read and written back; absent, no lora object (a spec hashes as before lora
 * existed); an empty targets and the other fields without targets refused by name. */
static void test_lora_spec(void **state)
{
    (void)state;
    job_spec_t s, back, plain;
    char err[512];
    const char *base = "{\"model\":{\"gpt\":{\"layers\":1}},\"dataset\":{\"format\":\"text\",\"path\":\"/d\"}";
    char text[1024];
    snprintf(text, sizeof text,
             "%s,\"lora\":{\"rank\":4,\"alpha\":16,\"dropout\":0.1,\"targets\":[\"*.c_attn.weight\",\"*.c_fc.weight\"],"
             "\"export\":\"separate\"}}",
             base);
    parse_ok(text, &s);
    assert_int_equal(s.lora.rank, 4);
    assert_true(s.lora.alpha == 16 && s.lora.dropout == 0.1);
    assert_string_equal(s.lora.targets, "*.c_attn.weight\n*.c_fc.weight");
    assert_string_equal(s.lora.export_, "separate");
    char *json = spec_to_json(&s);
    assert_non_null(strstr(json, "\"targets\":[\"*.c_attn.weight\",\"*.c_fc.weight\"]"));
    parse_ok(json, &back);
    assert_true(spec_hash(&s) == spec_hash(&back));
    free(json);
    snprintf(text, sizeof text, "%s}", base);
    parse_ok(text, &plain);
    json = spec_to_json(&plain);
    assert_null(strstr(json, "\"lora\""));
    free(json);
    assert_true(spec_hash(&s) != spec_hash(&plain));
    static const char *const bad[][2] = {
        {"{\"rank\":0,\"targets\":[\"a\"]}", "lora.rank: must be"},
        {"{\"alpha\":0,\"targets\":[\"a\"]}", "lora.alpha: must be"},
        {"{\"dropout\":1,\"targets\":[\"a\"]}", "lora.dropout: must be"},
        {"{\"targets\":[]}", "lora.targets: an empty list"},
        {"{\"targets\":[\"\"]}", "lora.targets: [0]: a glob of 1 to 127 bytes"},
        {"{\"export\":\"fused\",\"targets\":[\"a\"]}", "lora.export: must be"},
        {"{\"rank\":4}", "lora: lora.targets is missing"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(text, sizeof text, "%s,\"lora\":%s}", base, bad[i][0]);
        if (spec_parse(text, &back, err, sizeof err) == 0) fail_msg("taken: %s", text);
        if (!strstr(err, bad[i][1])) fail_msg("%s: '%s', want '%s'", text, err, bad[i][1]);
    }
}

static void test_gpt_spec(void **state)
{
    (void)state;
    job_spec_t s, back;
    char err[512];
    parse_ok("{\"model\":{\"gpt\":{\"layers\":2,\"heads\":2,\"embd\":16,\"block_size\":32,\"tie_embeddings\":"
             "false}},\"dataset\":{\"format\":\"text\",\"path\":\"/d\"}}",
             &s);
    assert_string_equal(s.model, "gpt");
    assert_int_equal(s.gpt.layers, 2);
    assert_int_equal(s.gpt.embd, 16);
    assert_int_equal(s.gpt.block_size, 32);
    assert_int_equal(s.gpt.tie_embeddings, 0);
    assert_true(spec_model_is_gpt(&s) && spec_dataset_is_text(&s));
    char *text = spec_to_json(&s);
    assert_non_null(strstr(text, "\"model\":{\"gpt\":{\"layers\":2,"));
    parse_ok(text, &back);
    assert_true(spec_hash(&s) == spec_hash(&back));
    free(text);
    /* another shape is another run */
    parse_ok("{\"model\":{\"gpt\":{\"layers\":3}},\"dataset\":{\"format\":\"tokens\",\"path\":\"/d\","
             "\"vocab_size\":50257}}",
             &back);
    assert_true(spec_hash(&s) != spec_hash(&back));
    /* GPT-2 124M's shape by name */
    parse_ok("{\"model\":{\"gpt\":\"gpt2\"},\"dataset\":{\"format\":\"tokens\",\"path\":\"/d\",\"vocab_size\":50257}}",
             &back);
    assert_int_equal(back.gpt.layers, 12);
    assert_int_equal(back.gpt.heads, 12);
    assert_int_equal(back.gpt.embd, 768);
    assert_int_equal(back.gpt.block_size, 1024);
    assert_int_equal(back.gpt.vocab_size, 50257);
    assert_int_equal(back.gpt.tie_embeddings, 1);
    /* a vocabulary the data's tokenizer has, all of it; a BPE's is the coordinator's to check */
    parse_ok("{\"model\":{\"gpt\":{\"layers\":1,\"vocab_size\":256}},\"dataset\":{\"format\":\"text\",\"path\":"
             "\"/d\"}}",
             &back);
    parse_ok("{\"model\":{\"gpt\":{\"layers\":1,\"vocab_size\":70000}},\"dataset\":{\"format\":\"text\",\"path\":"
             "\"/d\",\"tokenizer\":{\"kind\":\"bpe\",\"file\":\"/t.json\"}}}",
             &back);
    static const char *const REFUSED[][2] = {
        {"{\"model\":{\"gpt\":\"gpt3\"}}", "model.gpt: must be an object of the GPT's fields, or \"gpt2\""},
        {"{\"model\":{\"gpt\":{\"heads\":2}},\"dataset\":{\"format\":\"text\",\"path\":\"/d\"}}",
         "model.gpt.layers: required"},
        {"{\"model\":{\"gpt\":{\"layers\":2}},\"dataset\":{\"name\":\"mnist\"}}",
         "model.gpt: trains on dataset.format text or tokens, not idx"},
        {"{\"model\":{\"gpt\":{\"layers\":2},\"onnx\":\"/a.onnx\"},\"dataset\":{\"format\":\"text\",\"path\":"
         "\"/d\"}}",
         "model: give onnx or gpt, not both"},
        {"{\"model\":{\"gpt\":{\"layers\":2,\"block\":3}}}", "model.gpt.block: unknown field"},
        /* a shape the worker could not build, a vocabulary the data's tokenizer cannot decode */
        {"{\"model\":{\"gpt\":{\"layers\":1,\"heads\":3,\"embd\":16}},\"dataset\":{\"format\":\"text\",\"path\":"
         "\"/d\"}}",
         "model.gpt.heads: 3 does not divide model.gpt.embd 16"},
        {"{\"model\":{\"gpt\":{\"layers\":1,\"vocab_size\":1}},\"dataset\":{\"format\":\"text\",\"path\":"
         "\"/d\"}}",
         "model.gpt.vocab_size: 1, must be at least 2"},
        {"{\"model\":{\"gpt\":{\"layers\":1,\"vocab_size\":300}},\"dataset\":{\"format\":\"text\",\"path\":"
         "\"/d\"}}",
         "model.gpt.vocab_size: 300, more than the 256 ids of the data set's bytes"},
        {"{\"model\":{\"gpt\":{\"layers\":1,\"vocab_size\":70000}},\"dataset\":{\"format\":\"tokens\","
         "\"path\":\"/d\",\"vocab_size\":50257}}",
         "model.gpt.vocab_size: 70000, more than the 50257 ids of the data set's tokens (dataset.vocab_size)"},
        {"{\"model\":\"mlp\",\"dataset\":{\"format\":\"text\",\"path\":\"/d\"}}",
         "dataset.format text: trains the built-in GPT"},
        {"{\"model\":{\"gpt\":{\"layers\":2}},\"dataset\":{\"format\":\"text\",\"path\":\"/d\",\"augment\":true}}",
         "dataset.augment: crops and flips images, not text"},
        {"{\"model\":\"mlp\",\"dataset\":{\"name\":\"mnist\",\"vocab_size\":3}}",
         "dataset.vocab_size: only with dataset.format text or tokens"},
        {"{\"model\":{\"gpt\":{\"layers\":2}},\"dataset\":{\"format\":\"text\",\"path\":\"/d\",\"tokenizer\":"
         "\"bpe\"}}",
         "dataset.tokenizer: must be one of"},
    };
    for (size_t i = 0; i < sizeof REFUSED / sizeof REFUSED[0]; i++) {
        assert_int_equal(spec_parse(REFUSED[i][0], &s, err, sizeof err), -1);
        if (strncmp(err, REFUSED[i][1], strlen(REFUSED[i][1])) != 0)
            fail_msg("%s: '%s', want '%s'", REFUSED[i][0], err, REFUSED[i][1]);
    }
}

static void test_model_onnx(void **state)
{
    (void)state;
    job_spec_t s, back;
    char err[512];
    static const char *const SPEC = "{\"model\":{\"onnx\":\"/data/nets/cnn.onnx\"},\"dataset\":{\"name\":\"mnist\"}}";
    spec_set_onnx_loader(NULL);
    assert_int_equal(spec_parse(SPEC, &s, err, sizeof err), -1);
    assert_string_equal(err, "model.onnx: /data/nets/cnn.onnx: ONNX files are read by pacer-worker and pacer-sim; "
                             "cnn.onnx is not in this catalog");

    spec_set_onnx_loader(fake_onnx_loader);
    fake_loads = 0;
    if (spec_parse(SPEC, &s, err, sizeof err) != 0) fail_msg("%s", err);
    assert_int_equal(fake_loads, 1);
    assert_string_equal(s.model, "cnn.onnx");
    assert_string_equal(s.model_onnx, "/data/nets/cnn.onnx");
    char *text = spec_to_json(&s);
    assert_non_null(strstr(text, "\"model\":{\"onnx\":\"/data/nets/cnn.onnx\"}"));
    /* read back: the same spec, the catalog's entry reused (pacer-sim's ranks share one) */
    if (spec_parse(text, &back, err, sizeof err) != 0) fail_msg("%s", err);
    assert_memory_equal(&s, &back, sizeof s);
    assert_int_equal(fake_loads, 1);
    free(text);
    /* the same file elsewhere resumes the same run; another file name does not */
    job_spec_t moved, other;
    if (spec_parse("{\"model\":{\"onnx\":\"cnn.onnx\"},\"dataset\":{\"name\":\"mnist\"}}", &moved, err, sizeof err))
        fail_msg("%s", err);
    assert_true(spec_hash(&moved) == spec_hash(&s));
    if (spec_parse("{\"model\":{\"onnx\":\"cnn2.onnx\"},\"dataset\":{\"name\":\"mnist\"}}", &other, err, sizeof err))
        fail_msg("%s", err);
    assert_true(spec_hash(&other) != spec_hash(&s));

    /* refusals, each naming what is wrong */
    static const struct {
        const char *spec, *err;
    } REFUSED[] = {
        {"{\"model\":{\"onnx\":\"n/softplus.onnx\"},\"dataset\":{\"name\":\"mnist\"}}",
         "model.onnx: n/softplus.onnx: node '/Softplus': operator Softplus is not supported"},
        {"{\"model\":{\"onnx\":\"seven.onnx\"},\"dataset\":{\"name\":\"mnist\"}}",
         "model: seven.onnx has 7 outputs (classes), dataset.name mnist has 10 classes"},
        {"{\"model\":{\"onnx\":\"cnn.onnx\"},\"dataset\":{\"name\":\"cifar10\"}}",
         "model: cnn.onnx takes 1x28x28 images, dataset.name cifar10 has 3x32x32"},
        {"{\"model\":{}}", "model: an empty object (give {\"onnx\": PATH})"},
        {"{\"model\":{\"onnx\":\"\"}}", "model.onnx: must not be empty"},
        {"{\"model\":{\"onnx\":\"a\\nb.onnx\"}}", "model.onnx: must not contain control characters"},
        {"{\"model\":{\"onnx\":7}}", "model.onnx: must be a string"},
        {"{\"model\":{\"onnx\":\"cnn.onnx\",\"name\":\"x\"}}", "model.name: unknown field"},
        {"{\"model\":[\"cnn.onnx\"]}", "model: must be a string"},
    };
    for (size_t i = 0; i < sizeof REFUSED / sizeof REFUSED[0]; i++) {
        if (spec_parse(REFUSED[i].spec, &s, err, sizeof err) == 0) fail_msg("accepted %s", REFUSED[i].spec);
        if (strcmp(err, REFUSED[i].err) != 0) fail_msg("%s: got '%s', want '%s'", REFUSED[i].spec, err, REFUSED[i].err);
    }
    spec_set_onnx_loader(NULL);
    catalog_model_remove("cnn.onnx");
    catalog_model_remove("cnn2.onnx");
    catalog_model_remove("seven.onnx");
}

/* The catalog name of a file: its base name, made a catalog name, never a built-in's. */
static void test_onnx_name(void **state)
{
    (void)state;
    static const char *const CASES[][2] = {
        {"/data/nets/cnn.onnx", "cnn.onnx"}, {"Net v2.onnx", "Net_v2.onnx"},
        {"lenet5", "lenet5.onnx"},           {"dir/", "model.onnx"},
        {"a/b.c/mlp", "mlp.onnx"},           {"x/\xc3\xa9t\xc3\xa9.onnx", "__t__.onnx"},
    };
    char out[SPEC_NAME_MAX];
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        spec_onnx_name(CASES[i][0], out, sizeof out);
        assert_string_equal(out, CASES[i][1]);
        assert_true(catalog_name_valid(out));
    }
    char longname[200];
    memset(longname, 'a', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    spec_onnx_name(longname, out, sizeof out);
    assert_int_equal(strlen(out), SPEC_NAME_MAX - 1);
    assert_non_null(strstr(out, ".onnx"));
    assert_true(catalog_name_valid(out));
}

/* A user's image folder or .npz in the catalog (what coordinator/userdata.c adds for the
 * data roots): no file list but its absolute path, a shape that may be unknown (0x0x0),
 * any number of classes. The spec gives it by format and path (a name alone is refused
 * saying how), the model's classes are the submission's check (coordinator/api.c), and
 * the memory estimate does not count its mapped cache. */
static void test_catalog_user_dataset(void **state)
{
    (void)state;
    char err[512];
    catalog_dataset_t d, got;
    memset(&d, 0, sizeof d);
    snprintf(d.name, sizeof d.name, "pets");
    d.source = CATALOG_USER;
    d.format = CATALOG_FORMAT_IMAGEFOLDER;
    d.classes = 37, d.train_n = 3680, d.test_n = 3669, d.augment = 1;
    snprintf(d.fixed_dir, sizeof d.fixed_dir, "data/pets");
    assert_int_equal(catalog_dataset_add(&d, err, sizeof err), -1);
    assert_string_equal(err, "data set pets: fixed_dir must be the absolute path of its folder");
    snprintf(d.fixed_dir, sizeof d.fixed_dir, "/data/pets");
    d.ntrain = 1;
    assert_int_equal(catalog_dataset_add(&d, err, sizeof err), -1);
    assert_string_equal(err, "data set pets: an imagefolder data set has no file list (train 1, test 0)");
    d.ntrain = 0, d.C = 3;
    assert_int_equal(catalog_dataset_add(&d, err, sizeof err), -1);
    assert_non_null(strstr(err, "data set pets: image shape 3x0x0 is not one pacer reads"));
    d.C = 0;
    if (catalog_dataset_add(&d, err, sizeof err) != 0) fail_msg("%s", err);
    assert_int_equal(catalog_dataset_get("pets", &got), 0);
    assert_string_equal(catalog_format_name(got.format), "imagefolder");
    assert_int_equal(catalog_dataset_present(&got, "/nonexistent/pets"), 0);
    assert_int_equal(catalog_dataset_present(&got, "/"), 1);

    job_spec_t s;
    /* by its name alone: read from where the catalog found it, in its format */
    if (spec_parse("{\"model\":\"resnet20\",\"dataset\":{\"name\":\"pets\"}}", &s, err, sizeof err) != 0)
        fail_msg("%s", err);
    assert_string_equal(s.dataset.format, "imagefolder");
    assert_string_equal(s.dataset.path, "/data/pets");
    assert_true(spec_dataset_is_user(&s));
    char *norm = spec_to_json(&s);
    assert_non_null(strstr(norm, "\"path\":\"/data/pets\""));
    free(norm);
    assert_int_equal(spec_parse("{\"model\":\"resnet20\",\"dataset\":{\"name\":\"pets\",\"format\":\"npz\"}}", &s, err,
                                sizeof err),
                     -1);
    assert_string_equal(err, "dataset.format: npz is not the format of dataset.name pets (imagefolder)");
    assert_int_equal(spec_parse("{\"model\":\"resnet20\",\"dataset\":{\"name\":\"pets\",\"path\":\"/data/cats\"}}", &s,
                                err, sizeof err),
                     -1);
    assert_string_equal(err, "dataset.path: /data/cats is not where dataset.name pets is (/data/pets): give one or the "
                             "other");
    /* an unknown name: the catalog's names (a user's set by format and path may carry any) */
    assert_int_equal(spec_parse("{\"model\":\"resnet20\",\"dataset\":{\"name\":\"dogs\"}}", &s, err, sizeof err), -1);
    assert_non_null(strstr(err, "dataset.name: must be one of fashion-mnist, mnist, cifar10"));
    assert_non_null(strstr(err, "pets"));
    if (spec_parse("{\"model\":\"resnet20\",\"dataset\":{\"name\":\"dogs\",\"format\":\"imagefolder\",\"path\":"
                   "\"/data/dogs\"}}",
                   &s, err, sizeof err) != 0)
        fail_msg("%s", err);
    /* by format and path: 37 classes against resnet20's 10 is the submission's probe */
    if (spec_parse("{\"model\":\"resnet20\",\"dataset\":{\"format\":\"imagefolder\",\"path\":\"/data/pets\","
                   "\"resize\":[32,32],\"augment\":true}}",
                   &s, err, sizeof err) != 0)
        fail_msg("%s", err);
    memest_t e;
    if (memest_rank(&s, 1, &e, err, sizeof err) != 0) fail_msg("%s", err);
    assert_true(e.model_bytes > 0 && e.batch_bytes > 0);
    assert_true(e.data_bytes == 0 && e.load_bytes == 0);
    assert_int_equal(catalog_dataset_remove("pets"), 0);
}

/* "model": {"onnx": NAME} naming an uploaded model (the coordinator's catalog has it, source
 * uploaded): the entry, its sha256 pinned into model.sha256 and written back; a hash
 * that is not the upload's, a hash without a name, a path with a hash and a name that
 * was never uploaded are refused, each naming what is wrong. */
static void test_model_uploaded(void **state)
{
    (void)state;
    job_spec_t s, back;
    char err[512];
    static const char SHA[] = "d0cedd8ac2e8e0a5e6834487867f41bddce4aea28efa6caaee67e5751efd1fad";
    catalog_model_t m;
    memset(&m, 0, sizeof m);
    snprintf(m.name, sizeof m.name, "up-net");
    m.source = CATALOG_UPLOADED;
    m.C = 1, m.H = 28, m.W = 28, m.classes = 10, m.layers = 5;
    m.params = 1000, m.acts_per_sample = 100, m.dacts_per_sample = 60, m.flops_per_sample = 1e5;
    /* an uploaded entry must carry its hash */
    assert_int_equal(catalog_model_add(&m, err, sizeof err), -1);
    snprintf(m.sha256, sizeof m.sha256, "%s", SHA);
    assert_int_equal(catalog_model_add(&m, err, sizeof err), 0);
    spec_set_onnx_loader(NULL);

    parse_ok("{\"model\":{\"onnx\":\"up-net\"},\"dataset\":{\"name\":\"mnist\"}}", &s);
    assert_string_equal(s.model, "up-net");
    assert_string_equal(s.model_sha256, SHA);
    char *text = spec_to_json(&s);
    assert_non_null(text);
    assert_non_null(strstr(text, "\"model\":{\"onnx\":\"up-net\",\"sha256\":\"d0cedd8ac2e8"));
    parse_ok(text, &back); /* what the coordinator stores reads back */
    assert_string_equal(back.model_sha256, SHA);
    free(text);

    assert_int_equal(spec_parse("{\"model\":{\"onnx\":\"up-net\",\"sha256\":"
                                "\"0000000000000000000000000000000000000000000000000000000000000000\"}}",
                                &s, err, sizeof err),
                     -1);
    assert_non_null(strstr(err, "model.sha256: uploaded model up-net is d0cedd8ac2e8... now, not 000000000000..."));
    assert_int_equal(spec_parse("{\"model\":{\"onnx\":\"up-net\",\"sha256\":\"D0CE\"}}", &s, err, sizeof err), -1);
    assert_non_null(strstr(err, "model.sha256: must be 64 lower-case hex digits"));
    char with_path[256];
    snprintf(with_path, sizeof with_path, "{\"model\":{\"sha256\":\"%s\"}}", SHA);
    assert_int_equal(spec_parse(with_path, &s, err, sizeof err), -1);
    assert_non_null(strstr(err, "model.sha256: only with model.onnx"));
    snprintf(with_path, sizeof with_path, "{\"model\":{\"onnx\":\"/nets/a.onnx\",\"sha256\":\"%s\"}}", SHA);
    assert_int_equal(spec_parse(with_path, &s, err, sizeof err), -1);
    assert_non_null(strstr(err, "model.onnx: with model.sha256, the name of an uploaded model"));
    snprintf(with_path, sizeof with_path, "{\"model\":{\"onnx\":\"lenet5\",\"sha256\":\"%s\"}}", SHA);
    assert_int_equal(spec_parse(with_path, &s, err, sizeof err), -1);
    assert_non_null(strstr(err, "model.onnx: lenet5 is a builtin model, not an uploaded one"));
    assert_int_equal(spec_parse("{\"model\":{\"onnx\":\"never\"}}", &s, err, sizeof err), -1);
    assert_non_null(strstr(err, "model.onnx: never is not an uploaded model"));
    assert_int_equal(catalog_model_remove("up-net"), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_minimal_spec_gets_defaults),
        cmocka_unit_test(test_full_spec),
        cmocka_unit_test(test_invalid_specs),
        cmocka_unit_test(test_unknown_field_suggestions),
        cmocka_unit_test(test_dataset_fields),
        cmocka_unit_test(test_every_number_is_bounded),
        cmocka_unit_test(test_spec_hash),
        cmocka_unit_test(test_array_capacity),
        cmocka_unit_test(test_truncated_specs),
        cmocka_unit_test(test_error_buffer_edges),
        cmocka_unit_test(test_lambda0_default_per_algorithm),
        cmocka_unit_test(test_params_both_spellings),
        cmocka_unit_test(test_dbs_sgd_forces_dynamic_batch),
        cmocka_unit_test(test_goodput_fields),
        cmocka_unit_test(test_precision),
        cmocka_unit_test(test_is_async),
        cmocka_unit_test(test_spec_warnings),
        cmocka_unit_test(test_empty_slowdown_is_absent),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_to_json_is_normalised),
        cmocka_unit_test(test_examples_parse),
        cmocka_unit_test(test_load_file_errors),
        cmocka_unit_test(test_print_fields),
        cmocka_unit_test(test_doc_covers_every_field),
        cmocka_unit_test(test_doc_examples_parse),
        cmocka_unit_test(test_range_errors_every_numeric_field),
        cmocka_unit_test(test_catalog_added_model),
        cmocka_unit_test(test_index_gradients_figure),
        cmocka_unit_test(test_catalog_add_refusals),
        cmocka_unit_test(test_max_workers),
        cmocka_unit_test(test_min_workers),
        cmocka_unit_test(test_sync_batchnorm),
        cmocka_unit_test(test_model_onnx),
        cmocka_unit_test(test_gpt_spec),
        cmocka_unit_test(test_lora_spec),
        cmocka_unit_test(test_tokenizer_spec),
        cmocka_unit_test(test_memest_tokenized_text),
        cmocka_unit_test(test_model_uploaded),
        cmocka_unit_test(test_onnx_name),
        cmocka_unit_test(test_catalog_user_dataset),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
