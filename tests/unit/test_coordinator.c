/* tests/unit/test_coordinator.c - the job service (coordinator/).
 *
 * Pure parts (the restart policy, state names, log helpers) are tested directly. The
 * API and the daemon run against a real redis-server each test starts on a unix socket
 * in a fresh mkdtemp() directory, and the daemon launches a fake pacer-worker (a shell
 * script written by the test, run through the real mpirun) whose behaviour per attempt
 * comes from a plan file: "exit N", or "wait" (until the test creates a release file).
 * Asynchronous outcomes are awaited by polling with a deadline.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "test_util.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>
#include <jansson.h>

#include "admission.h"
#include "catalog.h"
#include "coordinator.h"
#include "dynbatch.h"
#include "hclass.h"
#include "embedded.h"
#include "hostmem.h"
#include "jobstore.h"
#include "launch.h"
#include "run.h"
#include "netprobe.h"
#include "spec.h"
#include "stall.h"
#include "supervise.h"
#include "wcaps.h"

#define ERRLEN 1024
/* Deadline of every poll: it only bounds a failing test, so it is long enough for a
 * loaded 2-core machine; limits that are claims say so where they are asserted. */
#define AWAIT_S 60.0

static int write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fputs(text, f);
    return fclose(f);
}

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    char *buf = calloc(1, 1 << 16);
    if (buf) buf[fread(buf, 1, (1 << 16) - 1, f)] = 0;
    fclose(f);
    return buf;
}

/* ---- pure parts -------------------------------------------------------------------------- */

static void test_supervise_decide(void **state)
{
    (void)state;
    sv_out_t o;
    sv_in_t in = {.outcome = SV_EXITED,
                  .code = 0,
                  .restarts = 0,
                  .max_restarts = 3,
                  .backoff_base_s = 1,
                  .last_line = "pacer-worker: boom"};
    supervise_decide(&in, &o);
    assert_int_equal(o.state, JOB_SUCCEEDED);
    assert_string_equal(o.reason, "");

    in.code = 2; /* bad input: never retried */
    supervise_decide(&in, &o);
    assert_int_equal(o.state, JOB_FAILED);
    assert_int_equal(o.restarts, 0);
    assert_non_null(strstr(o.reason, "pacer-worker: boom"));

    in.code = 1; /* failures: 1 s, 2 s, 4 s, then FAILED */
    double want[] = {1, 2, 4};
    for (int k = 0; k < 3; k++) {
        in.restarts = k;
        supervise_decide(&in, &o);
        assert_int_equal(o.state, JOB_RESTARTING);
        assert_int_equal(o.restarts, k + 1);
        assert_true(fabs(o.delay_s - want[k]) < 1e-9);
        assert_non_null(strstr(o.reason, "mpirun exited 1"));
    }
    in.restarts = 3;
    supervise_decide(&in, &o);
    assert_int_equal(o.state, JOB_FAILED);
    assert_string_equal(o.reason, "mpirun exited 1 after 3 restarts: pacer-worker: boom");

    in.restarts = 0;
    in.outcome = SV_SIGNALLED;
    in.code = 9;
    supervise_decide(&in, &o);
    assert_int_equal(o.state, JOB_RESTARTING);
    assert_non_null(strstr(o.reason, "signal 9"));

    in.outcome = SV_LOST;
    supervise_decide(&in, &o);
    assert_int_equal(o.state, JOB_RESTARTING);
    assert_non_null(strstr(o.reason, "lost"));

    in.outcome = SV_STALE;
    in.code = 3;
    in.stale_s = 61;
    in.max_restarts = 0;
    in.last_line = NULL;
    supervise_decide(&in, &o);
    assert_int_equal(o.state, JOB_FAILED);
    assert_string_equal(o.reason, "no heartbeat from rank 3 for 61 s after 0 restarts: (no output)");
    /* The stale rank's host, when it reported one (issue 30). */
    in.host = "pw3";
    supervise_decide(&in, &o);
    assert_string_equal(o.reason, "no heartbeat from rank 3 (pw3) for 61 s after 0 restarts: (no output)");
    in.host = NULL;

    in.outcome = SV_STALLED;
    in.stall = "rank 0 waiting in allreduce for 12 s; rank 1 (pw2) silent for 15 s";
    supervise_decide(&in, &o);
    assert_int_equal(o.state, JOB_FAILED);
    assert_string_equal(o.reason, "stalled: rank 0 waiting in allreduce for 12 s; rank 1 (pw2) silent for 15 s after 0 "
                                  "restarts: (no output)");

    in.outcome = SV_CANCELLED;
    supervise_decide(&in, &o);
    assert_int_equal(o.state, JOB_CANCELLED);
}

/* Exit 3, training collapsed (issue 29): on_collapse "restart" is a restart like a
 * failure's (backoff, counted, FAILED once they are used) that asks for the halved rate;
 * "fail" (and a worker that says so without the spec asking) fails at once with the
 * detector's reason. */
static void test_supervise_collapse(void **state)
{
    (void)state;
    sv_out_t o;
    sv_in_t in = {.outcome = SV_EXITED,
                  .code = 3,
                  .restarts = 0,
                  .max_restarts = 2,
                  .backoff_base_s = 1,
                  .last_line = "collapse: on_collapse restart: exit status 3",
                  .on_collapse = "restart",
                  .collapse = "test accuracy 0.1000 is at chance (1/10 = 0.1000) after 125 steps"};
    supervise_decide(&in, &o);
    assert_int_equal(o.state, JOB_RESTARTING);
    assert_int_equal(o.restarts, 1);
    assert_true(o.collapse_restart);
    assert_true(fabs(o.delay_s - 1) < 1e-9);
    assert_non_null(strstr(o.reason, "training collapsed: test accuracy 0.1000 is at chance"));
    assert_non_null(strstr(o.reason, "restart 1 of 2"));
    assert_non_null(strstr(o.reason, "learning rate halved"));
    in.restarts = 2;
    supervise_decide(&in, &o);
    assert_int_equal(o.state, JOB_FAILED);
    assert_false(o.collapse_restart);
    assert_string_equal(o.reason, "training collapsed after 2 restarts: test accuracy 0.1000 is at chance (1/10 = "
                                  "0.1000) after 125 steps");
    in.restarts = 0;
    in.on_collapse = "fail";
    supervise_decide(&in, &o);
    assert_int_equal(o.state, JOB_FAILED);
    assert_int_equal(o.restarts, 0);
    assert_non_null(strstr(o.reason, "training collapsed (on_collapse fail): test accuracy"));
    /* No reason from the summary: the log's last line. */
    in.on_collapse = NULL;
    in.collapse = NULL;
    supervise_decide(&in, &o);
    assert_int_equal(o.state, JOB_FAILED);
    assert_non_null(strstr(o.reason, "collapse: on_collapse restart: exit status 3"));
}

/* rank 0's health as it comes from Redis or a summary file (issue 29): only a health
 * object passes, rewritten to its fields; anything else is not one. */
static void test_health_clean(void **state)
{
    (void)state;
    static const struct {
        const char *in, *out; /* out NULL: refused */
    } CASES[] = {
        {"{\"state\":\"ok\"}", "{\"state\":\"ok\"}"},
        {"{\"state\":\"ok\",\"since_step\":3,\"x\":[1]}", "{\"state\":\"ok\"}"},
        {"{\"state\":\"collapsed\",\"since_step\":53,\"at_step\":125,\"reason\":\"r\",\"extra\":1}",
         "{\"at_step\":125,\"reason\":\"r\",\"since_step\":53,\"state\":\"collapsed\"}"},
        {"{\"state\":\"collapsed\",\"since_step\":0,\"reason\":\"a\\nb\"}",
         "{\"reason\":\"a?b\",\"since_step\":0,\"state\":\"collapsed\"}"},
        {"{\"state\":\"collapsed\",\"since_step\":5,\"at_step\":-1,\"reason\":\"r\"}",
         "{\"reason\":\"r\",\"since_step\":5,\"state\":\"collapsed\"}"},
        {"{\"state\":\"collapsed\",\"since_step\":-1,\"reason\":\"r\"}", NULL},
        {"{\"state\":\"collapsed\",\"since_step\":\"5\",\"reason\":\"r\"}", NULL},
        {"{\"state\":\"collapsed\",\"since_step\":5}", NULL},
        {"{\"state\":\"dead\"}", NULL},
        {"{\"state\":1}", NULL},
        {"[\"ok\"]", NULL},
        {"\"ok\"", NULL},
    };
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        json_t *in = json_loads(CASES[i].in, JSON_DECODE_ANY, NULL);
        assert_non_null(in);
        json_t *h = run_health_clean(in);
        char *got = h ? json_dumps(h, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
        if ((got == NULL) != (CASES[i].out == NULL) || (got && strcmp(got, CASES[i].out) != 0))
            fail_msg("%s -> %s, want %s", CASES[i].in, got ? got : "NULL", CASES[i].out ? CASES[i].out : "NULL");
        free(got);
        json_decref(h);
        json_decref(in);
    }
    assert_null(run_health_clean(NULL));
    /* A long reason is cut to one line of 399 bytes. */
    char big[2000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = 0;
    json_t *in = json_pack("{s:s, s:i, s:s}", "state", "collapsed", "since_step", 1, "reason", big);
    json_t *h = run_health_clean(in);
    assert_int_equal(strlen(json_string_value(json_object_get(h, "reason"))), 399);
    json_decref(h);
    json_decref(in);
}

/* Restarts are not spent blindly (issue 30): the same silent host in SV_SILENT_LIMIT
 * stopped attempts in a row is left out; another host, or an attempt that ended some
 * other way, starts the count again. */
static void test_supervise_silent_host(void **state)
{
    (void)state;
    sv_silent_t s = {0};
    assert_int_equal(supervise_note_silent(&s, "pw3"), 0);
    assert_int_equal(supervise_note_silent(&s, "pw3"), 1);
    assert_int_equal(s.times, 2);
    /* Another host breaks the row. */
    assert_int_equal(supervise_note_silent(&s, "pw2"), 0);
    assert_int_equal(supervise_note_silent(&s, "pw3"), 0);
    /* So does an attempt that ended without a silent host (NULL or ""). */
    assert_int_equal(supervise_note_silent(&s, NULL), 0);
    assert_int_equal(supervise_note_silent(&s, "pw3"), 0);
    assert_int_equal(supervise_note_silent(&s, ""), 0);
    assert_int_equal(s.times, 0);
    assert_int_equal(supervise_note_silent(&s, "pw3"), 0);
    assert_int_equal(supervise_note_silent(&s, "pw3"), 1);
    assert_int_equal(supervise_note_silent(&s, "pw3"), 1); /* and stays left out */
}

/* Which ranks count as waiting and silent, when the job is stalled, and the sentence
 * (coordinator/stall.h). */
static void test_stall(void **state)
{
    (void)state;
    double now = 1000;
    stall_rank_t r[3] = {
        {.rank = 0, .host = "pw1", .heartbeat = now, .waiting = "allreduce", .peer = -1, .waiting_since = now - 12},
        {.rank = 1, .host = "pw2", .heartbeat = now, .waiting = "allreduce", .peer = -1, .waiting_since = now - 11},
        {.rank = 2, .host = "pw3", .heartbeat = now - 15, .peer = -1},
    };
    stall_verdict_t v;
    stall_assess(r, 3, now, &v);
    assert_int_equal(v.waiting, 2);
    assert_int_equal(v.silent, 1);
    assert_int_equal(v.stalled, 1);
    json_t *o = stall_json(r, 3, now, now - 1);
    assert_non_null(o);
    char text[320];
    stall_text(o, now, text, sizeof text);
    assert_string_equal(text, "ranks 0, 1 waiting in allreduce for 12 s; rank 2 (pw3) silent for 15 s");
    /* Counted to the reader's now. */
    stall_text(o, now + 3, text, sizeof text);
    assert_string_equal(text, "ranks 0, 1 waiting in allreduce for 15 s; rank 2 (pw3) silent for 18 s");
    json_decref(o);

    /* A rank that beats and does not wait trains (or computes, evaluates, checkpoints):
     * not stalled, though the others wait on it. */
    r[2].heartbeat = now - 1;
    stall_assess(r, 3, now, &v);
    assert_int_equal(v.silent, 0);
    assert_int_equal(v.stalled, 0);
    o = stall_json(r, 3, now, now);
    stall_text(o, now, text, sizeof text);
    assert_string_equal(text, "ranks 0, 1 waiting in allreduce for 12 s");
    json_decref(o);

    /* Every rank waiting (the data network is cut, the heartbeats still come): stalled,
     * with no silent rank to blame. Different operations and peers are grouped apart. */
    snprintf(r[2].waiting, sizeof r[2].waiting, "broadcast");
    r[2].peer = 0;
    r[2].waiting_since = now - 20;
    stall_assess(r, 3, now, &v);
    assert_int_equal(v.stalled, 1);
    o = stall_json(r, 3, now, now);
    stall_text(o, now, text, sizeof text);
    assert_string_equal(text,
                        "ranks 0, 1 waiting in allreduce for 12 s; rank 2 waiting in broadcast on rank 0 for 20 s");
    json_decref(o);

    /* No rank waits: nothing to show, not stalled however silent they are. */
    memset(r, 0, sizeof r);
    for (int i = 0; i < 3; i++) r[i].rank = i;
    stall_assess(r, 3, now, &v);
    assert_int_equal(v.stalled, 0);
    assert_null(stall_json(r, 3, now, now));
    /* Whatever the API reads back that is not such an object: no sentence, no crash. */
    const char *bad[] = {"null",
                         "[]",
                         "{}",
                         "{\"waiting\": 3}",
                         "{\"waiting\": [1]}",
                         "{\"waiting\": [{}]}",
                         "{\"waiting\": [{\"op\": 7}]}"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        json_t *j = json_loads(bad[i], JSON_DECODE_ANY, NULL);
        stall_text(j, now, text, sizeof text);
        assert_string_equal(text, "");
        json_decref(j);
    }
    stall_text(NULL, now, text, sizeof text);
    assert_string_equal(text, "");
}

/* The network probe's reading of its ranks' lines and its verdicts (netprobe.h). */
static void test_netprobe_verdict(void **state)
{
    (void)state;
    const char *names[3] = {"pw1", "pw2", "pw3"};
    int lined[3], ok[3], failing[3];
    unsigned char heard[9], sent[9];
    char why[3][200];
    /* pw3 cut off: pw1 and pw2 hear each other, nobody hears pw3. Lines in any order,
     * noise between them, a host named by its line over its rank's place. */
    const char *out =
        "pacer-worker: noise\n"
        "{\"netprobe\": {\"rank\": 2, \"ranks\": 3, \"host\": \"pw3\", \"heard\": [], \"sent\": []}}\n"
        "{\"netprobe\": {\"rank\": 1, \"ranks\": 3, \"host\": \"pw2\", \"heard\": [0], \"sent\": [0]}}\n"
        "{\"netprobe\": {\"rank\": 0, \"ranks\": 3, \"host\": \"pw1\", \"heard\": [1, 9, -1], "
        "\"sent\": [1]}}\n"
        "{\"netprobe\": {\"rank\": 7, \"ranks\": 3}}\n{\"netprobe\": {\"rank\": 0, \"ranks\": 4}}\n{\"netprobe\": [";
    assert_int_equal(netprobe_parse(out, strlen(out), 3, names, lined, heard, sent), 3);
    netprobe_verdict(3, names, lined, heard, sent, ok, failing, why);
    assert_int_equal(failing[0], 0);
    assert_int_equal(failing[1], 0);
    assert_int_equal(failing[2], 1);
    assert_int_equal(ok[2], 0);
    assert_string_equal(why[2], "the job's network: no MPI message between pw3 and pw1, pw2 within 5 s");

    /* All good. */
    const char *good = "{\"netprobe\": {\"rank\": 0, \"ranks\": 2, \"host\": \"pw1\", \"heard\": [1], \"sent\": [1]}}\n"
                       "{\"netprobe\": {\"rank\": 1, \"ranks\": 2, \"host\": \"pw3\", \"heard\": [0], \"sent\": [0]}}\n";
    const char *pair[2] = {"pw1", "pw3"};
    assert_int_equal(netprobe_parse(good, strlen(good), 2, pair, lined, heard, sent), 2);
    netprobe_verdict(2, pair, lined, heard, sent, ok, failing, why);
    assert_true(ok[0] && ok[1] && !failing[0] && !failing[1]);

    /* Two hosts that cannot talk: no telling which one is cut off, no verdict. */
    const char *two = "{\"netprobe\": {\"rank\": 0, \"ranks\": 2, \"heard\": [], \"sent\": []}}\n"
                      "{\"netprobe\": {\"rank\": 1, \"ranks\": 2, \"heard\": [], \"sent\": []}}\n";
    assert_int_equal(netprobe_parse(two, strlen(two), 2, pair, lined, heard, sent), 2);
    netprobe_verdict(2, pair, lined, heard, sent, ok, failing, why);
    assert_true(!ok[0] && !ok[1] && !failing[0] && !failing[1]);

    /* Nothing printed: no host lined, no verdict. */
    assert_int_equal(netprobe_parse("", 0, 3, names, lined, heard, sent), 0);
    netprobe_verdict(3, names, lined, heard, sent, ok, failing, why);
    for (int i = 0; i < 3; i++) assert_true(!lined[i] && !ok[i] && !failing[i]);
}

static void test_states_and_ids(void **state)
{
    (void)state;
    job_state_t s;
    for (int i = 0; i < JOB_NSTATES; i++) {
        assert_int_equal(job_state_parse(job_state_name((job_state_t)i), &s), 0);
        assert_int_equal(s, i);
    }
    assert_int_equal(job_state_parse("running", &s), 0);
    assert_int_equal(s, JOB_RUNNING);
    assert_int_equal(job_state_parse("DONE", &s), -1);
    assert_true(job_state_terminal(JOB_SUCCEEDED) && job_state_terminal(JOB_FAILED) &&
                job_state_terminal(JOB_CANCELLED));
    assert_false(job_state_terminal(JOB_QUEUED) || job_state_terminal(JOB_RUNNING) ||
                 job_state_terminal(JOB_RESTARTING));
    assert_true(job_id_valid("j-1") && job_id_valid("j-123456"));
    assert_false(job_id_valid("j-") || job_id_valid("j-1x") || job_id_valid("x-1") || job_id_valid("j-1:metrics") ||
                 job_id_valid("") || job_id_valid(NULL) || job_id_valid("j-../1"));
}

static void test_log_helpers(void **state)
{
    (void)state;
    char dir[] = "/tmp/pacer-test-log-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128], line[256];
    snprintf(path, sizeof path, "%s/log", dir);
    write_text(path, "=== pacer-coordinator x: job j-1 attempt 1 ===\n"
                     "training lenet5 ...\n"
                     "pacer-worker: spec.json: batch_size: must be >= 1\n"
                     "--------------------------------------------------------------------------\n"
                     "Primary job  terminated normally, but 1 process returned\n"
                     "--------------------------------------------------------------------------\n"
                     "--------------------------------------------------------------------------\n"
                     "mpirun detected that one or more processes exited with non-zero status\n"
                     "  Exit code:    2\n"
                     "--------------------------------------------------------------------------\n");
    assert_int_equal(log_last_line(path, line, sizeof line), 0);
    assert_string_equal(line, "pacer-worker: spec.json: batch_size: must be >= 1");
    write_text(path, "epoch 1/2 step 10/32\n"
                     "Segmentation fault\n"
                     "--------------------------------------------------------------------------\n"
                     "mpirun noticed that process rank 0 exited on signal 11\n"
                     "--------------------------------------------------------------------------\n\n");
    assert_int_equal(log_last_line(path, line, sizeof line), 0);
    assert_string_equal(line, "Segmentation fault");
    write_text(path, "");
    assert_int_equal(log_last_line(path, line, sizeof line), -1);

    /* Copy-truncate rotation keeps the log bounded. */
    char *big = malloc(10000);
    memset(big, 'x', 9999);
    big[9999] = 0;
    write_text(path, big);
    free(big);
    assert_int_equal(log_bound(path, 20000), 0);
    assert_int_equal(log_bound(path, 4096), 1);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_size, 0);
    char old[160];
    snprintf(old, sizeof old, "%s.1", path);
    assert_int_equal(stat(old, &st), 0);
    assert_int_equal(st.st_size, 9999);
    unlink(old);
    unlink(path);
    rmdir(dir);
}

