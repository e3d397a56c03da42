/* tests/unit/test_experiment.c - an experiment's step (coordinator/experiment.c,
 * experiment_step) against a real redis-server started in a fresh mkdtemp() directory,
 * with the trial's job written by hand: its state in its hash, its epoch records in its
 * coarse metrics stream and its summary.json in the state dir, as a worker and the daemon
 * would leave them, so that each case is one deterministic order of events (no daemon,
 * no worker, no timing). What a trial's result is built from when its job has ended: all
 * of its epoch records, however many ticks reading them takes, and where the records
 * fell short of what the job trained (a worker that ended while Redis was down, as an
 * embedded Redis is while its coordinator restarts), the job's summary, said in the
 * trial's reason; a summary that cannot confirm the records is named, never used.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "test_util.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <hiredis/hiredis.h>
#include <jansson.h>

#include "coordinator.h"
#include "embedded.h"
#include "experiment.h"
#include "jobstore.h"
#include "redis_keys.h"

#define ERRLEN 1024
#define STEP_RECORDS 2100 /* more than one tick reads of a stream (8 pages of 256) */

typedef struct {
    char dir[64], url[160], state_dir[128];
    embedded_t redis;
    redisContext *rc;
    coordinator_t *c;
    char exp[EXPERIMENT_ID_MAX], job[COORD_ID_MAX];
} fixture_t;

static int setup(void **state)
{
    signal(SIGPIPE, SIG_IGN);
    fixture_t *fx = calloc(1, sizeof *fx);
    char err[ERRLEN], rdir[128];
    if (!fx) return -1;
    strcpy(fx->dir, "/tmp/pacer-test-exp-XXXXXX");
    if (!mkdtemp(fx->dir)) goto fail;
    snprintf(rdir, sizeof rdir, "%s/redis", fx->dir);
    if (embedded_start(&fx->redis, rdir, "redis-server", 10.0, err, sizeof err) != 0) {
        fprintf(stderr, "redis: %s\n", err);
        goto fail;
    }
    snprintf(fx->url, sizeof fx->url, "unix://%s", fx->redis.sock);
    snprintf(fx->state_dir, sizeof fx->state_dir, "%s/state", fx->dir);
    struct timeval tv = {2, 0};
    fx->rc = redisConnectUnixWithTimeout(fx->redis.sock, tv);
    if (!fx->rc || fx->rc->err) goto fail;
    if (coordinator_open(fx->url, fx->state_dir, &fx->c, err, sizeof err) != COORD_OK) goto fail;
    *state = fx;
    return 0;
fail:
    free(fx);
    return -1;
}

static int teardown(void **state)
{
    fixture_t *fx = *state;
    coordinator_stop(fx->c);
    if (fx->rc) redisFree(fx->rc);
    embedded_stop(&fx->redis, 5.0);
    rm_tree(fx->dir);
    free(fx);
    return 0;
}

/* A random search of one trial of 3 epochs: its job (fx->job) is QUEUED once it returns. */
static void submit_experiment(fixture_t *fx)
{
    json_t *body = json_loads("{\"name\": \"ex\", \"spec\": {\"name\": \"unit\", \"model\": \"lenet5\", \"dataset\": "
                              "{\"name\": \"fashion-mnist\"}, \"epochs\": 3}, \"search\": {\"method\": \"random\", "
                              "\"trials\": 1, \"space\": {\"optimizer.lr\": {\"uniform\": [0.01, 0.1]}}}}",
                              0, NULL);
    assert_non_null(body);
    char err[ERRLEN] = "";
    json_t *out = NULL;
    int rc = coord_experiment_submit(fx->c, body, NULL, fx->exp, sizeof fx->exp, &out, err, sizeof err);
    json_decref(body);
    if (rc != COORD_OK) fail_msg("experiment submit: %s", err);
    const char *job = json_string_value(json_object_get(json_array_get(json_object_get(out, "trials"), 0), "job"));
    assert_non_null(job);
    snprintf(fx->job, sizeof fx->job, "%s", job);
    json_decref(out);
}