static void test_exit_code_and_liveness(void **state)
{
    (void)state;
    char dir[] = "/tmp/pacer-test-ec-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char ec[128], err[ERRLEN];
    snprintf(ec, sizeof ec, "%s/exit_code", dir);
    const char *argv[] = {"/bin/sh", "-c", "exit 7", NULL};
    pid_t pid;
    assert_int_equal(launch_job("pacer-job-test", argv, "/dev/null", ec, &pid, err, sizeof err), 0);
    int code = -1;
    double end = mono() + AWAIT_S;
    while (exit_code_read(ec, &code) != 0 && mono() < end) nap();
    assert_int_equal(code, 7);
    /* It is our child: until reaped it is a zombie, which does not count as alive. */
    end = mono() + AWAIT_S;
    while (proc_alive(pid, 0) && mono() < end) nap();
    assert_false(proc_alive(pid, 0));
    waitpid(pid, NULL, 0);
    assert_false(session_alive(pid));
    unsigned long long start;
    assert_int_equal(proc_stat(getpid(), &start, NULL), 0);
    assert_true(proc_alive(getpid(), start));
    assert_false(proc_alive(getpid(), start + 1)); /* a reused pid is not the process */
    unlink(ec);
    rmdir(dir);
}

/* ---- the worker's capabilities (coordinator/wcaps.h) ----------------------------------------- */

static void test_worker_capabilities(void **state)
{
    (void)state;
    wcaps_t w;
    /* The real worker answers --capabilities with every option the coordinator asks about. */
    const char *build = getenv("BUILD");
    char path[512];
    snprintf(path, sizeof path, "%s/pacer-worker", build && *build ? build : "build");
    if (access(path, X_OK) == 0) {
        assert_int_equal(wcaps_probe(path, &w), 1);
        assert_true(w.redis && w.password_file && w.world && w.collapse && w.netprobe && w.data_cache && w.data_root &&
                    w.model_onnx && w.adopt);
    }
    /* JSON: only the options listed; anything else is not an answer. */
    assert_int_equal(wcaps_from_json("{\"options\": [\"--redis-password-file\", 7, \"--world\"]}", &w), 0);
    assert_true(w.password_file && w.world);
    assert_false(w.redis || w.collapse || w.netprobe || w.data_cache || w.data_root || w.model_onnx);
    assert_int_equal(wcaps_from_json("usage: pacer-worker --spec FILE [options]", &w), -1);
    assert_int_equal(wcaps_from_json("{\"options\": \"--redis\"}", &w), -1);
    assert_false(w.redis);
    assert_int_equal(wcaps_from_json(NULL, &w), -1);
    /* --help text: whole words only; --redis-password-file does not imply --redis. */
    wcaps_from_help("  --redis-password-file FILE\n  --world N\n  --data-cache=DIR\n  --netprobes\n", &w);
    assert_true(w.password_file && w.world && w.data_cache);
    assert_false(w.redis || w.netprobe);
    wcaps_from_help(NULL, &w);
    assert_false(w.world);

    /* An older worker (no --capabilities in its help) is never run with it. */
    char dir[] = "/tmp/pacer-test-wcaps-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char old[128], ran[160];
    snprintf(old, sizeof old, "%s/old-worker", dir);
    snprintf(ran, sizeof ran, "%s/ran", dir);
    write_text(old, "#!/bin/sh\n"
                    "[ \"$1\" = --help ] || { echo \"$1\" >> \"$(dirname \"$0\")/ran\"; exit 2; }\n"
                    "echo '  --redis URL  --job ID  --resume-before STEP'\n");
    assert_int_equal(chmod(old, 0755), 0);
    assert_int_equal(wcaps_probe(old, &w), 0);
    assert_true(w.redis && w.collapse);
    assert_false(w.password_file || w.world);
    assert_int_equal(access(ran, F_OK), -1);
    /* One whose help names it but whose answer is not the JSON falls back to the help. */
    write_text(old, "#!/bin/sh\n"
                    "[ \"$1\" = --help ] || { echo \"$1\" >> \"$(dirname \"$0\")/ran\"; exit 0; }\n"
                    "echo '  --world N  --capabilities'\n");
    assert_int_equal(wcaps_probe(old, &w), 0);
    assert_true(w.world);
    assert_false(w.redis);
    assert_int_equal(access(ran, F_OK), 0);
    unlink(ran);
    unlink(old);
    rmdir(dir);
}

/* ---- fixture: Redis, a state dir, a fake worker --------------------------------------------- */

typedef struct {
    char dir[64];
    char url[160];
    char state_dir[128];
    char worker[128];
    embedded_t redis;
    redisContext *rc;
    coordinator_t *client;
    coordinator_t *daemon;
    coord_config_t cfg;
} fixture_t;

/* The fake worker: "--help" mentions --redis only when DIR/with_redis exists; each run
 * appends its arguments to DIR/args and follows line <attempt> of DIR/plan (the last line
 * once the plan is exhausted). Like the real one it writes its --summary before an exit
 * 0, except for the plan line "nosummary" (an exit 0 of a run that did not finish). */
static const char FAKE_WORKER[] =
    "#!/bin/sh\n"
    "d=$(dirname \"$0\")\n"
    "if [ \"$1\" = --help ]; then\n"
    "  echo 'usage: fake-worker --spec FILE [--summary FILE] [--resume]'\n"
    "  [ -f \"$d/with_redis\" ] && echo '  --redis URL --job ID'\n"
    "  exit 0\n"
    "fi\n"
    "echo \"$@\" >> \"$d/args\"\n"
    "n=$(cat \"$d/attempt\" 2>/dev/null || echo 0); n=$((n+1)); echo $n > \"$d/attempt\"\n"
    "line=$(sed -n \"${n}p\" \"$d/plan\"); [ -n \"$line\" ] || line=$(tail -n 1 \"$d/plan\")\n"
    "echo \"fake worker attempt $n: $line\" >&2\n"
    "s=; p=; for a in \"$@\"; do [ \"$p\" = --summary ] && s=$a; p=$a; done\n"
    "done0() { [ -z \"$s\" ] || echo '{}' > \"$s\"; exit 0; }\n"
    "case \"$line\" in\n"
    "  exit\\ 0) done0 ;;\n"
    "  exit*) c=${line#exit }; echo \"pacer-worker: fake failure $c at attempt $n\" >&2; exit $c ;;\n"
    "  nosummary) exit 0 ;;\n"
    "  wait) while [ ! -f \"$d/release\" ]; do sleep 0.05; done; done0 ;;\n"
    "esac\n"
    "exit 1\n";

static const char SPEC[] = "{\"name\": \"unit\", \"model\": \"lenet5\", \"dataset\": {\"name\": \"fashion-mnist\"}}";

static int setup(void **state)
{
    signal(SIGPIPE, SIG_IGN);
    fixture_t *fx = calloc(1, sizeof *fx);
    char err[ERRLEN];
    if (!fx) return -1;
    strcpy(fx->dir, "/tmp/pacer-test-coord-XXXXXX");
    if (!mkdtemp(fx->dir)) goto fail;
    char rdir[128];
    snprintf(rdir, sizeof rdir, "%s/redis", fx->dir);
    if (embedded_start(&fx->redis, rdir, "redis-server", 10.0, err, sizeof err) != 0) {
        fprintf(stderr, "redis: %s\n", err);
        goto fail;
    }
    snprintf(fx->url, sizeof fx->url, "unix://%s", fx->redis.sock);
    snprintf(fx->state_dir, sizeof fx->state_dir, "%s/state", fx->dir);
    snprintf(fx->worker, sizeof fx->worker, "%s/fake-worker", fx->dir);
    if (write_text(fx->worker, FAKE_WORKER) != 0 || chmod(fx->worker, 0755) != 0) goto fail;
    struct timeval tv = {2, 0};
    fx->rc = redisConnectUnixWithTimeout(fx->redis.sock, tv);
    if (!fx->rc || fx->rc->err) goto fail;
    if (coordinator_open(fx->url, fx->state_dir, &fx->client, err, sizeof err) != COORD_OK) goto fail;
    coord_config_defaults(&fx->cfg);
    fx->cfg.redis_url = fx->url;
    fx->cfg.state_dir = fx->state_dir;
    fx->cfg.worker = fx->worker;
    fx->cfg.tick_s = 0.05;
    fx->cfg.restart_backoff_s = 0.05;
    fx->cfg.kill_grace_s = 2;
    fx->cfg.max_restarts = 2;
    *state = fx;
    return 0;
fail:
    free(fx);
    return -1;
}

static int teardown(void **state)
{
    fixture_t *fx = *state;
    char rel[200];
    snprintf(rel, sizeof rel, "%s/release", fx->dir);
    write_text(rel, ""); /* lets any fake job still waiting finish */
    if (fx->daemon) coordinator_stop(fx->daemon);
    coordinator_stop(fx->client);
    if (fx->rc) redisFree(fx->rc);
    embedded_stop(&fx->redis, 5.0);
    rm_tree(fx->dir);
    free(fx);
    return 0;
}

static void plan(fixture_t *fx, const char *text)
{
    char p[200];
    snprintf(p, sizeof p, "%s/plan", fx->dir);
    assert_int_equal(write_text(p, text), 0);
}

static void start_daemon(fixture_t *fx)
{
    char err[ERRLEN] = "";
    int rc = coordinator_start(&fx->cfg, &fx->daemon, err, sizeof err);
    if (rc != COORD_OK) fprintf(stderr, "coordinator_start: %s\n", err);
    assert_int_equal(rc, COORD_OK);
}

static void stop_daemon(fixture_t *fx)
{
    coordinator_stop(fx->daemon);
    fx->daemon = NULL;
}

static char *submit(fixture_t *fx, const char *spec)
{
    static char id[COORD_ID_MAX];
    char err[ERRLEN] = "";
    int rc = coord_submit(fx->client, spec, id, sizeof id, err, sizeof err);
    if (rc != COORD_OK) fprintf(stderr, "submit: %s\n", err);
    assert_int_equal(rc, COORD_OK);
    return id;
}

/* The job's state, or "" when it cannot be read. */
static void job_state(fixture_t *fx, const char *id, char *out, size_t len)
{
    json_t *j = NULL;
    out[0] = 0;
    if (coord_get(fx->client, id, &j) != COORD_OK) return;
    const char *s = json_string_value(json_object_get(j, "state"));
    snprintf(out, len, "%s", s ? s : "");
    json_decref(j);
}

static json_t *await_state(fixture_t *fx, const char *id, const char *want, double deadline_s)
{
    char st[32] = "";
    double end = mono() + deadline_s;
    for (;;) {
        job_state(fx, id, st, sizeof st);
        if (strcmp(st, want) == 0 || mono() > end) break;
        nap();
    }
    if (strcmp(st, want) != 0) fprintf(stderr, "job %s is %s, waited for %s\n", id, st, want);
    assert_string_equal(st, want);
    json_t *j = NULL;
    assert_int_equal(coord_get(fx->client, id, &j), COORD_OK);
    return j;
}

static long long jint(json_t *j, const char *key) { return (long long)json_integer_value(json_object_get(j, key)); }

static const char *jstr(json_t *j, const char *key)
{
    const char *s = json_string_value(json_object_get(j, key));
    return s ? s : "";
}

/* ---- the API without a daemon ---------------------------------------------------------------- */

/* The HTTP layer's submit: a parsed spec in, the job as coord_get shows it out, without
 * reading it back; the spec's document goes into the parse cache, so the first coord_get
 * returns that very object instead of decoding the stored text. */
static void test_api_submit_spec(void **state)
{
    fixture_t *fx = *state;
    char err[ERRLEN], id[COORD_ID_MAX];
    job_spec_t *s = malloc(sizeof *s);
    assert_non_null(s);
    assert_int_equal(spec_parse(SPEC, s, err, sizeof err), 0);
    json_t *job = NULL, *got = NULL;
    assert_int_equal(coord_submit_spec(fx->client, s, id, sizeof id, &job, err, sizeof err), COORD_OK);
    free(s);
    assert_non_null(job);
    assert_string_equal(jstr(job, "id"), id);
    assert_string_equal(jstr(job, "state"), "QUEUED");
    assert_string_equal(jstr(job, "model"), "lenet5");
    assert_int_equal(coord_get(fx->client, id, &got), COORD_OK);
    if (!json_equal(job, got)) {
        char *a = json_dumps(job, JSON_SORT_KEYS), *b = json_dumps(got, JSON_SORT_KEYS);
        fail_msg("submit answered\n  %s\nbut the job reads\n  %s", a, b);
    }
    assert_ptr_equal(json_object_get(job, "spec"), json_object_get(got, "spec"));
    json_decref(job);
    json_decref(got);
    /* The text path (the command line) stores the same job. */
    char id2[COORD_ID_MAX];
    assert_int_equal(coord_submit(fx->client, SPEC, id2, sizeof id2, err, sizeof err), COORD_OK);
    assert_int_equal(coord_get(fx->client, id2, &got), COORD_OK);
    assert_string_equal(jstr(got, "model"), "lenet5");
    json_decref(got);
}

static void test_api_submit_get_list_cancel(void **state)
{
    fixture_t *fx = *state;
    char err[ERRLEN], id[COORD_ID_MAX];

    /* Invalid specs are refused naming the field, and nothing is stored. */
    int rc = coord_submit(fx->client, "{\"model\": \"lenet5\", \"batch_sise\": 3}", id, sizeof id, err, sizeof err);
    assert_int_equal(rc, COORD_EINVAL);
    assert_non_null(strstr(err, "batch_sise"));
    rc = coord_submit(fx->client, "{\"model\": \"lenet5\", \"optimizer\": {\"lr\": -1}}", id, sizeof id, err,
                      sizeof err);
    assert_int_equal(rc, COORD_EINVAL);
    assert_non_null(strstr(err, "optimizer.lr"));
    assert_int_equal(coord_submit(fx->client, "not json", id, sizeof id, err, sizeof err), COORD_EINVAL);
    assert_int_equal(coord_submit(fx->client, "", id, sizeof id, err, sizeof err), COORD_EINVAL);

    char a[COORD_ID_MAX], b[COORD_ID_MAX];
    snprintf(a, sizeof a, "%s", submit(fx, SPEC));
    snprintf(b, sizeof b, "%s", submit(fx, SPEC));
    assert_string_equal(a, "j-1"); /* the failed submits took no id */
    assert_string_equal(b, "j-2");

    json_t *j = NULL;
    assert_int_equal(coord_get(fx->client, a, &j), COORD_OK);
    assert_string_equal(jstr(j, "state"), "QUEUED");
    assert_string_equal(jstr(j, "name"), "unit");
    assert_string_equal(jstr(j, "model"), "lenet5");
    assert_int_equal(jint(j, "workers"), 1);
    assert_int_equal(jint(j, "world"), 1);
    assert_true(json_is_object(json_object_get(j, "spec")));
    assert_true(json_number_value(json_object_get(j, "submitted")) > 0);
    json_decref(j);
    assert_int_equal(coord_get(fx->client, "j-99", &j), COORD_ENOTFOUND);
    assert_int_equal(coord_get(fx->client, "../etc", &j), COORD_ENOTFOUND);

    assert_int_equal(coord_list(fx->client, NULL, 0, 0, &j), COORD_OK);
    assert_int_equal(jint(j, "total"), 2);
    assert_string_equal(jstr(json_array_get(json_object_get(j, "jobs"), 0), "id"), "j-2"); /* newest first */
    json_decref(j);
    assert_int_equal(coord_list(fx->client, "queued", 1, 10, &j), COORD_OK);
    assert_int_equal(jint(j, "total"), 2);
    assert_int_equal(json_array_size(json_object_get(j, "jobs")), 1);
    json_decref(j);
    assert_int_equal(coord_list(fx->client, "DONE", 0, 0, &j), COORD_EINVAL);

    /* A queued job is cancelled at once and leaves the queue; twice is a state error. */
    assert_int_equal(coord_cancel(fx->client, a, err, sizeof err), COORD_OK);
    j = await_state(fx, a, "CANCELLED", 0); /* one read: the cancel is one Redis script */
    assert_true(json_number_value(json_object_get(j, "finished")) > 0);
    json_decref(j);
    assert_int_equal(coord_cancel(fx->client, a, err, sizeof err), COORD_ESTATE);
    assert_non_null(strstr(err, "CANCELLED"));
    assert_int_equal(coord_cancel(fx->client, "j-77", err, sizeof err), COORD_ENOTFOUND);
    redisReply *r = redisCommand(fx->rc, "LRANGE pacer:queue 0 -1");
    assert_int_equal(r->elements, 1);
    assert_string_equal(r->element[0]->str, "j-2");
    freeReplyObject(r);

    assert_int_equal(coord_list(fx->client, "CANCELLED", 0, 0, &j), COORD_OK);
    assert_int_equal(jint(j, "total"), 1);
    json_decref(j);

    /* Nothing ran yet: no metrics, an empty log, ranks without data, no checkpoint. */
    assert_int_equal(coord_metrics(fx->client, b, NULL, 0, &j), COORD_OK);
    assert_int_equal(json_array_size(json_object_get(j, "items")), 0);
    json_decref(j);
    assert_int_equal(coord_metrics(fx->client, b, "bogus", 0, &j), COORD_EINVAL);
    assert_int_equal(coord_metrics(fx->client, "j-55", NULL, 0, &j), COORD_ENOTFOUND);
    assert_int_equal(coord_logs(fx->client, b, 0, 0, 0, &j), COORD_OK);
    assert_string_equal(jstr(j, "text"), "");
    json_decref(j);
    assert_int_equal(coord_nodes(fx->client, b, &j), COORD_OK);
    assert_int_equal(json_array_size(json_object_get(j, "ranks")), 1);
    assert_true(json_is_null(json_object_get(j, "assignment")));
    json_decref(j);
    char path[512];
    assert_int_equal(coord_checkpoint_path(fx->client, b, path, sizeof path), COORD_ENOTFOUND);
    assert_int_equal(coord_cluster(fx->client, &j), COORD_OK);
    assert_int_equal(jint(j, "queued"), 1);
    assert_int_equal(jint(j, "jobs"), 2);
    assert_true(json_is_null(json_object_get(j, "coordinator")));
    json_decref(j);
}

static void test_api_metrics_nodes_events(void **state)
{
    fixture_t *fx = *state;
    coord_cursor_t all, one;
    json_t *j = NULL;
    char id[COORD_ID_MAX];
    assert_int_equal(coord_events_open(fx->client, "j-1", &one), COORD_ENOTFOUND);
    assert_int_equal(coord_events_open(fx->client, NULL, &all), COORD_OK);
    snprintf(id, sizeof id, "%s", submit(fx, SPEC));
    assert_int_equal(coord_events_open(fx->client, id, &one), COORD_OK);

    /* A worker's records and hashes, as the Redis sink writes them. */
    redisReply *r;
    for (int i = 1; i <= 3; i++) {
        r = redisCommand(fx->rc, "XADD pacer:job:%s:metrics * json {\"kind\":\"step\",\"step\":%d}", id, i);
        freeReplyObject(r);
    }
    r = redisCommand(fx->rc, "HSET pacer:job:%s:node:0 host h device cpu samples_per_s 1234.5 step 3 heartbeat %.3f",
                     id, (double)time(NULL));
    freeReplyObject(r);
    r = redisCommand(
        fx->rc, "HSET pacer:job:%s:staleness:0 count 4 sum 6 sumsq 14 max 3 p50 1 p95 3 overflow 0 h0 1 h1 1 h2 1 h3 1",
        id);
    freeReplyObject(r);

    assert_int_equal(coord_metrics(fx->client, id, NULL, 2, &j), COORD_OK);
    json_t *items = json_object_get(j, "items");
    assert_int_equal(json_array_size(items), 2);
    assert_int_equal(jint(json_array_get(items, 1), "step"), 2);
    char next[64];
    snprintf(next, sizeof next, "%s", jstr(j, "next"));
    json_decref(j);
    assert_int_equal(coord_metrics(fx->client, id, next, 0, &j), COORD_OK);
    assert_int_equal(json_array_size(json_object_get(j, "items")), 1);
    assert_int_equal(jint(json_array_get(json_object_get(j, "items"), 0), "step"), 3);
    json_decref(j);

    assert_int_equal(coord_nodes(fx->client, id, &j), COORD_OK);
    json_t *rank = json_array_get(json_object_get(j, "ranks"), 0);
    assert_string_equal(jstr(rank, "host"), "h");
    assert_true(json_real_value(json_object_get(rank, "samples_per_s")) == 1234.5);
    assert_true(json_number_value(json_object_get(rank, "heartbeat_age_s")) < AWAIT_S); /* fresh, not stale */
    json_t *st = json_object_get(rank, "staleness");
    assert_int_equal(jint(st, "count"), 4);
    assert_int_equal(jint(st, "max"), 3);
    assert_int_equal(jint(st, "p50"), 1); /* the worker's exact quantiles, passed through */
    assert_int_equal(jint(st, "p95"), 3);
    assert_int_equal(json_array_size(json_object_get(st, "hist")), 9);
    assert_int_equal(jint(json_object_get(j, "staleness"), "count"), 4);
    json_decref(j);

    /* The job's subscription sees its metrics; the global one its state events. */
    assert_int_equal(coord_events_wait(fx->client, &one, 1000, 0, &j), COORD_OK);
    assert_int_equal(json_array_size(j), 3);
    assert_string_equal(jstr(json_object_get(json_array_get(j, 0), "event"), "type"), "metrics");
    json_decref(j);
    assert_int_equal(coord_events_wait(fx->client, &all, 1000, 0, &j), COORD_OK);
    assert_int_equal(json_array_size(j), 1);
    json_t *ev = json_object_get(json_array_get(j, 0), "event");
    assert_string_equal(jstr(ev, "type"), "state");
    assert_string_equal(jstr(ev, "state"), "QUEUED");
    assert_string_equal(jstr(ev, "job"), id);
    json_decref(j);
    /* Nothing new: an empty array after the timeout, not an error. */
    double t0 = mono();
    assert_int_equal(coord_events_wait(fx->client, &all, 200, 0, &j), COORD_OK);
    assert_int_equal(json_array_size(j), 0);
    assert_true(mono() - t0 >= 0.15);
    json_decref(j);
    /* A cancel shows up as the next event. */
    char err[ERRLEN];
    assert_int_equal(coord_cancel(fx->client, id, err, sizeof err), COORD_OK);
    assert_int_equal(coord_events_wait(fx->client, &one, 1000, 0, &j), COORD_OK);
    assert_int_equal(json_array_size(j), 1);
    assert_string_equal(jstr(json_object_get(json_array_get(j, 0), "event"), "state"), "CANCELLED");
    json_decref(j);
}

static void test_api_redis_down(void **state)
{
    fixture_t *fx = *state;
    coordinator_t *c = NULL;
    char err[ERRLEN], url[200], id[COORD_ID_MAX];
    snprintf(url, sizeof url, "unix://%s/none.sock", fx->dir);
    assert_int_equal(coordinator_open(url, fx->state_dir, &c, err, sizeof err), COORD_OK);
    assert_int_equal(coord_submit(c, SPEC, id, sizeof id, err, sizeof err), COORD_EUNAVAIL);
    json_t *j;
    assert_int_equal(coord_get(c, "j-1", &j), COORD_EUNAVAIL);
    assert_int_equal(coord_list(c, NULL, 0, 0, &j), COORD_EUNAVAIL);
    coordinator_stop(c);
    assert_int_equal(coordinator_open("ftp://x", fx->state_dir, &c, err, sizeof err), COORD_EINVAL);
}

/* ---- planning and profiles -------------------------------------------------------------------- */

/* Retry (issue 15): only a finished job; the new job has the same spec and its parent,
 * the parent lists its retries (bounded); unknown ids are ENOTFOUND. */
static void test_api_retry(void **state)
{
    fixture_t *fx = *state;
    char err[ERRLEN], a[COORD_ID_MAX], b[COORD_ID_MAX], c[COORD_ID_MAX];
    snprintf(a, sizeof a, "%s", submit(fx, SPEC));
    assert_int_equal(coord_retry(fx->client, a, b, sizeof b, err, sizeof err), COORD_ESTATE);
    assert_non_null(strstr(err, "QUEUED"));
    assert_int_equal(coord_retry(fx->client, "j-99", b, sizeof b, err, sizeof err), COORD_ENOTFOUND);
    assert_non_null(strstr(err, "j-99"));
    assert_int_equal(coord_retry(fx->client, "../etc", b, sizeof b, err, sizeof err), COORD_ENOTFOUND);

    assert_int_equal(coord_cancel(fx->client, a, err, sizeof err), COORD_OK);
    assert_int_equal(coord_retry(fx->client, a, b, sizeof b, err, sizeof err), COORD_OK);
    assert_string_not_equal(a, b);
    json_t *ja = NULL, *jb = NULL;
    assert_int_equal(coord_get(fx->client, b, &jb), COORD_OK);
    assert_string_equal(jstr(jb, "state"), "QUEUED");
    assert_string_equal(jstr(jb, "parent"), a);
    assert_null(json_object_get(jb, "retries"));
    assert_int_equal(coord_get(fx->client, a, &ja), COORD_OK);
    assert_true(json_equal(json_object_get(ja, "spec"), json_object_get(jb, "spec")));
    assert_null(json_object_get(ja, "parent"));
    json_t *retries = json_object_get(ja, "retries");
    assert_int_equal(json_array_size(retries), 1);
    assert_string_equal(json_string_value(json_array_get(retries, 0)), b);
    json_decref(ja);
    json_decref(jb);
    /* The retry is queued like any job, and its submit event says whose retry it is. */
    redisReply *r = redisCommand(fx->rc, "LRANGE pacer:queue 0 -1");
    assert_int_equal(r->elements, 1);
    assert_string_equal(r->element[0]->str, b);
    freeReplyObject(r);
    r = redisCommand(fx->rc, "XREVRANGE pacer:events + - COUNT 1");
    assert_non_null(strstr(r->element[0]->element[1]->element[1]->str, "retry of"));
    freeReplyObject(r);

    /* A second retry of the same job is appended; the list keeps the newest 100. */
    assert_int_equal(coord_retry(fx->client, a, c, sizeof c, err, sizeof err), COORD_OK);
    assert_int_equal(coord_get(fx->client, a, &ja), COORD_OK);
    assert_int_equal(json_array_size(json_object_get(ja, "retries")), 2);
    assert_string_equal(json_string_value(json_array_get(json_object_get(ja, "retries"), 1)), c);
    json_decref(ja);
    char many[4096] = "";
    for (int i = 0; i < 100; i++)
        snprintf(many + strlen(many), sizeof many - strlen(many), "%sj-%d", i ? "," : "", 1000 + i);
    r = redisCommand(fx->rc, "HSET pacer:job:%s retries %s", a, many);
    freeReplyObject(r);
    assert_int_equal(coord_retry(fx->client, a, c, sizeof c, err, sizeof err), COORD_OK);
    assert_int_equal(coord_get(fx->client, a, &ja), COORD_OK);
    retries = json_object_get(ja, "retries");
    assert_int_equal(json_array_size(retries), 100);
    assert_string_equal(json_string_value(json_array_get(retries, 0)), "j-1001");
    assert_string_equal(json_string_value(json_array_get(retries, 99)), c);
    json_decref(ja);
}