static void redis_ok(redisReply *r)
{
    assert_non_null(r);
    assert_int_not_equal(r->type, REDIS_REPLY_ERROR);
    freeReplyObject(r);
}

/* The job's state as the daemon records its end. */
static void job_ended(fixture_t *fx, const char *state)
{
    redis_ok(redisCommand(fx->rc, "HSET " KEY_JOB " state %s", fx->job, state));
}

/* Rank 0's record of the end of epoch `epoch` with its evaluation, as the worker XADDs it. */
static void epoch_record(fixture_t *fx, int epoch, double accuracy)
{
    char text[160];
    snprintf(text, sizeof text, "{\"kind\": \"epoch\", \"rank\": 0, \"epoch\": %d, \"test_accuracy\": %g}", epoch,
             accuracy);
    redis_ok(redisCommand(fx->rc, "XADD " KEY_JOB_METRICS_COARSE " * json %s", fx->job, text));
}

/* n step records of epoch `epoch`, in one pipeline. */
static void step_records(fixture_t *fx, int epoch, int n)
{
    for (int k = 0; k < n; k++) {
        char text[128];
        snprintf(text, sizeof text, "{\"kind\": \"step\", \"rank\": 0, \"epoch\": %d, \"step\": %d}", epoch, k + 1);
        redisAppendCommand(fx->rc, "XADD " KEY_JOB_METRICS_COARSE " * json %s", fx->job, text);
    }
    for (int k = 0; k < n; k++) {
        redisReply *r = NULL;
        assert_int_equal(redisGetReply(fx->rc, (void **)&r), REDIS_OK);
        redis_ok(r);
    }
}

/* The job's summary.json as rank 0 writes it last (NULL text: none). */
static void summary(fixture_t *fx, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/jobs", fx->state_dir);
    mkdir(fx->state_dir, 0755);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/jobs/%s", fx->state_dir, fx->job);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/jobs/%s/summary.json", fx->state_dir, fx->job);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

/* One step of the experiment; its document then (the caller frees it), and trial 0 in *t. */
static json_t *step(fixture_t *fx, json_t **t)
{
    assert_int_equal(experiment_step(fx->c, fx->rc, fx->exp, clock_wall_s()), JS_OK);
    json_t *x = NULL;
    char err[ERRLEN] = "";
    int rc = coord_experiment_get(fx->c, fx->exp, &x, err, sizeof err);
    if (rc != COORD_OK) fail_msg("experiment get: %s", err);
    *t = json_array_get(json_object_get(x, "trials"), 0);
    assert_non_null(*t);
    return x;
}