static void test_dynbatch(void **state)
{
    fixture_t *fx = *state;
    job_spec_t s;
    char err[ERRLEN];
    assert_int_equal(spec_parse("{\"name\": \"d\", \"model\": \"lenet5\", \"dataset\": {\"name\": \"fashion-mnist\"},"
                                " \"workers\": 2, \"batch_size\": 64, \"algorithm\": {\"name\": \"ssgd\","
                                " \"dynamic_batch\": true}, \"emulate\": {\"slowdown\": [1, 2]}}",
                                &s, err, sizeof err),
                     0);
    redisReply *r;
    /* Speeds unknown: no plan. */
    assert_int_equal(dynbatch_replan(fx->rc, "j-5", &s, s.workers), 0);
    r = redisCommand(fx->rc, "HSET pacer:job:j-5:node:0 samples_per_s 1000 host hostA device cpu slowdown 1");
    freeReplyObject(r);
    r = redisCommand(fx->rc, "HSET pacer:job:j-5:node:1 samples_per_s 3000 host hostA device cpu slowdown 2");
    freeReplyObject(r);
    assert_int_equal(dynbatch_replan(fx->rc, "j-5", &s, s.workers), 1);
    r = redisCommand(fx->rc, "HMGET pacer:job:j-5:assignment version batches source");
    assert_string_equal(r->element[0]->str, "1");
    assert_string_equal(r->element[1]->str, "[32,96]");
    assert_string_equal(r->element[2]->str, "planner");
    freeReplyObject(r);
    /* Within the hysteresis: the plan stays. */
    r = redisCommand(fx->rc, "HSET pacer:job:j-5:node:0 samples_per_s 1050");
    freeReplyObject(r);
    assert_int_equal(dynbatch_replan(fx->rc, "j-5", &s, s.workers), 0);
    /* A big change: version 2. */
    r = redisCommand(fx->rc, "HSET pacer:job:j-5:node:0 samples_per_s 3000");
    freeReplyObject(r);
    assert_int_equal(dynbatch_replan(fx->rc, "j-5", &s, s.workers), 1);
    r = redisCommand(fx->rc, "HMGET pacer:job:j-5:assignment version batches");
    assert_string_equal(r->element[0]->str, "2");
    assert_string_equal(r->element[1]->str, "[64,64]");
    freeReplyObject(r);

    /* Profiles: the machine's speed with the emulated slowdown taken out, mean per host. */
    r = redisCommand(fx->rc, "HSET pacer:job:j-5:node:0 samples_per_s 1000");
    freeReplyObject(r);
    r = redisCommand(fx->rc, "HSET pacer:job:j-5:node:1 samples_per_s 500");
    freeReplyObject(r);
    assert_int_equal(dynbatch_fold_profiles(fx->rc, "j-5", &s, 2), 1);
    r = redisCommand(fx->rc, "HMGET pacer:profile:hostA:cpu:lenet5 samples_per_s jobs");
    assert_true(fabs(strtod(r->element[0]->str, NULL) - 1000) < 0.1); /* (1000 + 500 x 2) / 2 */
    assert_string_equal(r->element[1]->str, "1");
    freeReplyObject(r);
    r = redisCommand(fx->rc, "SISMEMBER pacer:profiles pacer:profile:hostA:cpu:lenet5");
    assert_int_equal(r->integer, 1);
    freeReplyObject(r);

    /* A new job on that host starts from the profile, slowdowns applied again. */
    job_spec_t t = s;
    snprintf(t.device, sizeof t.device, "cpu");
    const char *hosts[2] = {"hostA", "hostA"};
    assert_int_equal(dynbatch_initial(fx->rc, "j-6", &t, t.workers, hosts), 1);
    r = redisCommand(fx->rc, "HMGET pacer:job:j-6:assignment version batches source");
    assert_string_equal(r->element[0]->str, "1");
    assert_string_equal(r->element[1]->str, "[85,43]");
    assert_string_equal(r->element[2]->str, "profile");
    freeReplyObject(r);
    assert_int_equal(dynbatch_initial(fx->rc, "j-6", &t, t.workers, hosts), 0); /* a plan exists */
    const char *unknown[2] = {"hostA", "hostB"};
    assert_int_equal(dynbatch_initial(fx->rc, "j-7", &t, t.workers, unknown), 0); /* no profile for hostB */

    /* A precision bf16 job's CPU ranks fold into a profile of their own (device cpu-bf16):
     * the fp32 one stays, a bf16 job starts only from a bf16 one, and the host classes
     * rank hosts by the fp32 ones. */
    job_spec_t b = s;
    snprintf(b.precision, sizeof b.precision, "bf16");
    r = redisCommand(fx->rc, "HSET pacer:job:j-5:node:0 samples_per_s 4000");
    freeReplyObject(r);
    r = redisCommand(fx->rc, "HSET pacer:job:j-5:node:1 samples_per_s 2000");
    freeReplyObject(r);
    job_spec_t tb = t;
    snprintf(tb.precision, sizeof tb.precision, "bf16");
    assert_int_equal(dynbatch_initial(fx->rc, "j-8", &tb, tb.workers, hosts), 0); /* no bf16 profile yet */
    assert_int_equal(dynbatch_fold_profiles(fx->rc, "j-5", &b, 2), 1);
    r = redisCommand(fx->rc, "HMGET pacer:profile:hostA:cpu-bf16:lenet5 samples_per_s device");
    assert_true(fabs(strtod(r->element[0]->str, NULL) - 4000) < 0.1);
    assert_string_equal(r->element[1]->str, "cpu-bf16");
    freeReplyObject(r);
    r = redisCommand(fx->rc, "HGET pacer:profile:hostA:cpu:lenet5 samples_per_s");
    assert_true(fabs(strtod(r->str, NULL) - 1000) < 0.1);
    freeReplyObject(r);
    assert_int_equal(dynbatch_initial(fx->rc, "j-8", &tb, tb.workers, hosts), 1);
    hclass_cache_t hc = {0};
    assert_int_equal(hclass_refresh(fx->rc, &hc, 1.0), 0);
    int seen = 0;
    for (int i = 0; i < hc.n; i++)
        if (strcmp(hc.p[i].host, "hostA") == 0 && strcmp(hc.p[i].model, "lenet5") == 0) {
            assert_true(fabs(hc.p[i].samples_per_s - 1000) < 0.1);
            seen = 1;
        }
    assert_true(seen);
    hclass_free(&hc);
}

/* ---- the daemon ------------------------------------------------------------------------------------ */

static void test_daemon_restarts_then_succeeds(void **state)
{
    fixture_t *fx = *state;
    plan(fx, "exit 1\nexit 1\nexit 0\n");
    start_daemon(fx);
    char id[COORD_ID_MAX];
    snprintf(id, sizeof id, "%s", submit(fx, SPEC));
    json_t *j = await_state(fx, id, "SUCCEEDED", AWAIT_S);
    assert_int_equal(jint(j, "restarts"), 2);
    assert_int_equal(jint(j, "attempts"), 3);
    assert_int_equal(jint(j, "exit_code"), 0);
    char ckdir[256];
    snprintf(ckdir, sizeof ckdir, "%s/jobs/%s/checkpoints", fx->state_dir, id);
    assert_string_equal(jstr(j, "checkpoint_dir"), ckdir);
    json_decref(j);

    /* Every attempt resumes; the spec it got points its checkpoints into the state dir. */
    char p[256];
    snprintf(p, sizeof p, "%s/args", fx->dir);
    char *args = read_text(p);
    assert_non_null(args);
    int lines = 0;
    for (char *s = args; (s = strstr(s, "--resume")); s++) lines++;
    assert_int_equal(lines, 3);
    assert_null(strstr(args, "--redis")); /* this worker does not know --redis */
    free(args);
    snprintf(p, sizeof p, "%s/jobs/%s/spec.json", fx->state_dir, id);
    job_spec_t s;
    char err[ERRLEN];
    assert_int_equal(spec_load_file(p, &s, err, sizeof err), 0);
    assert_string_equal(s.checkpoint.dir, ckdir);
    assert_int_equal(s.checkpoint.every_steps, 50);
    /* The log holds every attempt. */
    assert_int_equal(coord_logs(fx->client, id, 0, 0, 0, &j), COORD_OK);
    assert_non_null(strstr(jstr(j, "text"), "fake worker attempt 3: exit 0"));
    json_decref(j);
    assert_int_equal(coord_logs(fx->client, id, 0, 0, 1, &j), COORD_OK); /* the last line only */
    assert_non_null(strstr(jstr(j, "text"), "fake worker attempt 3"));
    assert_null(strstr(jstr(j, "text"), "attempt 2"));
    json_decref(j);
    assert_int_equal(coord_cluster(fx->client, &j), COORD_OK);
    assert_true(json_is_true(json_object_get(j, "alive")));
    assert_int_equal(jint(json_object_get(j, "coordinator"), "slots"), sysconf(_SC_NPROCESSORS_ONLN));
    json_decref(j);
}

/* An exit 0 without the summary rank 0 writes last is not a finished run (Open MPI's
 * mpirun was seen to exit 0 after losing a node's daemon): it is retried like a failure,
 * and with no restart left the job FAILS saying so, never SUCCEEDED unfinished. */
static void test_daemon_exit0_without_summary(void **state)
{
    fixture_t *fx = *state;
    plan(fx, "nosummary\nexit 0\n");
    start_daemon(fx);
    char id[COORD_ID_MAX];
    snprintf(id, sizeof id, "%s", submit(fx, SPEC));
    json_t *j = await_state(fx, id, "SUCCEEDED", AWAIT_S);
    assert_int_equal(jint(j, "restarts"), 1);
    assert_int_equal(jint(j, "attempts"), 2);
    json_decref(j);
    stop_daemon(fx);

    plan(fx, "nosummary\n");
    fx->cfg.max_restarts = 0;
    start_daemon(fx);
    snprintf(id, sizeof id, "%s", submit(fx, SPEC));
    j = await_state(fx, id, "FAILED", AWAIT_S);
    assert_int_equal(jint(j, "restarts"), 0);
    assert_non_null(strstr(jstr(j, "reason"), "mpirun exited 0 but rank 0 wrote no summary"));
    json_decref(j);
}

static void test_daemon_bad_input_not_retried(void **state)
{
    fixture_t *fx = *state;
    plan(fx, "exit 2\n");
    start_daemon(fx);
    char id[COORD_ID_MAX];
    snprintf(id, sizeof id, "%s", submit(fx, SPEC));
    json_t *j = await_state(fx, id, "FAILED", AWAIT_S);
    assert_int_equal(jint(j, "restarts"), 0);
    assert_int_equal(jint(j, "exit_code"), 2);
    assert_non_null(strstr(jstr(j, "reason"), "pacer-worker: fake failure 2 at attempt 1"));
    json_decref(j);
}

/* A failed job retried: the retry runs and succeeds with a log of its own, and the
 * parent's log stays readable after its processes are gone. */
static void test_daemon_retry_failed(void **state)
{
    fixture_t *fx = *state;
    plan(fx, "exit 2\nexit 0\n");
    start_daemon(fx);
    char id[COORD_ID_MAX], retry[COORD_ID_MAX], err[ERRLEN];
    snprintf(id, sizeof id, "%s", submit(fx, SPEC));
    json_decref(await_state(fx, id, "FAILED", 30));
    assert_int_equal(coord_retry(fx->client, id, retry, sizeof retry, err, sizeof err), COORD_OK);
    json_t *j = await_state(fx, retry, "SUCCEEDED", 30);
    assert_string_equal(jstr(j, "parent"), id);
    json_decref(j);
    assert_int_equal(coord_logs(fx->client, id, 0, 0, 0, &j), COORD_OK);
    assert_non_null(strstr(jstr(j, "text"), "fake failure 2 at attempt 1"));
    json_decref(j);
    assert_int_equal(coord_logs(fx->client, retry, 0, 0, 0, &j), COORD_OK);
    assert_non_null(strstr(jstr(j, "text"), "fake worker attempt 2: exit 0"));
    assert_null(strstr(jstr(j, "text"), "fake worker attempt 1"));
    json_decref(j);
    assert_int_equal(coord_retry(fx->client, retry, id, sizeof id, err, sizeof err), COORD_OK); /* of a retry */
}

static void test_daemon_gives_up(void **state)
{
    fixture_t *fx = *state;
    plan(fx, "exit 1\n");
    start_daemon(fx);
    char id[COORD_ID_MAX];
    snprintf(id, sizeof id, "%s", submit(fx, SPEC));
    json_t *j = await_state(fx, id, "FAILED", AWAIT_S);
    assert_int_equal(jint(j, "restarts"), 2);
    assert_string_equal(jstr(j, "reason"),
                        "mpirun exited 1 after 2 restarts: pacer-worker: fake failure 1 at attempt 3");
    json_decref(j);
}

static void test_daemon_cancel(void **state)
{
    fixture_t *fx = *state;
    plan(fx, "wait\n");
    start_daemon(fx);
    char id[COORD_ID_MAX], err[ERRLEN];
    snprintf(id, sizeof id, "%s", submit(fx, SPEC));
    json_decref(await_state(fx, id, "RUNNING", AWAIT_S));
    double t0 = mono();
    assert_int_equal(coord_cancel(fx->client, id, err, sizeof err), COORD_OK);
    json_t *j = await_state(fx, id, "CANCELLED", AWAIT_S);
    /* What a user would notice: SIGTERM, SIGKILL at worst after the grace, a few ticks. */
    assert_true(mono() - t0 < fx->cfg.kill_grace_s + 10);
    assert_int_equal(jint(j, "restarts"), 0);
    json_decref(j);
    assert_int_equal(coord_cancel(fx->client, id, err, sizeof err), COORD_ESTATE);
}

/* The daemon stops and starts again while a job runs: the job is adopted (same process,
 * no restart) and its end is learnt from the exit_code file. */
static void test_daemon_readopts(void **state)
{
    fixture_t *fx = *state;
    plan(fx, "wait\n");
    start_daemon(fx);
    char id[COORD_ID_MAX];
    snprintf(id, sizeof id, "%s", submit(fx, SPEC));
    json_t *j = await_state(fx, id, "RUNNING", AWAIT_S);
    json_decref(j);
    double end = mono() + AWAIT_S; /* the pid is recorded right after the launch */
    long long pid = 0;
    while (pid <= 0 && mono() < end) {
        assert_int_equal(coord_get(fx->client, id, &j), COORD_OK);
        pid = jint(j, "pid");
        json_decref(j);
        if (pid <= 0) nap();
    }
    assert_true(pid > 0);
    stop_daemon(fx);
    assert_true(proc_alive((pid_t)pid, 0)); /* jobs outlive the daemon */
    /* What adoption reads besides the state is outside input too (anyone who can write to
     * Redis): malformed, it is ignored and the job is adopted as it runs. */
    redisReply *r = redisCommand(fx->rc, "HSET pacer:job:%s world_cap -5 placement %s hosts %s resizes %s", id,
                                 "{\"hosts_by_class\": {\"a\": [\"h1\", 7]}, \"reason\": \"x\"}", "[1, [2]]", "{");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    freeReplyObject(r);
    start_daemon(fx);
    char rel[200];
    snprintf(rel, sizeof rel, "%s/release", fx->dir);
    write_text(rel, "");
    j = await_state(fx, id, "SUCCEEDED", AWAIT_S);
    assert_int_equal(jint(j, "restarts"), 0);
    assert_int_equal(jint(j, "attempts"), 1);
    json_decref(j);
}

/* The job dies while no daemon runs (no exit status): the next daemon resumes it, and
 * that counts as a restart. */
static void test_daemon_resumes_lost_job(void **state)
{
    fixture_t *fx = *state;
    plan(fx, "wait\nexit 0\n");
    start_daemon(fx);
    char id[COORD_ID_MAX];
    snprintf(id, sizeof id, "%s", submit(fx, SPEC));
    json_decref(await_state(fx, id, "RUNNING", AWAIT_S));
    char p[256];
    snprintf(p, sizeof p, "%s/jobs/%s/pid", fx->state_dir, id);
    int pid = 0;
    double end = mono() + AWAIT_S;
    for (char *t = NULL; pid <= 0 && mono() < end; nap()) {
        t = read_text(p);
        if (t) pid = atoi(t);
        free(t);
    }
    assert_true(pid > 0);
    /* Kill it only once the fake worker runs (it has counted its attempt). */
    snprintf(p, sizeof p, "%s/attempt", fx->dir);
    end = mono() + AWAIT_S;
    while (access(p, F_OK) != 0 && mono() < end) nap();
    assert_int_equal(access(p, F_OK), 0);
    stop_daemon(fx);
    session_signal(pid, SIGKILL);
    end = mono() + AWAIT_S;
    while (session_alive(pid) && mono() < end) nap();
    start_daemon(fx);
    json_t *j = await_state(fx, id, "SUCCEEDED", AWAIT_S);
    assert_int_equal(jint(j, "restarts"), 1);
    assert_int_equal(jint(j, "attempts"), 2);
    json_decref(j);
}

/* --stop-jobs-on-exit: the daemon stops its jobs and leaves them RESTARTING (no restart
 * counted); the next daemon launches them again. */
static void test_daemon_stop_jobs_on_exit(void **state)
{
    fixture_t *fx = *state;
    plan(fx, "wait\nexit 0\n");
    fx->cfg.stop_jobs_on_exit = 1;
    start_daemon(fx);
    char id[COORD_ID_MAX], p[256];
    snprintf(id, sizeof id, "%s", submit(fx, SPEC));
    json_decref(await_state(fx, id, "RUNNING", AWAIT_S));
    snprintf(p, sizeof p, "%s/attempt", fx->dir);
    double end = mono() + AWAIT_S;
    while (access(p, F_OK) != 0 && mono() < end) nap();
    snprintf(p, sizeof p, "%s/jobs/%s/pid", fx->state_dir, id);
    char *t = read_text(p);
    assert_non_null(t);
    int pid = atoi(t);
    free(t);
    stop_daemon(fx);
    /* The daemon signalled the whole session and waited for the job's leader; a child of
     * the fake worker (its `sleep 0.05`) that got the same signal can still be on its way
     * out for a moment on a loaded machine, so allow it the kill grace to go. */
    end = mono() + fx->cfg.kill_grace_s + 1;
    while (session_alive(pid) && mono() < end) nap();
    assert_false(session_alive(pid));
    char st[32];
    job_state(fx, id, st, sizeof st);
    assert_string_equal(st, "RESTARTING");
    fx->cfg.stop_jobs_on_exit = 0;
    start_daemon(fx);
    json_t *j = await_state(fx, id, "SUCCEEDED", AWAIT_S);
    assert_int_equal(jint(j, "restarts"), 0);
    assert_int_equal(jint(j, "attempts"), 2);
    json_decref(j);
}

static void test_daemon_stale_heartbeat(void **state)
{
    fixture_t *fx = *state;
    char p[256];
    snprintf(p, sizeof p, "%s/with_redis", fx->dir);
    write_text(p, "");
    plan(fx, "wait\n");
    fx->cfg.heartbeat_timeout_s = 1;
    fx->cfg.max_restarts = 0;
    start_daemon(fx);
    char id[COORD_ID_MAX];
    snprintf(id, sizeof id, "%s", submit(fx, SPEC));
    json_t *j = await_state(fx, id, "FAILED", AWAIT_S);
    assert_non_null(strstr(jstr(j, "reason"), "no heartbeat from rank 0"));
    json_decref(j);
    /* A worker that knows --redis gets the URL and its job id. */
    snprintf(p, sizeof p, "%s/args", fx->dir);
    char *args = read_text(p);
    char want[300];
    snprintf(want, sizeof want, "--redis %s --job %s", fx->url, id);
    assert_non_null(args);
    assert_non_null(strstr(args, want));
    free(args);
}

/* param-globs (admission.c): freeze and lora.targets globs against the model's parameter
 * names, for a built-in (lenet5, the GPT) and an uploaded model (its names kept beside its
 * bytes, STATE/models/SHA.params.json, as its validator listed them): a glob that matches
 * is admitted, one that matches nothing refused (400) naming the field, the glob and the
 * model; an uploaded model without kept names is left to the worker (admitted). In the
 * table test's daemon (a data root with a fake MNIST). */
static void admission_param_globs(fixture_t *fx)
{
    char dir[300], file[400], err[ERRLEN];
    snprintf(dir, sizeof dir, "%s/models", fx->state_dir);
    mkdir(dir, 0755);
    catalog_model_t m;
    assert_int_equal(catalog_model_get("lenet5", &m), 0);
    m.source = CATALOG_UPLOADED;
    m.head_in = 0;
    memset(m.sha256, 'b', 64);
    m.sha256[64] = 0;
    snprintf(m.name, sizeof m.name, "up-net");
    assert_int_equal(catalog_model_add(&m, err, sizeof err), 0);
    snprintf(file, sizeof file, "%s/%s.params.json", dir, m.sha256);
    write_text(file, "{\"parameter_names\": [\"conv1.weight\", \"conv1.bias\", \"head.weight\"], "
                     "\"product_weights\": [2]}");
    memset(m.sha256, 'c', 64); /* uploaded before names were kept: none */
    snprintf(m.name, sizeof m.name, "old-net");
    assert_int_equal(catalog_model_add(&m, err, sizeof err), 0);
    const struct {
        const char *model, *globs; /* the spec's "model" value; its freeze, lora members */
        int code;
        const char *says;
    } cases[] = {
        {"\"lenet5\"", "\"freeze\": [\"*.bias\"]", COORD_OK, NULL},
        {"\"lenet5\"", "\"freeze\": [\"*.bias\", \"conv9.*\"]", COORD_EINVAL,
         "freeze: \"conv9.*\" matches no parameter of model lenet5 ("},
        {"\"lenet5\"", "\"lora\": {\"targets\": [\"*\"]}", COORD_OK, NULL},
        {"{\"onnx\": \"up-net\"}", "\"freeze\": [\"conv1.*\"]", COORD_OK, NULL},
        {"{\"onnx\": \"up-net\"}", "\"freeze\": [\"conv9.*\"]", COORD_EINVAL,
         "freeze: \"conv9.*\" matches no parameter of model up-net (3 parameters, e.g. conv1.weight, conv1.bias, "
         "head.weight)"},
        {"{\"onnx\": \"up-net\"}", "\"lora\": {\"targets\": [\"head.weight\"]}", COORD_OK, NULL},
        {"{\"onnx\": \"up-net\"}", "\"lora\": {\"targets\": [\"conv1.weight\"]}", COORD_EINVAL,
         "lora.targets: \"conv1.weight\" matches no matrix product's weight of model up-net"},
        /* with lora the worker freezes the adapted model: its adapters are parameters */
        {"{\"onnx\": \"up-net\"}", "\"lora\": {\"targets\": [\"head.weight\"]}, \"freeze\": [\"head.lora_A.*\"]",
         COORD_OK, NULL},
        {"{\"onnx\": \"old-net\"}", "\"freeze\": [\"conv9.*\"]", COORD_OK, NULL},
    };
    job_spec_t *s = malloc(sizeof *s);
    assert_non_null(s);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[600];
        snprintf(text, sizeof text, "{\"model\": %s, \"dataset\": {\"name\": \"mnist\"}, %s}", cases[i].model,
                 cases[i].globs);
        if (spec_parse(text, s, err, sizeof err) != 0) fail_msg("case %zu: %s", i, err);
        admission_t a = {.spec = s, .world = 1};
        err[0] = 0;
        const int code = admission_run(fx->daemon, &a, err, sizeof err);
        free(a.placed);
        if (code != cases[i].code || (cases[i].says && !strstr(err, cases[i].says)))
            fail_msg("case %zu %s: %d by %s (%s), want %d (%s)", i, text, code, a.refused_by ? a.refused_by : "none",
                     err, cases[i].code, cases[i].says ? cases[i].says : "");
        if (code) assert_string_equal(a.refused_by, "param-globs");
    }
    free(s);
    assert_int_equal(catalog_model_remove("up-net"), 0);
    assert_int_equal(catalog_model_remove("old-net"), 0);
}

/* Admission's table (admission.h): each check refuses the spec it exists for, by its
 * name, with its code and a message naming the field; a spec that passes them all is
 * placed (its built-in data set's absolute path filled in, the submitted spec untouched). One daemon: a hostfile of one slot
 * with 200 MiB, oversubscribed jobs refused, one data root holding a fake cifar-10. */
static void test_admission_table(void **state)
{
    fixture_t *fx = *state;
    char hf[200], root[200], dir[300], empty[300];
    snprintf(hf, sizeof hf, "%s/hosts", fx->dir);
    write_text(hf, "localhost slots=1\n");
    snprintf(root, sizeof root, "%s/data", fx->dir);
    snprintf(dir, sizeof dir, "%s/mnist", root);
    snprintf(empty, sizeof empty, "%s/empty", root);
    assert_int_equal(mkdir(root, 0755), 0);
    assert_int_equal(mkdir(dir, 0755), 0);
    assert_int_equal(mkdir(empty, 0755), 0);
    static const char *const FILES[] = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                                        "t10k-labels-idx1-ubyte"};
    for (size_t i = 0; i < sizeof FILES / sizeof FILES[0]; i++) {
        char f[400];
        snprintf(f, sizeof f, "%s/%s", dir, FILES[i]);
        assert_int_equal(write_text(f, ""), 0);
    }
    const char *roots[] = {root};
    fx->cfg.data_roots = roots;
    fx->cfg.ndata_roots = 1;
    fx->cfg.hostfile = hf;
    fx->cfg.host_memory_mb = 200;
    fx->cfg.refuse_oversubscribed = 1;
    start_daemon(fx);

    char userset[600], emptyset[600], tokset[600], placeset[600];
    snprintf(placeset, sizeof placeset, "{\"model\": \"lenet5\", \"dataset\": {\"name\": \"mnist\", \"path\": \"%s\"}}",
             empty);
    snprintf(userset, sizeof userset,
             "{\"model\": \"lenet5\", \"dataset\": {\"format\": \"imagefolder\", "
             "\"path\": \"/etc\"}}");
    snprintf(emptyset, sizeof emptyset,
             "{\"model\": \"lenet5\", \"dataset\": {\"format\": \"imagefolder\", "
             "\"path\": \"%s\"}}",
             empty);
    snprintf(tokset, sizeof tokset,
             "{\"model\": {\"gpt\": {\"layers\": 1}}, \"dataset\": {\"format\": \"text\", "
             "\"path\": \"%s\", \"tokenizer\": {\"kind\": \"bpe\", \"file\": \"/etc/passwd\"}}}",
             empty);
    const struct {
        const char *spec, *check;
        int code;
        const char *says;
    } cases[] = {
        {"{\"model\": \"lenet5\", \"dataset\": {\"name\": \"mnist\"}, \"simulate\": {\"enabled\": true, "
         "\"platform\": \"nosuch.xml\"}}",
         "simulate-platform", COORD_EINVAL, "nosuch.xml"},
        {userset, "data-root", COORD_EINVAL, "dataset.path"},
        {tokset, "tokenizer-root", COORD_EINVAL, "dataset.tokenizer.file"},
        {"{\"model\": \"lenet5\", \"dataset\": {\"name\": \"mnist\", \"cache_dir\": \"/tmp/x\"}}", "cache-dir",
         COORD_EINVAL, "dataset.cache_dir"},
        {emptyset, "user-dataset", COORD_EDATA, "dataset.path"},
        {"{\"model\": \"lenet5\", \"dataset\": {\"name\": \"mnist\"}, \"freeze\": [\"conv9.*\"]}", "param-globs",
         COORD_EINVAL, "freeze: \"conv9.*\" matches no parameter of model lenet5"},
        {"{\"model\": \"lenet5\", \"dataset\": {\"name\": \"mnist\"}, \"workers\": 5, \"algorithm\": {\"name\": \"ssgd\"}}",
         "slots", COORD_ENOFIT, "do not fit the cluster's 1 slot"},
        {"{\"model\": \"lenet5\", \"dataset\": {\"name\": \"mnist\"}, \"workers\": 2, \"algorithm\": {\"name\": \"ssgd\"}}",
         "oversubscribed", COORD_ENOFIT, "refuses oversubscribed"},
        {"{\"model\": \"lenet5\", \"dataset\": {\"name\": \"mnist\"}, \"batch_size\": 65536}", "memory", COORD_ENOFIT,
         "MiB"},
        {placeset, "dataset-place", COORD_EDATA, "does not hold the files of dataset.name mnist"},
        {"{\"model\": \"lenet5\", \"dataset\": {\"name\": \"mnist\"}, \"init\": {\"job\": \"nosuch\"}}", "init",
         COORD_EINVAL, "init.job"},
    };
    int seen[16] = {0};
    job_spec_t *s = malloc(sizeof *s);
    assert_non_null(s);
    char err[ERRLEN];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (spec_parse(cases[i].spec, s, err, sizeof err) != 0) fprintf(stderr, "case %zu: %s\n", i, err);
        assert_int_equal(spec_parse(cases[i].spec, s, err, sizeof err), 0);
        admission_t a = {.spec = s, .world = s->workers};
        err[0] = 0;
        const int code = admission_run(fx->daemon, &a, err, sizeof err);
        if (!a.refused_by || strcmp(a.refused_by, cases[i].check) != 0 || !strstr(err, cases[i].says))
            fprintf(stderr, "case %zu: refused by %s (want %s): %s\n", i, a.refused_by ? a.refused_by : "none",
                    cases[i].check, err);
        assert_non_null(a.refused_by);
        assert_string_equal(a.refused_by, cases[i].check);
        assert_int_equal(code, cases[i].code);
        assert_non_null(strstr(err, cases[i].says));
        for (size_t k = 0; k < admission_count(); k++)
            if (strcmp(admission_name(k), a.refused_by) == 0) seen[k] = 1;
        free(a.placed);
    }
    for (size_t k = 0; k < admission_count(); k++) {
        if (!seen[k]) fprintf(stderr, "no case for %s\n", admission_name(k));
        assert_true(seen[k]);
    }
    /* admitted: the built-in set placed in the daemon's copy */
    assert_int_equal(spec_parse("{\"model\": \"lenet5\", \"dataset\": {\"name\": \"mnist\"}}", s, err, sizeof err), 0);
    admission_t ok = {.spec = s, .world = 1};
    assert_int_equal(admission_run(fx->daemon, &ok, err, sizeof err), COORD_OK);
    assert_null(ok.refused_by);
    assert_non_null(ok.placed);
    assert_string_equal(s->dataset.path, "");
    assert_true(ok.placed->dataset.path[0] == '/'); /* where the catalog found it: the root's or $PACER_SHARED's */
    free(ok.placed);
    free(s);
    admission_param_globs(fx);
}