static const char *jstr(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

static long long jint(const json_t *o, const char *key) { return json_integer_value(json_object_get(o, key)); }

/* The job trained its 3 epochs and SUCCEEDED, but only 2 epoch records reached Redis (the
 * worker ended while Redis was down and gave up the third): the trial has 3 epochs and the
 * summary's last evaluation, and says where they came from. */
static void test_records_lost_at_the_end(void **state)
{
    fixture_t *fx = *state;
    submit_experiment(fx);
    epoch_record(fx, 1, 0.335);
    epoch_record(fx, 2, 0.44);
    summary(fx, "{\"epochs\": 3, \"epochs_trained\": 3, \"test_accuracy\": 0.58, \"exit_status\": 0}");
    job_ended(fx, "SUCCEEDED");
    json_t *t = NULL, *x = step(fx, &t);
    assert_string_equal(jstr(t, "state"), "SUCCEEDED");
    assert_int_equal(jint(t, "epochs_trained"), 3);
    assert_true(json_real_value(json_object_get(t, "metric")) == 0.58);
    assert_int_equal(json_array_size(json_object_get(t, "rung_metrics")), jint(t, "rung"));
    char want[160];
    snprintf(want, sizeof want, "its job %s's records of epochs 3 to 3 never reached Redis", fx->job);
    if (!strstr(jstr(t, "reason"), want)) fail_msg("reason: '%s', want '%s'", jstr(t, "reason"), want);
    assert_non_null(strstr(jstr(t, "reason"), "epochs_trained and metric are from its summary.json"));
    assert_string_equal(jstr(x, "state"), "SUCCEEDED");
    json_decref(x);
}

/* More records than one tick reads (8 pages of 256), the job already SUCCEEDED when the
 * first tick reads its state: the trial does not end until the last record is read, and
 * then has all 3 epochs from its records (nothing to say). */
static void test_records_past_one_tick(void **state)
{
    fixture_t *fx = *state;
    submit_experiment(fx);
    epoch_record(fx, 1, 0.335);
    epoch_record(fx, 2, 0.44);
    step_records(fx, 3, STEP_RECORDS);
    epoch_record(fx, 3, 0.58);
    summary(fx, "{\"epochs\": 3, \"epochs_trained\": 3, \"test_accuracy\": 0.58, \"exit_status\": 0}");
    job_ended(fx, "SUCCEEDED");
    json_t *t = NULL, *x = step(fx, &t);
    if (strcmp(jstr(t, "state"), "SUCCEEDED") == 0)
        fail_msg("trial 0 SUCCEEDED with %lld epochs before its last records were read", jint(t, "epochs_trained"));
    assert_string_equal(jstr(x, "state"), "RUNNING");
    json_decref(x);
    x = step(fx, &t);
    assert_string_equal(jstr(t, "state"), "SUCCEEDED");
    assert_int_equal(jint(t, "epochs_trained"), 3);
    assert_true(json_real_value(json_object_get(t, "metric")) == 0.58);
    assert_null(json_object_get(t, "reason"));
    assert_string_equal(jstr(x, "state"), "SUCCEEDED");
    json_decref(x);
}

/* A summary that cannot confirm records short of the spec's epochs (missing, not JSON,
 * without the count, a count out of range) is named in the trial's reason, never used. */
static void test_summary_unusable(void **state)
{
    static const struct {
        const char *text, *want;
    } CASES[] = {
        {NULL, "could not confirm: No such file or directory"},
        {"{\"epochs_trained\": ", "could not confirm: not JSON"},
        {"{\"epochs\": 3, \"test_accuracy\": 0.9}", "could not confirm: no epochs_trained"},
        {"{\"epochs_trained\": 1000000000, \"test_accuracy\": 0.9}",
         "could not confirm: epochs_trained is not an integer from 0 to 100000"},
        {"{\"epochs_trained\": \"3\", \"test_accuracy\": 0.9}",
         "could not confirm: epochs_trained is not an integer from 0 to 100000"},
    };
    fixture_t *fx = *state;
    for (size_t k = 0; k < sizeof CASES / sizeof CASES[0]; k++) {
        submit_experiment(fx);
        epoch_record(fx, 1, 0.335);
        epoch_record(fx, 2, 0.44);
        if (CASES[k].text) summary(fx, CASES[k].text);
        job_ended(fx, "SUCCEEDED");
        json_t *t = NULL, *x = step(fx, &t);
        assert_string_equal(jstr(t, "state"), "SUCCEEDED");
        assert_int_equal(jint(t, "epochs_trained"), 2);
        assert_true(json_real_value(json_object_get(t, "metric")) == 0.44);
        char want[160];
        snprintf(want, sizeof want, "its job %s succeeded after 2 of 3 epochs by its records", fx->job);
        const char *why = jstr(t, "reason");
        if (!strstr(why, want) || !strstr(why, CASES[k].want))
            fail_msg("case %zu: reason '%s', want '%s' and '%s'", k, why, want, CASES[k].want);
        json_decref(x);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_records_lost_at_the_end, setup, teardown),
        cmocka_unit_test_setup_teardown(test_records_past_one_tick, setup, teardown),
        cmocka_unit_test_setup_teardown(test_summary_unusable, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