/* Slots come from the hostfile; the queue is FIFO: a job waits while the running ones
 * use every slot and starts when one frees. The hostfile is passed to mpirun. */
static void test_daemon_slots(void **state)
{
    fixture_t *fx = *state;
    char hf[200], err[ERRLEN];
    snprintf(hf, sizeof hf, "%s/hosts", fx->dir);
    write_text(hf, "# one slot\nlocalhost slots=1\n");
    fx->cfg.hostfile = hf;
    plan(fx, "wait\n");
    start_daemon(fx);
    char a[COORD_ID_MAX], b[COORD_ID_MAX];
    snprintf(a, sizeof a, "%s", submit(fx, SPEC));
    snprintf(b, sizeof b, "%s", submit(fx, SPEC));
    json_decref(await_state(fx, a, "RUNNING", AWAIT_S));
    /* b waits for the slot: after a few ticks it is still queued. */
    double end = mono() + 0.5;
    char st[32];
    while (mono() < end) {
        job_state(fx, b, st, sizeof st);
        assert_string_equal(st, "QUEUED");
        nap();
    }
    json_t *j = NULL;
    assert_int_equal(coord_cluster(fx->client, &j), COORD_OK);
    assert_int_equal(jint(json_object_get(j, "coordinator"), "slots"), 1);
    assert_int_equal(jint(j, "queued"), 1);
    json_decref(j);
    assert_int_equal(coord_cancel(fx->client, a, err, sizeof err), COORD_OK);
    json_decref(await_state(fx, a, "CANCELLED", AWAIT_S));
    json_decref(await_state(fx, b, "RUNNING", AWAIT_S));
    char p[200];
    snprintf(p, sizeof p, "%s/release", fx->dir);
    write_text(p, "");
    json_decref(await_state(fx, b, "SUCCEEDED", AWAIT_S));
    snprintf(p, sizeof p, "%s/jobs/%s/log", fx->state_dir, b);
    char *log = read_text(p);
    assert_non_null(log);
    assert_non_null(strstr(log, "--hostfile"));
    free(log);
}

/* A job of spec text by caller who: COORD_* with the refusal in err, the id in id. */
static int submit_by(fixture_t *fx, const char *text, const coord_caller_t *who, char *id, char *err)
{
    job_spec_t *s = malloc(sizeof *s);
    assert_non_null(s);
    assert_int_equal(spec_parse(text, s, err, ERRLEN), 0);
    err[0] = 0;
    int rc = coord_submit_spec_by(fx->daemon, s, who, id, COORD_ID_MAX, NULL, err, ERRLEN);
    free(s);
    return rc;
}

/* GET /api/v1/jobs/ID's queue object as the daemon publishes it (NULL: none). */
static json_t *queue_of(fixture_t *fx, const char *id)
{
    json_t *j = NULL;
    if (coord_get(fx->daemon, id, &j) != COORD_OK) return NULL;
    json_t *q = json_incref(json_object_get(j, "queue"));
    json_decref(j);
    return json_is_object(q) ? q : (json_decref(q), NULL);
}

/* The user limits through the daemon (common/users.h "limits", quotas.h) and the policy's
 * view of a long queue (run.c): on one slot held by an admin's job, a member's default
 * max_queued refuses her 4th job and max_priority her high one, each naming the limit;
 * raised to 1000, she queues 300, more than the policy decides on at a time. The admin's
 * high job behind them still has a queue object, first in line, and starts first when the
 * slot frees; her jobs beyond the view say why they wait. --max-queued refuses the next,
 * and a job her max_slots could never run is refused. Removed, her jobs are
 * "alice#removed-1"'s, and a new alice starts with nothing queued. */
static void test_daemon_user_limits(void **state)
{
    fixture_t *fx = *state;
    char hf[200], err[ERRLEN], id[COORD_ID_MAX], tok[USER_TOKEN_LEN + 1], first[COORD_ID_MAX], big[COORD_ID_MAX];
    snprintf(hf, sizeof hf, "%s/hosts", fx->dir);
    write_text(hf, "localhost slots=1\n");
    fx->cfg.hostfile = hf;
    fx->cfg.policy = 1; /* POLICY_FAIR: priorities count */
    fx->cfg.member.max_queued = 3;
    fx->cfg.max_queued = 301;
    plan(fx, "wait\n");
    start_daemon(fx);
    json_t *o = NULL;
    assert_int_equal(coord_user_add(fx->daemon, "alice", USER_MEMBER, 0, "admin", tok, sizeof tok, &o, err, ERRLEN),
                     COORD_OK);
    json_decref(o);
    coord_caller_t alice = {"alice", USER_MEMBER}, admin = {"admin", USER_ADMIN};
    static const char HIGH[] = "{\"name\": \"h\", \"model\": \"lenet5\", \"dataset\": {\"name\": \"fashion-mnist\"}, "
                               "\"priority\": \"high\"}";
    assert_int_equal(submit_by(fx, SPEC, &admin, id, err), COORD_OK);
    char holder[COORD_ID_MAX];
    snprintf(holder, sizeof holder, "%s", id);
    json_decref(await_state(fx, holder, "RUNNING", AWAIT_S));
    for (int i = 0; i < 3; i++) assert_int_equal(submit_by(fx, SPEC, &alice, i ? id : first, err), COORD_OK);
    assert_int_equal(submit_by(fx, SPEC, &alice, id, err), COORD_ELIMIT);
    assert_string_equal(err, "max_queued: alice may have at most 3 jobs queued and has 3: submit again once one has "
                             "started, or cancel one");
    assert_int_equal(submit_by(fx, HIGH, &alice, id, err), COORD_EDENIED);
    assert_string_equal(err, "priority: high is above what alice may use (max_priority normal); an admin may raise it "
                             "(PUT /api/v1/users/alice)");
    user_update_t u;
    const char *body = "{\"max_queued\": 1000, \"max_slots\": 1}";
    assert_int_equal(users_update_parse(body, strlen(body), &u, err, ERRLEN), 0);
    assert_int_equal(coord_user_update(fx->daemon, "alice", &u, &o, err, ERRLEN), COORD_OK);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(o, "limits"), "max_queued")), 1000);
    json_decref(o);
    static const char TWO[] = "{\"name\": \"t\", \"model\": \"lenet5\", \"dataset\": {\"name\": \"fashion-mnist\"}, "
                              "\"algorithm\": {\"name\": \"ssgd\"}, \"workers\": 2}";
    assert_int_equal(submit_by(fx, TWO, &alice, id, err), COORD_ELIMIT);
    assert_string_equal(err, "max_slots: alice's running jobs may hold at most 1 slot at once, and this job asks for "
                             "2 ranks: it could never start");
    for (int i = 3; i < 300; i++) {
        assert_int_equal(submit_by(fx, SPEC, &alice, id, err), COORD_OK);
        if (i == 299) snprintf(big, sizeof big, "%s", id);
    }
    char high[COORD_ID_MAX];
    assert_int_equal(submit_by(fx, HIGH, &admin, high, err), COORD_OK);
    assert_int_equal(submit_by(fx, SPEC, &admin, id, err), COORD_ELIMIT);
    assert_string_equal(err, "the queue holds 301 jobs, this coordinator's limit (--max-queued 301): submit again once "
                             "some have started");
    /* the high job, behind 300 of hers: first in line; her last, beyond the view, says why */
    json_t *q = NULL;
    double end = mono() + AWAIT_S;
    while (!(q = queue_of(fx, high)) && mono() < end) nap();
    assert_non_null(q);
    assert_int_equal(json_integer_value(json_object_get(q, "position")), 1);
    json_decref(q);
    q = queue_of(fx, big);
    assert_non_null(q);
    assert_string_equal(json_string_value(json_object_get(q, "reason")), "behind the scheduler's view");
    assert_true(json_integer_value(json_object_get(q, "position")) > 256);
    json_decref(q);
    assert_int_equal(coord_cancel(fx->client, holder, err, ERRLEN), COORD_OK);
    json_decref(await_state(fx, high, "RUNNING", AWAIT_S));
    char st[32];
    job_state(fx, first, st, sizeof st);
    assert_string_equal(st, "QUEUED");
    /* removed: what she owned is no one's she could become again */
    assert_int_equal(coord_user_remove(fx->daemon, "alice", err, ERRLEN), COORD_OK);
    char owner[USER_OWNER_MAX + 1];
    int exists = 0;
    assert_int_equal(coord_job_owner(fx->client, first, owner, sizeof owner, &exists), COORD_OK);
    assert_string_equal(owner, "alice#removed-1");
    assert_int_equal(coord_user_add(fx->daemon, "alice", USER_MEMBER, 0, "admin", tok, sizeof tok, &o, err, ERRLEN),
                     COORD_OK);
    json_decref(o);
    assert_int_equal(coord_cancel(fx->client, high, err, ERRLEN), COORD_OK);
    json_decref(await_state(fx, high, "CANCELLED", AWAIT_S));
    /* her 300 old jobs do not count to the new alice's max_queued (3 again) */
    assert_int_equal(submit_by(fx, SPEC, &alice, id, err), COORD_OK);
    assert_int_equal(coord_job_owner(fx->client, id, owner, sizeof owner, &exists), COORD_OK);
    assert_string_equal(owner, "alice");
}

/* A full catalog is a limit, not an error: with CATALOG_ADDED_MAX models added, an upload
 * of a new name is COORD_ELIMIT (429) naming the limit, before any byte is stored or
 * validated; one place free again and the refusal is the validator's own. */
static void test_daemon_catalog_full(void **state)
{
    fixture_t *fx = *state;
    char err[ERRLEN];
    plan(fx, "exit 0\n");
    start_daemon(fx);
    catalog_model_t m;
    assert_int_equal(catalog_model_get("lenet5", &m), 0);
    m.source = CATALOG_UPLOADED;
    m.head_in = 0;
    memset(m.sha256, 'a', 64);
    m.sha256[64] = 0;
    int added = 0;
    for (; added < CATALOG_ADDED_MAX; added++) {
        snprintf(m.name, sizeof m.name, "filler-%d", added);
        if (catalog_model_add(&m, err, sizeof err) != 0) fail_msg("%s", err);
    }
    assert_int_equal(added, CATALOG_ADDED_MAX);
    json_t *out = NULL;
    int created = 0;
    coord_caller_t bob = {"bob", USER_MEMBER};
    assert_int_equal(coord_model_put(fx->daemon, "one-more", "ONNX?", 5, &bob, 0, &out, &created, err, ERRLEN),
                     COORD_ELIMIT);
    assert_string_equal(err, "the catalog holds at most 256 uploaded models and has 256: delete one first (DELETE "
                             "/api/v1/models/{name})");
    char dir[300];
    snprintf(dir, sizeof dir, "%s/models", fx->state_dir);
    DIR *d = opendir(dir); /* nothing stored: no directory, or an empty one */
    for (struct dirent *e; d && (e = readdir(d));) assert_true(e->d_name[0] == '.');
    if (d) closedir(d);
    assert_int_equal(catalog_model_remove("filler-0"), 0);
    assert_int_not_equal(coord_model_put(fx->daemon, "one-more", "ONNX?", 5, &bob, 0, &out, &created, err, ERRLEN),
                         COORD_ELIMIT);
    for (int i = 1; i < added; i++) {
        snprintf(m.name, sizeof m.name, "filler-%d", i);
        assert_int_equal(catalog_model_remove(m.name), 0);
    }
}

static void test_daemon_second_refused(void **state)
{
    fixture_t *fx = *state;
    plan(fx, "exit 0\n");
    start_daemon(fx);
    coordinator_t *other = NULL;
    char err[ERRLEN] = "";
    assert_int_not_equal(coordinator_start(&fx->cfg, &other, err, sizeof err), COORD_OK);
    assert_non_null(strstr(err, "another coordinator"));
}

/* --keep-jobs-age: jobstore_prune deletes final jobs that finished before the cutoff
 * (by their finished time, not their submission), keeps newer ones and never a job
 * that is still queued, whatever its age; the count rule still applies beside it. */
static void test_prune_by_age(void **state)
{
    fixture_t *fx = *state;
    char ids[6][COORD_ID_MAX], err[ERRLEN];
    for (int i = 0; i < 6; i++) snprintf(ids[i], sizeof ids[i], "%s", submit(fx, SPEC));
    /* j-1..j-5 cancelled (final); j-6 stays queued */
    for (int i = 0; i < 5; i++) assert_int_equal(coord_cancel(fx->client, ids[i], err, sizeof err), COORD_OK);
    /* finished 1000 s ago: j-1, j-2 and the queued j-6 (its submission too); j-3 finished
     * long ago but was submitted now (cannot happen, and must not matter); j-4, j-5 now */
    double now = (double)time(NULL);
    const char *old[] = {ids[0], ids[1], ids[5]};
    for (int i = 0; i < 3; i++) {
        redisReply *r = redisCommand(fx->rc, "HSET pacer:job:%s finished %.3f submitted %.3f", old[i], now - 1000,
                                     now - 1000);
        assert_non_null(r);
        freeReplyObject(r);
        r = redisCommand(fx->rc, "ZADD pacer:jobs %.3f %s", now - 1000, old[i]);
        freeReplyObject(r);
    }
    redisReply *r = redisCommand(fx->rc, "HSET pacer:job:%s finished %.3f", ids[2], now - 1000);
    freeReplyObject(r);
    char del[8][JOB_ID_MAX];
    int n = -1;
    assert_int_equal(jobstore_prune(fx->rc, 0, now - 500, 8, del, &n), JS_OK);
    assert_int_equal(n, 2);
    assert_string_equal(del[0], ids[0]);
    assert_string_equal(del[1], ids[1]);
    /* the cutoff in the future: every final job goes, the queued one stays */
    assert_int_equal(jobstore_prune(fx->rc, 0, now + 10, 8, del, &n), JS_OK);
    assert_int_equal(n, 3);
    r = redisCommand(fx->rc, "ZRANGE pacer:jobs 0 -1");
    assert_int_equal(r->elements, 1);
    assert_string_equal(r->element[0]->str, ids[5]);
    freeReplyObject(r);
    /* neither rule set: nothing happens */
    assert_int_equal(jobstore_prune(fx->rc, 0, 0, 8, del, &n), JS_OK);
    assert_int_equal(n, 0);
}

/* A model named NAME of PARAMS parameters, not built in (the catalog's figures, as an
 * import's), for the admission and placement tests of sharded optimizer state. */
static void add_state_model(const char *name, long params)
{
    char err[ERRLEN] = "";
    catalog_model_t m;
    assert_int_equal(catalog_model_get("lenet5", &m), 0);
    snprintf(m.name, sizeof m.name, "%s", name);
    m.source = CATALOG_ONNX;
    m.head_in = 0;
    m.params = params;
    m.acts_per_sample = m.dacts_per_sample = 1000;
    if (catalog_model_add(&m, err, sizeof err) != 0) fail_msg("%s", err);
}

/* An AdamW ssgd job of MODEL on WORKERS (a string) ranks; ALGO adds to its algorithm. */
#define STATE_SPEC(MODEL, ALGO, WORKERS)                                                                              \
    "{\"name\": \"w\", \"model\": \"" MODEL "\", \"dataset\": {\"name\": \"fashion-mnist\", \"train_subset\": 1000, " \
    "\"test_subset\": 1000}, \"optimizer\": {\"kind\": \"adamw\"}, \"algorithm\": {\"name\": \"ssgd\"" ALGO "}, "     \
    "\"workers\": " WORKERS "}"

/* Sharded optimizer state (algorithm.shard) at admission: a model of 25M parameters with
 * AdamW holds 16 bytes a parameter on every rank of plain ssgd (about 400 MB), so two
 * ranks on the larger host (slots 2 and 1) do not fit 700 MiB; sharded over the two
 * ranks each keeps half of the moments (about 300 MB) and the job is admitted. */
static void test_daemon_shard_admission(void **state)
{
    fixture_t *fx = *state;
    char hf[200], err[ERRLEN] = "", id[COORD_ID_MAX];
    snprintf(hf, sizeof hf, "%s/hosts", fx->dir);
    write_text(hf, "localhost slots=2\n127.0.0.1 slots=1\n");
    fx->cfg.hostfile = hf;
    fx->cfg.host_memory_mb = 700;
    plan(fx, "wait\n");
    start_daemon(fx);
    add_state_model("wide-state", 25000000);
    int plain = coord_submit(fx->daemon, STATE_SPEC("wide-state", "", "2"), id, sizeof id, err, sizeof err);
    char why[ERRLEN];
    snprintf(why, sizeof why, "%s", err);
    int sharded = coord_submit(fx->daemon, STATE_SPEC("wide-state", ", \"shard\": {\"stage\": 2}", "2"), id, sizeof id,
                               err, sizeof err);
    assert_int_equal(catalog_model_remove("wide-state"), 0);
    assert_int_equal(plain, COORD_ENOFIT);
    if (!strstr(why, "= 2 ranks x")) fail_msg("plain refusal: %s", why);
    if (sharded != COORD_OK) fail_msg("the sharded job was refused: %s", err);
    assert_int_equal(coord_cancel(fx->client, id, err, sizeof err), COORD_OK);
}

/* A model of 64 M parameters for the sharded placement tests: with AdamW a rank keeps 16
 * bytes a parameter unsharded (977 MiB), and sharded 8 bytes plus 8 x its share (1/4: 610
 * MiB; 1/2: 732 MiB; 3/4: 854 MiB). */
#define BIG_STATE_SPEC(SPLIT, WORKERS) STATE_SPEC("big-state", SPLIT, #WORKERS)
#define SHARD2(SPLIT) ", \"shard\": {\"stage\": 2, \"split\": " SPLIT "}"

static int fits_hosts(const char *spec_text, const hostmem_host_t *h, int nh, char *err, size_t errlen)
{
    job_spec_t *s = malloc(sizeof *s);
    assert_non_null(s);
    if (spec_parse(spec_text, s, err, errlen) != 0) fail_msg("spec: %s", err);
    err[0] = 0;
    int ok = hostmem_fits(s, s->workers, h, nh, 0, err, errlen);
    free(s);
    return ok;
}

static int order_hosts(const char *spec_text, const hostmem_host_t *h, int nh, int *order)
{
    char err[ERRLEN];
    job_spec_t *s = malloc(sizeof *s);
    assert_non_null(s);
    if (spec_parse(spec_text, s, err, sizeof err) != 0) fail_msg("spec: %s", err);
    int rc = hostmem_order(s, s->workers, h, nh, order);
    free(s);
    return rc;
}

/* --host-memory-mb-of's list: names and MiB; every malformed entry refused by name. */
static void test_hostmem_parse(void **state)
{
    (void)state;
    hostmem_entry_t e[3];
    int n = -1;
    char err[ERRLEN] = "";
    assert_int_equal(hostmem_parse("small=700,big.example=2048.5", e, 3, &n, err, sizeof err), 0);
    assert_int_equal(n, 2);
    assert_string_equal(e[0].name, "small");
    assert_true(e[0].bytes == 700.0 * 1024 * 1024);
    assert_string_equal(e[1].name, "big.example");
    assert_true(e[1].bytes == 2048.5 * 1024 * 1024);
    static const struct {
        const char *text, *says;
    } bad[] = {
        {"small", "\"small\" is not HOST=MB"},
        {"=700", "the host name must be 1 to 255 printable bytes"},
        {"sm all=700", "\"sm all\": the host name must be"},
        {"small\t=700", "the host name must be"},
        {"small=0x10", "\"0x10\" is not a number"},
        {"small= 7", "\" 7\" is not a number"},
        {"small=7=8", "\"7=8\" is not a number"},
        {"small=0", "small: \"0\" is not a number of MiB above 0"},
        {"small=-5", "\"-5\" is not a number"},
        {"small=lots", "\"lots\" is not a number"},
        {"small=nan", "\"nan\" is not a number"},
        {"small=2e9", "\"2e9\" is not a number of MiB above 0 up to 1000000000"},
        {"small=700,small=800", "host small is given twice"},
        {"small=700,", "an empty entry"},
        {"", "an empty entry"},
        {"a=1,b=2,c=3,d=4", "more than 3 hosts"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        assert_int_equal(hostmem_parse(bad[i].text, e, 3, &n, err, sizeof err), -1);
        if (!strstr(err, bad[i].says) || !strstr(err, "--host-memory-mb-of"))
            fail_msg("%s: %s (wanted %s)", bad[i].text, err, bad[i].says);
    }
}

/* Memory admission host by host (hostmem_fits): a host is checked for the shares of the
 * ranks by-slot placement puts on it, not for the job's largest. Hosts of 700 MiB and
 * 2 GiB, one slot each: split [1, 3] puts the 610 MiB quarter on the small host and the
 * 854 MiB on the large one: admitted; [3, 1] puts 854 MiB on the small one: refused,
 * naming the host, its rank and the figures; even (732 MiB each) and plain ssgd (977 MiB)
 * do not fit the small one either. Split "memory" weighs the ranks by their hosts' figures
 * (the worker by MemAvailable): the large share lands on the large host whichever comes
 * first. On hosts of one size (1300 MiB; 2 slots and 1), 3 ranks split [1, 1, 4]: the
 * first host takes the two small shares (2 x 569 MiB) and the second the large one
 * (813 MiB), admitted, where counting the first host's two ranks as the largest two
 * (1383 MiB) refused it; [4, 1, 1] does put the large one beside a small one there. */
static void test_hostmem_shard_placement(void **state)
{
    (void)state;
    char err[ERRLEN];
    add_state_model("big-state", 64000000);
    hostmem_host_t h[2] = {{.name = "small", .slots = 1, .bytes = 700.0 * 1024 * 1024, .from = "--host-memory-mb-of"},
                           {.name = "big", .slots = 1, .bytes = 2048.0 * 1024 * 1024, .from = "--host-memory-mb-of"}};
    if (!fits_hosts(BIG_STATE_SPEC(SHARD2("[1, 3]"), 2), h, 2, err, sizeof err)) fail_msg("[1, 3]: %s", err);
    assert_int_equal(fits_hosts(BIG_STATE_SPEC(SHARD2("[3, 1]"), 2), h, 2, err, sizeof err), 0);
    if (!strstr(err, "= 1 rank x") ||
        !strstr(err, "more than the 700 MiB of host small (--host-memory-mb-of), where by-slot placement puts rank 0"))
        fail_msg("[3, 1]: %s", err);
    assert_int_equal(fits_hosts(BIG_STATE_SPEC(SHARD2("\"even\""), 2), h, 2, err, sizeof err), 0);
    if (!strstr(err, "700 MiB of host small")) fail_msg("even: %s", err);
    assert_int_equal(fits_hosts(BIG_STATE_SPEC("", 2), h, 2, err, sizeof err), 0);
    if (!strstr(err, "700 MiB of host small")) fail_msg("plain: %s", err);
    if (!fits_hosts(BIG_STATE_SPEC(SHARD2("\"memory\""), 2), h, 2, err, sizeof err)) fail_msg("memory: %s", err);
    hostmem_host_t swapped[2] = {h[1], h[0]};
    if (!fits_hosts(BIG_STATE_SPEC(SHARD2("\"memory\""), 2), swapped, 2, err, sizeof err))
        fail_msg("memory, the large host first: %s", err);
    /* The hostfile launcher may reorder the hosts (hostmem_order): [3, 1] holds with the
     * large host first; [1, 3] as given; [1, 1] (732 MiB each) nowhere; memory is not a
     * list (its shares follow the hosts already). */
    int order[2] = {-1, -1};
    assert_int_equal(order_hosts(BIG_STATE_SPEC(SHARD2("[3, 1]"), 2), h, 2, order), 2);
    assert_true(order[0] == 1 && order[1] == 0);
    assert_int_equal(order_hosts(BIG_STATE_SPEC(SHARD2("[1, 3]"), 2), h, 2, order), 1);
    assert_true(order[0] == 0 && order[1] == 1);
    assert_int_equal(order_hosts(BIG_STATE_SPEC(SHARD2("[1, 1]"), 2), h, 2, order), 0);
    assert_int_equal(order_hosts(BIG_STATE_SPEC(SHARD2("\"memory\""), 2), h, 2, order), 0);
    /* unknown memory is not checked: the small host without a figure takes anything */
    h[0].bytes = 0;
    if (!fits_hosts(BIG_STATE_SPEC(SHARD2("[3, 1]"), 2), h, 2, err, sizeof err)) fail_msg("unknown: %s", err);
    assert_int_equal(order_hosts(BIG_STATE_SPEC(SHARD2("[3, 1]"), 2), h, 2, order), 0);

    hostmem_host_t u[2] = {{.name = "a", .slots = 2, .bytes = 1300.0 * 1024 * 1024, .from = "--host-memory-mb"},
                           {.name = "b", .slots = 1, .bytes = 1300.0 * 1024 * 1024, .from = "--host-memory-mb"}};
    if (!fits_hosts(BIG_STATE_SPEC(SHARD2("[1, 1, 4]"), 3), u, 2, err, sizeof err)) fail_msg("[1, 1, 4]: %s", err);
    assert_int_equal(fits_hosts(BIG_STATE_SPEC(SHARD2("[4, 1, 1]"), 3), u, 2, err, sizeof err), 0);
    if (!strstr(err, "= 2 ranks x") ||
        !strstr(err, "of host a (--host-memory-mb), where by-slot placement puts ranks 0, 1"))
        fail_msg("[4, 1, 1]: %s", err);
    /* reordered: rank 0's large share alone on b, the two small ones on a */
    assert_int_equal(order_hosts(BIG_STATE_SPEC(SHARD2("[4, 1, 1]"), 3), u, 2, order), 2);
    assert_true(order[0] == 1 && order[1] == 0);
}

/* The catalog is the process's: the model goes even when a check failed. */
static int remove_big_state_model(void **state)
{
    (void)state;
    catalog_model_remove("big-state");
    return 0;
}

/* The same through the daemon: --host-memory-mb-of gives the hostfile's two hosts 700
 * MiB and 2 GiB (the small one first); a submission with split [3, 1] is admitted and
 * launched with the hosts reordered (rank 0's three quarters on the large host: the
 * attempt's hostfile lists it first), [1, 1] is 422 naming the small host. A name that
 * is not one of the launcher's hosts stops the start (a typo would leave a host
 * unchecked). */
static void test_daemon_shard_placement(void **state)
{
    fixture_t *fx = *state;
    char hf[200], err[ERRLEN] = "", id[COORD_ID_MAX];
    snprintf(hf, sizeof hf, "%s/hosts", fx->dir);
    write_text(hf, "localhost slots=1\n127.0.0.1 slots=1\n");
    fx->cfg.hostfile = hf;
    fx->cfg.host_memory_of = "localhost=700,nosuch=2048";
    coordinator_t *none = NULL;
    assert_int_equal(coordinator_start(&fx->cfg, &none, err, sizeof err), COORD_EINVAL);
    if (!strstr(err, "--host-memory-mb-of: nosuch is not one of the hostfile launcher's 2 hosts")) fail_msg("%s", err);
    fx->cfg.host_memory_of = "localhost=700,127.0.0.1=2048";
    fx->cfg.preflight = "off"; /* launched at once: no benchmark of the two hosts first */
    plan(fx, "wait\n");
    start_daemon(fx);
    add_state_model("big-state", 64000000);
    int good = coord_submit(fx->daemon, BIG_STATE_SPEC(SHARD2("[3, 1]"), 2), id, sizeof id, err, sizeof err);
    char why[ERRLEN], refusal[ERRLEN], other[COORD_ID_MAX];
    snprintf(why, sizeof why, "%s", err);
    int bad = coord_submit(fx->daemon, BIG_STATE_SPEC(SHARD2("[1, 1]"), 2), other, sizeof other, err, sizeof err);
    snprintf(refusal, sizeof refusal, "%s", err);
    /* its attempt's hostfile puts rank 0 (the three quarters) on the 2 GiB host; the
     * model stays in the catalog until then (the launch reads the spec again) */
    char p[256], *t = NULL;
    snprintf(p, sizeof p, "%s/jobs/%s/hostfile", fx->state_dir, id);
    for (double end = mono() + AWAIT_S; good == COORD_OK && !t && mono() < end; nap()) t = read_text(p);
    int cancelled = good == COORD_OK ? coord_cancel(fx->client, id, err, sizeof err) : COORD_OK;
    assert_int_equal(catalog_model_remove("big-state"), 0);
    if (good != COORD_OK) fail_msg("[3, 1] refused: %s", why);
    assert_int_equal(bad, COORD_ENOFIT);
    if (!strstr(refusal, "700 MiB of host localhost (--host-memory-mb-of), where by-slot placement puts rank 0"))
        fail_msg("[1, 1]: %s", refusal);
    if (!t || !strstr(t, "127.0.0.1 slots=1\nlocalhost slots=1\n"))
        fail_msg("the attempt's hostfile: %s", t ? t : "none");
    free(t);
    assert_int_equal(cancelled, COORD_OK);
}

/* Memory admission at submission (api.c memory_fits, common/memest.h): with hosts of 2
 * and 1 slots and --host-memory-mb 200, an ssgd lenet5 job (about 62 MiB a rank: the
 * data set as kept dominates) fits with 3 workers (by-slot placement: at most 2 ranks on
 * the larger host) and not with 4 (2 rounds of 2 slots: 4 ranks there, about 250 MiB);
 * the refusal names the figures. A client (coordinator_open) does not check: it does
 * not know the hosts. */
static void test_daemon_memory_admission(void **state)
{
    fixture_t *fx = *state;
    char hf[200], err[ERRLEN] = "", id[COORD_ID_MAX];
    snprintf(hf, sizeof hf, "%s/hosts", fx->dir);
    write_text(hf, "localhost slots=2\n127.0.0.1 slots=1\n");
    fx->cfg.hostfile = hf;
    fx->cfg.host_memory_mb = 200;
    plan(fx, "wait\n");
    start_daemon(fx);
    static const char FOUR[] = "{\"name\": \"m\", \"model\": \"lenet5\", \"dataset\": {\"name\": \"fashion-mnist\"}, "
                               "\"algorithm\": {\"name\": \"ssgd\"}, \"workers\": 4}";
    assert_int_equal(coord_submit(fx->daemon, FOUR, id, sizeof id, err, sizeof err), COORD_ENOFIT);
    if (!strstr(err, "= 4 ranks x") || !strstr(err, "200 MiB of host localhost (--host-memory-mb), which may get 4"))
        fail_msg("refusal: %s", err);
    static const char THREE[] = "{\"name\": \"m\", \"model\": \"lenet5\", \"dataset\": {\"name\": \"fashion-mnist\"}, "
                                "\"algorithm\": {\"name\": \"ssgd\"}, \"workers\": 3}";
    int rc = coord_submit(fx->daemon, THREE, id, sizeof id, err, sizeof err);
    if (rc != COORD_OK) fail_msg("3 workers refused: %s", err);
    assert_int_equal(coord_cancel(fx->client, id, err, sizeof err), COORD_OK);
    /* the client does not know the hosts: no memory check there */
    assert_int_equal(coord_submit(fx->client, FOUR, id, sizeof id, err, sizeof err), COORD_OK);
    assert_int_equal(coord_cancel(fx->client, id, err, sizeof err), COORD_OK);

    /* A model that is not built in (what the ONNX importer adds) is admitted by its own
     * figures: 11M parameters and 2M activations a sample need about 1.1 GiB a rank at
     * batch 64, refused on 200 MiB hosts; not skipped for being unknown to a table. */
    catalog_model_t m;
    assert_int_equal(catalog_model_get("resnet20", &m), 0);
    snprintf(m.name, sizeof m.name, "big-import");
    m.source = CATALOG_ONNX;
    m.head_in = 0; /* an imported model has its own width */
    m.params = 11000000;
    m.acts_per_sample = m.dacts_per_sample = 2000000;
    if (catalog_model_add(&m, err, sizeof err) != 0) fail_msg("%s", err);
    static const char BIG[] = "{\"name\": \"b\", \"model\": \"big-import\", \"dataset\": {\"name\": \"cifar10\"}}";
    rc = coord_submit(fx->daemon, BIG, id, sizeof id, err, sizeof err);
    assert_int_equal(catalog_model_remove("big-import"), 0);
    assert_int_equal(rc, COORD_ENOFIT);
    if (!strstr(err, "= 1 rank x") || !strstr(err, "largest batch 64"))
        fail_msg("refusal of the imported model: %s", err);
}

/* The catalog through the API (coordinator/models.c): every model with its figures and
 * memory, one model by name (404 for another), the data sets with where this machine has
 * them: the default directory, else a data root holding the files. */
static void test_catalog_api(void **state)
{
    fixture_t *fx = *state;
    char root[200], dir[300], err[ERRLEN];
    snprintf(root, sizeof root, "%s/data", fx->dir);
    snprintf(dir, sizeof dir, "%s/cifar-10", root);
    assert_int_equal(mkdir(root, 0755), 0);
    assert_int_equal(mkdir(dir, 0755), 0);
    static const char *const FILES[] = {"data_batch_1.bin", "data_batch_2.bin.gz", "data_batch_3.bin",
                                        "data_batch_4.bin", "data_batch_5.bin",    "test_batch.bin"};
    for (size_t i = 0; i < sizeof FILES / sizeof FILES[0]; i++) {
        char f[400];
        snprintf(f, sizeof f, "%s/%s", dir, FILES[i]);
        assert_int_equal(write_text(f, ""), 0);
    }
    const char *roots[] = {root};
    fx->cfg.data_roots = roots;
    fx->cfg.ndata_roots = 1;
    setenv("PACER_SHARED", fx->dir, 1); /* no datasets/ there: mnist and cifar10 absent by default */
    start_daemon(fx);

    json_t *o = NULL;
    assert_int_equal(coord_models(fx->daemon, &o), COORD_OK);
    json_t *models = json_object_get(o, "models");
    assert_int_equal(json_array_size(models), 4);
    json_t *lenet = json_array_get(models, 1);
    assert_string_equal(json_string_value(json_object_get(lenet, "name")), "lenet5");
    assert_string_equal(json_string_value(json_object_get(lenet, "source")), "builtin");
    assert_int_equal(json_integer_value(json_object_get(lenet, "parameters")), 61706);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(lenet, "input"), "height")), 28);
    assert_true(json_real_value(json_object_get(lenet, "flops_per_sample")) == 841174.0);
    /* (3 x 61706 + MODEL_GRAD_EXTRA 4 + 50816) floats: the workspace sized for every path a
     * CPU may take, conv_amx.h's tiles included */
    assert_true(json_real_value(json_object_get(json_object_get(lenet, "memory"), "model_bytes")) ==
                4.0 * (3 * 61706 + 4 + 50816));
    /* the figures are for 10 classes; each class more adds fc3's 84 weights and a bias
     * (3 copies), 2 x 84 + 5 FLOPs, and per sample a logit and its probability (the
     * logits' gradient slot grows 16 floats at a time: not from 10 to 11) */
    assert_true(json_is_true(json_object_get(lenet, "classes_from_dataset")));
    json_t *per = json_object_get(lenet, "per_class");
    assert_int_equal(json_integer_value(json_object_get(per, "parameters")), 85);
    assert_true(json_real_value(json_object_get(per, "flops_per_sample")) == 173.0);
    assert_true(json_real_value(json_object_get(json_object_get(per, "memory"), "model_bytes")) == 4.0 * 3 * 85);
    assert_true(json_real_value(json_object_get(json_object_get(per, "memory"), "bytes_per_sample")) == 4.0 * 2);
    json_decref(o);

    catalog_model_t m;
    assert_int_equal(catalog_model_get("lenet5", &m), 0);
    snprintf(m.name, sizeof m.name, "onnx-lenet");
    m.source = CATALOG_ONNX;
    m.head_in = 0; /* an imported model has its own width */
    m.dataset[0] = '\0';
    if (catalog_model_add(&m, err, sizeof err) != 0) fail_msg("%s", err);
    assert_int_equal(coord_model(fx->daemon, "onnx-lenet", &o), COORD_OK);
    assert_string_equal(json_string_value(json_object_get(o, "source")), "onnx");
    assert_true(json_is_null(json_object_get(o, "dataset")));
    assert_true(json_is_false(json_object_get(o, "classes_from_dataset")));
    assert_true(json_is_null(json_object_get(o, "per_class")));
    json_decref(o);
    assert_int_equal(coord_models(fx->daemon, &o), COORD_OK);
    assert_int_equal(json_array_size(json_object_get(o, "models")), 5);
    json_decref(o);
    assert_int_equal(catalog_model_remove("onnx-lenet"), 0);
    assert_int_equal(coord_model(fx->daemon, "onnx-lenet", &o), COORD_ENOTFOUND);
    assert_int_equal(coord_model(fx->daemon, "vgg", &o), COORD_ENOTFOUND);

    assert_int_equal(coord_datasets(fx->daemon, &o), COORD_OK);
    json_t *sets = json_object_get(o, "datasets");
    assert_int_equal(json_array_size(sets), 3);
    json_t *mnist = json_array_get(sets, 1), *cifar = json_array_get(sets, 2);
    assert_string_equal(json_string_value(json_object_get(mnist, "format")), "idx");
    assert_false(json_is_true(json_object_get(mnist, "present")));
    assert_true(json_is_null(json_object_get(mnist, "path")));
    assert_string_equal(json_string_value(json_object_get(cifar, "format")), "cifar");
    assert_int_equal(json_integer_value(json_object_get(cifar, "train_samples")), 50000);
    assert_true(json_is_true(json_object_get(cifar, "present")));
    char *real = realpath(dir, NULL);
    assert_non_null(real);
    assert_string_equal(json_string_value(json_object_get(cifar, "path")), real);
    free(real);
    assert_int_equal(json_array_size(json_object_get(o, "data_roots")), 1);
    json_decref(o);

    /* A 4-class folder under the root (the probe lists it, decodes nothing: empty files
     * do): an imported model of 10 outputs is refused at submission naming both (a
     * built-in's head would take the 4: issue 42, tests/integration/builtin_classes.sh) */
    static const char *const PARTS[] = {"four", "four/train", "four/test"};
    for (size_t i = 0; i < sizeof PARTS / sizeof PARTS[0]; i++) {
        snprintf(dir, sizeof dir, "%s/%s", root, PARTS[i]);
        assert_int_equal(mkdir(dir, 0755), 0);
    }
    for (int k = 0; k < 4; k++)
        for (int split = 0; split < 2; split++) {
            char f[400];
            snprintf(dir, sizeof dir, "%s/four/%s/c%d", root, split ? "test" : "train", k);
            assert_int_equal(mkdir(dir, 0755), 0);
            snprintf(f, sizeof f, "%s/0.png", dir);
            assert_int_equal(write_text(f, ""), 0);
        }
    catalog_model_t ten;
    assert_int_equal(catalog_model_get("lenet5", &ten), 0);
    snprintf(ten.name, sizeof ten.name, "onnx-ten");
    ten.source = CATALOG_ONNX;
    ten.head_in = 0; /* an imported model has its own width */
    if (catalog_model_add(&ten, err, sizeof err) != 0) fail_msg("%s", err);
    char spec[600], id[COORD_ID_MAX], want[600];
    snprintf(spec, sizeof spec,
             "{\"model\": \"onnx-ten\", \"dataset\": {\"format\": \"imagefolder\", \"path\": \"%s/four\"}}", root);
    assert_int_equal(coord_submit(fx->daemon, spec, id, sizeof id, err, sizeof err), COORD_EDATA);
    snprintf(want, sizeof want, "dataset.path: %s/four has 4 classes, model onnx-ten has 10 outputs (one per class)",
             root);
    assert_string_equal(err, want);
    assert_int_equal(catalog_model_remove("onnx-ten"), 0);
    unsetenv("PACER_SHARED");
}

/* A list filtered by a state a job can still leave (QUEUED, RUNNING, RESTARTING) reads
 * only pacer:queue and pacer:active, not the whole history: a history entry that claims
 * to be QUEUED but is in neither is not listed (it would be with a scan). Newest first,
 * paged, total counted; a final state still reads the history. */
static void test_list_state_reads_active_sets(void **state)
{
    fixture_t *fx = *state;
    char ids[3][COORD_ID_MAX], err[ERRLEN];
    for (int i = 0; i < 3; i++) snprintf(ids[i], sizeof ids[i], "%s", submit(fx, SPEC));
    assert_int_equal(coord_cancel(fx->client, ids[1], err, sizeof err), COORD_OK);
    redisReply *r = redisCommand(fx->rc, "HSET pacer:job:j-99 id j-99 state QUEUED name ghost");
    freeReplyObject(r);
    r = redisCommand(fx->rc, "ZADD pacer:jobs 1 j-99");
    freeReplyObject(r);
    json_t *o = NULL;
    assert_int_equal(coord_list(fx->client, "QUEUED", 0, 10, &o), COORD_OK);
    if (jint(o, "total") != 2) {
        char *t = json_dumps(o, 0);
        fail_msg("QUEUED: %s", t);
    }
    json_t *jobs = json_object_get(o, "jobs");
    assert_int_equal(json_array_size(jobs), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(jobs, 0), "id")), ids[2]);
    assert_string_equal(json_string_value(json_object_get(json_array_get(jobs, 1), "id")), ids[0]);
    json_decref(o);
    assert_int_equal(coord_list(fx->client, "QUEUED", 1, 1, &o), COORD_OK);
    assert_int_equal(jint(o, "total"), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(o, "jobs"), 0), "id")), ids[0]);
    json_decref(o);
    assert_int_equal(coord_list(fx->client, "CANCELLED", 0, 10, &o), COORD_OK);
    assert_int_equal(jint(o, "total"), 1);
    json_decref(o);
    /* unfiltered: the history, the ghost included */
    assert_int_equal(coord_list(fx->client, NULL, 0, 10, &o), COORD_OK);
    assert_int_equal(jint(o, "total"), 4);
    json_decref(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_supervise_decide),
        cmocka_unit_test(test_worker_capabilities),
        cmocka_unit_test(test_supervise_collapse),
        cmocka_unit_test(test_health_clean),
        cmocka_unit_test(test_supervise_silent_host),
        cmocka_unit_test(test_stall),
        cmocka_unit_test(test_netprobe_verdict),
        cmocka_unit_test(test_states_and_ids),
        cmocka_unit_test(test_log_helpers),
        cmocka_unit_test(test_exit_code_and_liveness),
        cmocka_unit_test_setup_teardown(test_api_submit_get_list_cancel, setup, teardown),
        cmocka_unit_test_setup_teardown(test_api_submit_spec, setup, teardown),
        cmocka_unit_test_setup_teardown(test_api_metrics_nodes_events, setup, teardown),
        cmocka_unit_test_setup_teardown(test_api_redis_down, setup, teardown),
        cmocka_unit_test_setup_teardown(test_api_retry, setup, teardown),
        cmocka_unit_test_setup_teardown(test_prune_by_age, setup, teardown),
        cmocka_unit_test_setup_teardown(test_list_state_reads_active_sets, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dynbatch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_daemon_restarts_then_succeeds, setup, teardown),
        cmocka_unit_test_setup_teardown(test_daemon_exit0_without_summary, setup, teardown),
        cmocka_unit_test_setup_teardown(test_daemon_bad_input_not_retried, setup, teardown),
        cmocka_unit_test_setup_teardown(test_daemon_retry_failed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_daemon_gives_up, setup, teardown),
        cmocka_unit_test_setup_teardown(test_daemon_cancel, setup, teardown),
        cmocka_unit_test_setup_teardown(test_daemon_readopts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_daemon_resumes_lost_job, setup, teardown),
        cmocka_unit_test_setup_teardown(test_daemon_stop_jobs_on_exit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_daemon_stale_heartbeat, setup, teardown),
        cmocka_unit_test_setup_teardown(test_daemon_slots, setup, teardown),
        cmocka_unit_test_setup_teardown(test_admission_table, setup, teardown),
        cmocka_unit_test_setup_teardown(test_daemon_memory_admission, setup, teardown),
        cmocka_unit_test_setup_teardown(test_daemon_shard_admission, setup, teardown),
        cmocka_unit_test_setup_teardown(test_daemon_shard_placement, setup, teardown),
        cmocka_unit_test(test_hostmem_parse),
        cmocka_unit_test_teardown(test_hostmem_shard_placement, remove_big_state_model),
        cmocka_unit_test_setup_teardown(test_catalog_api, setup, teardown),
        cmocka_unit_test_setup_teardown(test_daemon_second_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_daemon_user_limits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_daemon_catalog_full, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
