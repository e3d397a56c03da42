/* tests/unit/test_cli.c - the pure parts of `pacer` (cli/): the command line (options in
 * any place, environment fallbacks, every refusal), the cleaning and cutting of what the
 * coordinator sends before it reaches a terminal, tables, the job detail, problem
 * details, the Server-Sent Events parser (fed in every possible split), and the rank
 * progress view in both its forms. The HTTP side runs against a real coordinator in
 * tests/integration/cli.sh.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "cliargs.h"
#include "format.h"
#include "progress.h"
#include "sseparse.h"

#define ERRLEN 256

/* Parses a NULL-terminated argument list (without the program name). */
static int parse(cli_args_t *a, char *err, const char *env_url, const char *env_token, ...)
{
    char *argv[32];
    int argc = 0;
    argv[argc++] = "pacer";
    va_list ap;
    va_start(ap, env_token);
    for (char *s; (s = va_arg(ap, char *)) && argc < 31;) argv[argc++] = s;
    va_end(ap);
    argv[argc] = NULL;
    err[0] = 0;
    return cli_args_parse(argc, argv, env_url, env_token, a, err, ERRLEN);
}

/* Output of a printing function, captured in memory. */
typedef struct {
    char *buf;
    size_t len;
    FILE *f;
} capture_t;

static void cap_open(capture_t *c)
{
    c->buf = NULL;
    c->len = 0;
    c->f = open_memstream(&c->buf, &c->len);
    assert_non_null(c->f);
}

static char *cap_close(capture_t *c)
{
    fclose(c->f);
    return c->buf;
}

/* ---- the command line ------------------------------------------------------------------- */

static void test_args_commands_and_options(void **state)
{
    cli_args_t a;
    char err[ERRLEN];
    assert_int_equal(parse(&a, err, NULL, NULL, "ls", NULL), 0);
    assert_int_equal(a.command->cmd, CMD_LS);
    assert_string_equal(a.url, CLI_DEFAULT_URL);
    assert_null(a.token);
    assert_int_equal(a.limit, 50);
    assert_false(a.json);

    /* Options before or after the command, both value forms, short forms. */
    assert_int_equal(parse(&a, err, NULL, NULL, "--url", "http://h:1", "ls", "--state=running", "--limit", "7",
                           "--json", NULL),
                     0);
    assert_string_equal(a.url, "http://h:1");
    assert_string_equal(a.state, "running");
    assert_int_equal(a.limit, 7);
    assert_true(a.json);
    assert_int_equal(parse(&a, err, NULL, NULL, "logs", "-f", "j-3", "-n", "20", NULL), 0);
    assert_int_equal(a.command->cmd, CMD_LOGS);
    assert_string_equal(a.arg, "j-3");
    assert_true(a.follow);
    assert_int_equal(a.tail, 20);
    assert_int_equal(parse(&a, err, NULL, NULL, "trace", "j-3", "-oout.json", NULL), 0);
    assert_string_equal(a.output, "out.json");
    assert_int_equal(parse(&a, err, NULL, NULL, "submit", "-w", "-", NULL), 0); /* "-" = stdin */
    assert_string_equal(a.arg, "-");
    assert_true(a.watch);
    assert_int_equal(parse(&a, err, NULL, NULL, "get", "--", "-odd", NULL), 0); /* after --, not an option */
    assert_string_equal(a.arg, "-odd");
    assert_int_equal(parse(&a, err, NULL, NULL, "models", NULL), 0);
    assert_int_equal(a.command->cmd, CMD_MODELS);
    assert_null(a.arg);
    assert_int_equal(parse(&a, err, NULL, NULL, "models", "lenet5", "--json", NULL), 0);
    assert_string_equal(a.arg, "lenet5");
    assert_int_equal(parse(&a, err, NULL, NULL, "datasets", NULL), 0);
    assert_int_equal(a.command->cmd, CMD_DATASETS);

    /* The environment, and the options over it. */
    assert_int_equal(parse(&a, err, "https://coord:8443/pacer", "s3cret", "get", "j-1", NULL), 0);
    assert_string_equal(a.url, "https://coord:8443/pacer");
    assert_string_equal(a.token, "s3cret");
    assert_int_equal(parse(&a, err, "http://env:1", "envtok", "--url=http://opt:2", "--token", "opt", "get", "j-1",
                           NULL),
                     0);
    assert_string_equal(a.url, "http://opt:2");
    assert_string_equal(a.token, "opt");
    assert_int_equal(parse(&a, err, "", "", "get", "j-1", NULL), 0); /* empty = unset */
    assert_string_equal(a.url, CLI_DEFAULT_URL);
    assert_null(a.token);
    assert_int_equal(parse(&a, err, NULL, "envtok", "--token-file", "/tmp/t", "get", "j-1", NULL), 0);
    assert_null(a.token); /* the file wins over the environment; main reads it */
    assert_string_equal(a.token_file, "/tmp/t");

    /* Help and version need no command arguments. */
    assert_int_equal(parse(&a, err, NULL, NULL, NULL), 0);
    assert_null(a.command);
    assert_int_equal(parse(&a, err, NULL, NULL, "--version", NULL), 0);
    assert_true(a.version);
    assert_int_equal(parse(&a, err, NULL, NULL, "watch", "--help", NULL), 0);
    assert_true(a.help);
    assert_int_equal(a.command->cmd, CMD_WATCH);
    assert_int_equal(parse(&a, err, NULL, NULL, "help", "retry", NULL), 0);
    assert_string_equal(a.arg, "retry");

    /* watch --every SECONDS (a pipe's step lines), also for submit and retry --watch */
    assert_int_equal(parse(&a, err, NULL, NULL, "watch", "j-1", NULL), 0);
    assert_int_equal(a.every, 0); /* default: a line per epoch only */
    assert_int_equal(parse(&a, err, NULL, NULL, "watch", "j-1", "--every", "30", NULL), 0);
    assert_int_equal(a.every, 30);
    assert_int_equal(parse(&a, err, NULL, NULL, "submit", "s.json", "-w", "--every=5", NULL), 0);
    assert_int_equal(a.every, 5);
    assert_int_equal(parse(&a, err, NULL, NULL, "retry", "--every", "5", "j-1", "--watch", NULL), 0);
}

static void test_args_refusals(void **state)
{
    cli_args_t a;
    char err[ERRLEN];
    static const struct {
        const char *args[6];
        const char *says;
    } bad[] = {
        {{"frobnicate"}, "unknown command 'frobnicate'"},
        {{"ls", "--colour"}, "unknown option '--colour'"},
        {{"ls", "-x"}, "unknown option '-x'"},
        {{"get"}, "usage: pacer get ID"},
        {{"get", "j-1", "j-2"}, "usage: pacer get ID"},
        {{"ls", "j-1"}, "usage: pacer ls"},
        {{"ls", "--follow"}, "--follow does not apply to ls"},
        {{"get", "j-1", "--output", "x"}, "--output does not apply to get"},
        {{"ls", "--limit", "0"}, "--limit: '0' is not a whole number from 1 to 100000"},
        {{"ls", "--limit", "5x"}, "--limit: '5x'"},
        {{"logs", "j-1", "--tail"}, "--tail needs a value (N)"},
        {{"ls", "--json=yes"}, "--json takes no value"},
        {{"ls", "--url", "ftp://h"}, "must be http://HOST[:PORT] or https://"},
        {{"ls", "--url", "http://"}, "must be http://HOST[:PORT]"},
        {{"ls", "--url", "http://h x"}, "contains a space or a control character"},
        {{"ls", "--token", "a", "--token-file", "f"}, "--token and --token-file: give one"},
        {{"help", "nothing"}, "help: unknown command 'nothing'"},
        {{"models", "a", "b"}, "usage: pacer models [NAME]"},
        {{"datasets", "cifar10"}, "usage: pacer datasets"},
        {{"watch", "j-1", "--every", "0"}, "--every: '0' is not a whole number from 1 to 86400"},
        {{"watch", "j-1", "--every", "86401"}, "--every: '86401'"},
        {{"submit", "s.json", "--every", "5"}, "submit: --every goes with --watch"},
        {{"ls", "--every", "5"}, "ls: --every does not apply to ls"},
        /* a typo one or two edits from a known name says which; a far one does not */
        {{"ls", "--jsn"}, "unknown option '--jsn' (did you mean --json?)"},
        {{"ls", "--limt=3"}, "unknown option '--limt=3' (did you mean --limit?)"},
        {{"logs", "j-1", "--folow"}, "unknown option '--folow' (did you mean --follow?)"},
        {{"watc", "j-1"}, "unknown command 'watc' (did you mean watch?) (pacer --help lists them)"},
        {{"help", "sumbit"}, "help: unknown command 'sumbit' (did you mean submit?)"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *argv[8] = {"pacer"};
        int argc = 1;
        for (int k = 0; k < 6 && bad[i].args[k]; k++) argv[argc++] = (char *)bad[i].args[k];
        assert_int_equal(cli_args_parse(argc, argv, NULL, NULL, &a, err, sizeof err), -1);
        if (!strstr(err, bad[i].says)) fail_msg("case %zu: '%s' does not say '%s'", i, err, bad[i].says);
    }
    /* far from every name: no suggestion */
    char *argv[] = {"pacer", "ls", "--colour", NULL};
    assert_int_equal(cli_args_parse(3, argv, NULL, NULL, &a, err, sizeof err), -1);
    assert_null(strstr(err, "did you mean"));
    char *argv2[] = {"pacer", "frobnicate", NULL};
    assert_int_equal(cli_args_parse(2, argv2, NULL, NULL, &a, err, sizeof err), -1);
    assert_string_equal(err, "unknown command 'frobnicate' (pacer --help lists them)");
    /* A bad URL from the environment is refused too, naming it. */
    assert_int_equal(parse(&a, err, "localhost:8080", NULL, "ls", NULL), -1);
    assert_non_null(strstr(err, "'localhost:8080'"));
}

static void test_args_help_text(void **state)
{
    capture_t c;
    cap_open(&c);
    cli_usage(c.f);
    char *text = cap_close(&c);
    size_t n;
    const cli_command_t *cmds = cli_commands(&n);
    for (size_t i = 0; i < n; i++) assert_non_null(strstr(text, cmds[i].name));
    assert_non_null(strstr(text, "PACER_URL"));
    assert_non_null(strstr(text, "exit status"));
    free(text);
    cap_open(&c);
    cli_command_help(c.f, cli_command_find("logs"));
    text = cap_close(&c);
    assert_non_null(strstr(text, "usage: pacer logs ID [options]"));
    assert_non_null(strstr(text, "-f, --follow"));
    assert_non_null(strstr(text, "--url URL"));
    assert_null(strstr(text, "--state")); /* not an option of logs */
    free(text);
}

/* ---- text ---------------------------------------------------------------------------------- */

static void test_clean_and_cut(void **state)
{
    char out[64];
    fmt_clean("plain", 0, out, sizeof out);
    assert_string_equal(out, "plain");
    /* Terminal escapes and other controls from outside are shown, not obeyed. */
    fmt_clean("a\033[2Jb\r\nc\x7f", 0, out, sizeof out);
    assert_string_equal(out, "a?[2Jb??c?");
    fmt_clean("x\xc2\x9b"
              "31m",
              0, out, sizeof out); /* C1 CSI, UTF-8 encoded */
    assert_string_equal(out, "x?31m");
    fmt_clean(NULL, 0, out, sizeof out);
    assert_string_equal(out, "");
    /* Cut by characters, never inside a UTF-8 sequence. */
    fmt_clean("0123456789", 8, out, sizeof out);
    assert_string_equal(out, "01234...");
    fmt_clean("\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", 4, out, sizeof out); /* ééééé */
    assert_string_equal(out, "\xc3\xa9...");
    fmt_clean("0123456789", 10, out, sizeof out);
    assert_string_equal(out, "0123456789");
    fmt_clean("\xc3\xa9\xc3\xa9\xc3\xa9", 0, out, 6); /* room for 2 of 3, none for "..." */
    assert_string_equal(out, "\xc3\xa9\xc3\xa9");     /* never half a sequence */
    fmt_clean("\xc3\xa9\xc3\xa9\xc3\xa9", 0, out, 4);
    assert_string_equal(out, "\xc3\xa9");
    assert_int_equal(fmt_width("h\xc3\xa9llo"), 5);
}

static void test_times(void **state)
{
    char b[32];
    fmt_age(12.7, b, sizeof b);
    assert_string_equal(b, "12s");
    fmt_age(125, b, sizeof b);
    assert_string_equal(b, "2m");
    fmt_age(7300, b, sizeof b);
    assert_string_equal(b, "2h");
    fmt_age(3 * 86400 + 5, b, sizeof b);
    assert_string_equal(b, "3d");
    fmt_age(-1, b, sizeof b);
    assert_string_equal(b, "-");
    fmt_age(NAN, b, sizeof b);
    assert_string_equal(b, "-");
    fmt_duration(0.25, b, sizeof b);
    assert_string_equal(b, "250ms");
    fmt_duration(83.9, b, sizeof b);
    assert_string_equal(b, "1m23s");
    fmt_duration(2 * 3600 + 5 * 60 + 9, b, sizeof b);
    assert_string_equal(b, "2h05m");
    fmt_duration(86400 * 3 + 3600 * 4, b, sizeof b);
    assert_string_equal(b, "3d04h");
    setenv("TZ", "UTC", 1);
    tzset();
    fmt_time(1715000000.5, b, sizeof b);
    assert_string_equal(b, "2024-05-06 12:53:20");
    fmt_time(0, b, sizeof b);
    assert_string_equal(b, "-");
}

/* ---- tables and the API's objects ---------------------------------------------------------------- */

static void test_table(void **state)
{
    static const char *const H[] = {"ID", "N", "NOTE"};
    table_t *t = table_new(3, H);
    assert_non_null(t);
    table_align_right(t, 1);
    const char *r1[] = {"j-1", "7", "caf\xc3\xa9"};
    const char *r2[] = {"j-100", "1234", NULL};
    const char *r3[] = {"j-2", "", "bell\a"};
    assert_int_equal(table_add(t, r1), 0);
    assert_int_equal(table_add(t, r2), 0);
    assert_int_equal(table_add(t, r3), 0);
    capture_t c;
    cap_open(&c);
    table_print(t, c.f);
    char *text = cap_close(&c);
    assert_string_equal(text, "ID        N  NOTE\n"
                              "j-1       7  caf\xc3\xa9\n"
                              "j-100  1234  \n"
                              "j-2          bell?\n");
    free(text);
    table_free(t);
    assert_null(table_new(0, H));
}

static void test_jobs_and_job(void **state)
{
    /* j-3: queued (requeued by a preemption): its queue place, not its reason; j-1: no owner */
    json_t *list = json_loads(
        "{\"jobs\": [{\"id\": \"j-3\", \"name\": \"c\", \"state\": \"QUEUED\", \"owner\": \"bob\", "
        "\"model\": \"mlp\", \"algorithm\": \"ssgd\", \"workers\": 2, \"submitted\": 1090, \"started\": null, "
        "\"finished\": null, \"restarts\": 0, \"reason\": \"preempted by j-9 at 1095.000, of a higher priority\", "
        "\"queue\": {\"position\": 1, \"reason\": \"slots\", \"estimated_start\": null}},"
        "{\"id\": \"j-2\", \"name\": \"b\", \"state\": \"RUNNING\", \"owner\": \"alice\", \"model\": \"mlp\", "
        "\"algorithm\": "
        "\"ssgd\", \"workers\": 4, \"submitted\": 1000, \"started\": 1010, \"finished\": null, \"restarts\": 1, "
        "\"reason\": \"rank 2 silent\\u001b[0m\"},"
        "{\"id\": \"j-1\", \"name\": \"a\", \"state\": \"SUCCEEDED\", \"model\": \"lenet5\", \"algorithm\": \"sgd\", "
        "\"workers\": 1, \"submitted\": 100, \"started\": 110, \"finished\": 200, \"restarts\": 0, \"reason\": \"\"}],"
        " \"total\": 5, \"offset\": 0, \"limit\": 2}",
        0, NULL);
    assert_non_null(list);
    capture_t c;
    cap_open(&c);
    fmt_jobs(c.f, list, 1100);
    char *text = cap_close(&c);
    assert_string_equal(
        text, "ID   STATE      NAME  OWNER  MODEL   ALGORITHM  WORKERS  AGE  RAN    RESTARTS  REASON\n"
              "j-3  QUEUED     c     bob    mlp     ssgd             2  10s  -             0  #1 slots, start "
              "not estimated\n"
              "j-2  RUNNING    b     alice  mlp     ssgd             4  1m   1m30s         1  rank 2 silent?[0m\n"
              "j-1  SUCCEEDED  a     -      lenet5  sgd              1  16m  1m30s         0  \n"
              "(3 of 5 jobs; --limit N shows more)\n");
    free(text);
    json_decref(list);
    list = json_loads("{\"jobs\": [], \"total\": 0}", 0, NULL);
    cap_open(&c);
    fmt_jobs(c.f, list, 0);
    text = cap_close(&c);
    assert_string_equal(text, "no jobs\n");
    free(text);
    json_decref(list);

    setenv("TZ", "UTC", 1);
    tzset();
    json_t *job = json_loads(
        "{\"id\": \"j-7\", \"name\": \"again\", \"state\": \"SUCCEEDED\", \"model\": \"lenet5\", \"algorithm\": "
        "\"ssgd\", \"workers\": 2, \"world\": 2, \"spec\": {\"epochs\": 3, \"batch_size\": 64, \"dataset\": "
        "{\"name\": \"fashion-mnist\"}}, \"submitted\": 1715000000, \"started\": 1715000001, \"finished\": "
        "1715000084, \"restarts\": 0, \"attempts\": 1, \"parent\": \"j-3\", \"retries\": [\"j-8\", \"j-9\"], "
        "\"summary\": {\"test_accuracy\": 0.8123, \"test_loss\": 0.5, \"train_loss\": 0.45, \"steps\": 96, "
        "\"wall_s\": 80.5, \"train_samples_per_s\": 2440.4, \"dataset\": {\"classes\": 10, \"train_samples\": 60000, "
        "\"test_samples\": 10000, \"shape\": [1, 28, 28], \"cache\": null}}, \"log\": \"/var/jobs/j-7/log\", \"checkpoints\": "
        "{\"items\": [{\"file\": \"again.step96-epoch3-acc812300.ckpt\", \"step\": 96, \"epoch\": 3, "
        "\"test_accuracy\": 0.8123, \"bytes\": 494840, \"best\": true, \"latest\": true}, {\"file\": "
        "\"again.step90-epoch2.ckpt\", \"step\": 90, \"epoch\": 2, \"test_accuracy\": null, \"bytes\": 494840, "
        "\"best\": false, \"latest\": false}], \"total_bytes\": 989680}}",
        0, NULL);
    assert_non_null(job);
    cap_open(&c);
    fmt_job(c.f, job, 1715000100);
    text = cap_close(&c);
    assert_string_equal(text, "id             j-7\n"
                              "name           again\n"
                              "state          SUCCEEDED\n"
                              "model          lenet5, ssgd, 2 workers\n"
                              "data           fashion-mnist, 3 epochs, batch 64\n"
                              "submitted      2024-05-06 12:53:20 (1m ago)\n"
                              "started        2024-05-06 12:53:21\n"
                              "finished       2024-05-06 12:54:44 (ran 1m23s)\n"
                              "restarts       0 (1 attempt)\n"
                              "parent         j-3\n"
                              "retries        j-8, j-9\n"
                              "result         test accuracy 0.8123, test loss 0.5000, train loss 0.4500; 96 steps, "
                              "80.5 s, 2440 samples/s\n"
                              "dataset        10 classes, 60000 train / 10000 test samples, 1x28x28\n"
                              "log            /var/jobs/j-7/log\n"
                              "checkpoints    2 kept, 966.5 KiB\n"
                              "               step 96 (3 epochs done), accuracy 0.8123, 483.2 KiB, latest, best\n"
                              "               step 90 (2 epochs done), not evaluated, 483.2 KiB\n");
    free(text);
    json_decref(job);

    /* A user's data set: its path and format, then what the worker found and cached. */
    job = json_loads("{\"id\": \"j-8\", \"spec\": {\"epochs\": 1, \"batch_size\": 8, \"dataset\": {\"name\": "
                     "\"fashion-mnist\", \"format\": \"npz\", \"path\": \"/data/d.npz\"}}, \"summary\": {\"dataset\": "
                     "{\"classes\": 3, \"train_samples\": 10, \"test_samples\": 4, \"shape\": [3, 32, 32], \"cache\": "
                     "{\"path\": \"/var/data-cache/d.npz-00ff.pdc\", \"built\": false, \"bytes\": 45056}}}}",
                     0, NULL);
    assert_non_null(job);
    cap_open(&c);
    fmt_job(c.f, job, 1715000100);
    text = cap_close(&c);
    assert_non_null(strstr(text, "data           /data/d.npz (npz), 1 epoch, batch 8\n")); /* not "1 epochs" */
    assert_non_null(strstr(text, "dataset        3 classes, 10 train / 4 test samples, 3x32x32; cache "
                                 "/var/data-cache/d.npz-00ff.pdc (44.0 KiB, mapped, nothing decoded)\n"));
    free(text);
    json_decref(job);

    /* A summary's figures that were not measured (a run resumed after its last epoch:
     * no training time; a simulation that skipped the compute: no loss or accuracy) are
     * shown as "-", never as 0 or nan (issue 29). */
    job = json_loads("{\"id\": \"j-8\", \"state\": \"SUCCEEDED\", \"summary\": {\"test_accuracy\": null, \"test_loss\": "
                     "null, \"train_loss\": 0.25, \"steps\": 40, \"wall_s\": 1.5, \"train_samples_per_s\": null}}",
                     0, NULL);
    assert_non_null(job);
    cap_open(&c);
    fmt_job(c.f, job, 1715000100);
    text = cap_close(&c);
    assert_non_null(strstr(text, "result         test accuracy -, test loss -, train loss 0.2500; 40 steps, 1.5 s, - "
                                 "samples/s\n"));
    free(text);
    json_decref(job);

    /* Counts of one are singular (issue 42: "1 epochs"), whatever they count. */
    job = json_loads("{\"id\": \"j-9\", \"model\": \"mlp\", \"algorithm\": \"sgd\", \"workers\": 1, \"world\": 1, "
                     "\"attempts\": 2, \"restarts\": 1, \"spec\": {\"epochs\": 1, \"batch_size\": 8, \"dataset\": "
                     "{\"name\": \"mnist\"}}, \"summary\": {\"steps\": 1, \"dataset\": {\"classes\": 1, "
                     "\"train_samples\": 1, \"test_samples\": 1, \"shape\": [1, 2, 2]}}}",
                     0, NULL);
    assert_non_null(job);
    cap_open(&c);
    fmt_job(c.f, job, 1715000100);
    text = cap_close(&c);
    assert_non_null(strstr(text, "model          mlp, sgd, 1 worker\n"));
    assert_non_null(strstr(text, "data           mnist, 1 epoch, batch 8\n"));
    assert_non_null(strstr(text, "restarts       1 (2 attempts)\n"));
    assert_non_null(strstr(text, "; 1 step, - s, - samples/s\n"));
    assert_non_null(strstr(text, "dataset        1 class, 1 train / 1 test sample, 1x2x2\n"));
    free(text);
    json_decref(job);
}

/* `pacer get`: every key, the longest ones included ("oversubscribed", "checkpoints"),
 * leaves its value in the same column; a checkpoint says how many epochs were done
 * when it was written, not an epoch number (step 1600 of 1875-step epochs is in epoch 2,
 * with 1 done). */
static void test_job_keys_aligned(void **state)
{
    setenv("TZ", "UTC", 1);
    tzset();
    json_t *job = json_loads(
        "{\"id\": \"j-5\", \"name\": \"big\", \"owner\": \"bob\", \"state\": \"QUEUED\", \"reason\": \"r\", "
        "\"preempted_by\": \"j-9\", \"preempted_at\": 1715000000, \"placement\": {\"hosts_by_class\": {\"x1\": "
        "[\"a\"]}, \"reason\": \"fast\"}, \"resizes\": [{\"from\": 4, \"to\": 2, \"preempted_by\": \"j-9\", "
        "\"time\": 1715000000}], \"stall_text\": \"rank 0 waiting\", \"queue\": {\"position\": 1, \"reason\": "
        "\"slots\", \"detail\": \"d\", \"estimated_start\": 1715000200}, \"oversubscribed\": \"8 ranks on 2 slots: "
        "oversubscribed 4x\", \"cancel_requested\": true, \"model\": \"lenet5\", \"algorithm\": \"ssgd\", "
        "\"workers\": 8, \"world\": 8, \"spec\": {\"epochs\": 2, \"batch_size\": 32, \"dataset\": {\"name\": "
        "\"mnist\"}}, \"submitted\": 1715000000, \"started\": 1715000001, \"restarts\": 1, \"attempts\": 2, "
        "\"health\": {\"state\": \"ok\"}, \"lr_scale\": 0.5, \"parent\": \"j-1\", \"retries\": [\"j-6\"], "
        "\"summary\": {\"steps\": 1, \"dataset\": {\"classes\": 10, \"train_samples\": 1, \"test_samples\": 1, "
        "\"shape\": [1, 28, 28]}}, \"log\": \"/l\", \"checkpoint\": \"/c\", \"checkpoints\": {\"items\": [{\"step\": "
        "1600, \"epoch\": 1, \"test_accuracy\": null, \"bytes\": 1}, {\"step\": 1500, \"epoch\": 0, \"bytes\": 1}, "
        "{\"step\": 2, \"epoch\": -1, \"bytes\": 1}], \"total_bytes\": 3}}",
        0, NULL);
    assert_non_null(job);
    capture_t c;
    cap_open(&c);
    fmt_job(c.f, job, 1715000100);
    char *text = cap_close(&c);
    assert_non_null(strstr(text, "\noversubscribed 8 ranks on 2 slots"));
    assert_non_null(strstr(text, "               step 1600 (1 epoch done), not evaluated, 1 B\n"));
    assert_non_null(strstr(text, "               step 1500 (0 epochs done), "));
    assert_non_null(strstr(text, "               step 2 (? epochs done), ")); /* -1: not known */
    int lines = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"), lines++) {
        /* the value starts at column 15 of every line: a key never pushes it right */
        if (strlen(line) < 16 || line[14] != ' ' || line[15] == ' ') fail_msg("misaligned: '%s'", line);
    }
    assert_true(lines >= 25); /* every optional key was there */
    free(text);
    json_decref(job);
}

/* `pacer export` of a job without model.onnx (the API's 404 no-model): the reason per
 * state, never "will write it" for a job that ended before its first checkpoint. */
static void test_no_model(void **state)
{
    static const struct {
        const char *job, *want;
    } cases[] = {
        {"{\"id\": \"j-1\", \"state\": \"FAILED\", \"reason\": \"worker exited 1: dataset: no such file\", "
         "\"checkpoints\": {\"items\": [], \"total_bytes\": 0}}",
         "job j-1 failed before its first checkpoint (worker exited 1: dataset: no such file), so it has no trained "
         "model to export"},
        {"{\"id\": \"j-2\", \"state\": \"FAILED\"}",
         "job j-2 failed before its first checkpoint, so it has no trained model to export"},
        {"{\"id\": \"j-3\", \"state\": \"CANCELLED\", \"reason\": \"cancelled\"}",
         "job j-3 was cancelled before its first checkpoint (cancelled), so it has no trained model to export"},
        {"{\"id\": \"j-4\", \"state\": \"FAILED\", \"checkpoints\": {\"items\": [{\"step\": 10}]}}",
         "job j-4 ended FAILED, but the coordinator has no model.onnx for it (pacer logs j-4 may say why)"},
        {"{\"id\": \"j-5\", \"state\": \"SUCCEEDED\", \"simulated\": true}",
         "job j-5 ran on a simulated cluster, whose ranks train no weights: there is no model to export"},
        {"{\"id\": \"j-6\", \"state\": \"QUEUED\"}",
         "job j-6 is QUEUED: it has no model yet; its worker writes one with each checkpoint and at the end"},
        {"{\"id\": \"j-7\", \"state\": \"RUNNING\"}",
         "job j-7 is RUNNING and has not written a checkpoint yet: its worker writes the model with each checkpoint "
         "and at the end"},
        {"{\"id\": \"j-8\\u001b[2J\", \"state\": \"FAILED\", \"reason\": \"x\\u0007\"}", /* a hostile answer */
         "job j-8?[2J failed before its first checkpoint (x?), so it has no trained model to export"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char out[600];
        json_t *job = json_loads(cases[i].job, 0, NULL);
        assert_non_null(job);
        fmt_no_model(job, "model.onnx", out, sizeof out);
        assert_string_equal(out, cases[i].want);
        json_decref(job);
    }
}

/* The catalog's answers as tables (GET /api/v1/models, /models/{name}, /datasets); a
 * figure the answer lacks is "-", never 0. */
static void test_models_and_datasets(void **state)
{
    json_t *list = json_loads(
        "{\"models\": [{\"name\": \"lenet5\", \"title\": \"LeNet-5\", \"source\": \"builtin\", \"input\": "
        "{\"channels\": 1, \"height\": 28, \"width\": 28}, \"classes\": 10, \"layers\": 11, \"parameters\": 61706, "
        "\"buffers\": 0, \"flops_per_sample\": 841174, \"memory\": {\"model_bytes\": 855560, \"bytes_per_sample\": "
        "88416}, \"dataset\": \"fashion-mnist\"}, {\"name\": \"net\", \"title\": \"net\", \"source\": \"onnx\", "
        "\"input\": {\"channels\": 3, \"height\": 224, \"width\": 224}, \"classes\": 1000, \"layers\": 175, "
        "\"parameters\": 25557032, \"buffers\": 53120, \"flops_per_sample\": 8.2e9, \"dataset\": null}]}",
        0, NULL);
    assert_non_null(list);
    capture_t c;
    cap_open(&c);
    fmt_models(c.f, list);
    char *text = cap_close(&c);
    assert_string_equal(text,
                        "NAME    SOURCE   INPUT      CLASSES  PARAMS  FLOPS/SAMPLE  MODEL MEMORY  PER SAMPLE  DATASET\n"
                        "lenet5  builtin  1x28x28         10   61.7K        841.2K     835.5 KiB    86.3 KiB  "
                        "fashion-mnist\n"
                        "net     onnx     3x224x224     1000   25.6M          8.2G             -           -  -\n");
    free(text);
    cap_open(&c);
    fmt_model(c.f, json_array_get(json_object_get(list, "models"), 0));
    text = cap_close(&c);
    assert_string_equal(text, "name           lenet5\n"
                              "title          LeNet-5\n"
                              "source         builtin\n"
                              "input          1x28x28 images, 10 classes\n"
                              "layers         11\n"
                              "parameters     61706 (and 0 buffer floats)\n"
                              "flops          841.2K forward, a sample\n"
                              "memory         835.5 KiB a rank + 86.3 KiB a sample of its largest batch (+ its data)\n"
                              "dataset        fashion-mnist\n");
    free(text);
    json_decref(list);
    list = json_loads("{\"models\": []}", 0, NULL);
    cap_open(&c);
    fmt_models(c.f, list);
    text = cap_close(&c);
    assert_string_equal(text, "no models\n");
    free(text);
    json_decref(list);

    list = json_loads("{\"datasets\": [{\"name\": \"fashion-mnist\", \"format\": \"idx\", \"input\": {\"channels\": 1, "
                      "\"height\": 28, \"width\": 28}, \"classes\": 10, \"train_samples\": 60000, \"test_samples\": "
                      "10000, \"present\": true, \"path\": \"/usr/share/datasets/fashion-mnist\"}, {\"name\": "
                      "\"cifar10\", \"format\": \"cifar\", \"input\": {\"channels\": 3, \"height\": 32, \"width\": "
                      "32}, \"classes\": 10, \"train_samples\": 50000, \"test_samples\": 10000, \"present\": false, "
                      "\"path\": null}], \"data_roots\": []}",
                      0, NULL);
    assert_non_null(list);
    cap_open(&c);
    fmt_datasets(c.f, list);
    text = cap_close(&c);
    assert_string_equal(text,
                        "NAME           FORMAT  INPUT    CLASSES  TRAIN   TEST  HERE\n"
                        "fashion-mnist  idx     1x28x28       10  60000  10000  /usr/share/datasets/fashion-mnist\n"
                        "cifar10        cifar   3x32x32       10  50000  10000  -\n");
    free(text);
    json_decref(list);
}

static void test_problem_and_states(void **state)
{
    char out[512];
    const char *p = "{\"type\": \"urn:pacer:problem:invalid-spec\", \"title\": \"Invalid job spec\", \"status\": 400,"
                    " \"detail\": \"optimizer.lr: must be > 0\", \"field\": \"optimizer.lr\"}";
    fmt_problem(400, p, strlen(p), out, sizeof out);
    assert_string_equal(out, "Invalid job spec: optimizer.lr: must be > 0 (HTTP 400, field optimizer.lr)");
    p = "{\"title\": \"Invalid query parameter\", \"detail\": \"limit: must be >= 1\", \"parameter\": \"limit\"}";
    fmt_problem(400, p, strlen(p), out, sizeof out);
    assert_string_equal(out, "Invalid query parameter: limit: must be >= 1 (HTTP 400, parameter limit)");
    p = "{\"title\": \"No such job\"}";
    fmt_problem(404, p, strlen(p), out, sizeof out);
    assert_string_equal(out, "No such job (HTTP 404)");
    p = "<html>\r\n<h1>502 Bad Gateway</h1>";
    fmt_problem(502, p, strlen(p), out, sizeof out);
    assert_string_equal(out, "HTTP 502: <html>");
    fmt_problem(500, NULL, 0, out, sizeof out);
    assert_string_equal(out, "HTTP 500");
    p = "{\"title\": \"x\\u001b]0;pwned\\u0007\", \"detail\": \"d\"}"; /* a hostile answer */
    fmt_problem(418, p, strlen(p), out, sizeof out);
    assert_string_equal(out, "x?]0;pwned?: d (HTTP 418)");

    assert_int_equal(fmt_state_exit("SUCCEEDED"), CLI_EXIT_OK);
    assert_int_equal(fmt_state_exit("FAILED"), CLI_EXIT_FAILED);
    assert_int_equal(fmt_state_exit("CANCELLED"), CLI_EXIT_CANCELLED);
    assert_int_equal(fmt_state_exit("RUNNING"), -1);
    assert_int_equal(fmt_state_exit(NULL), -1);
}

/* ---- Server-Sent Events ------------------------------------------------------------------------ */

typedef struct {
    char log[4096];
    int n, stop_at;
} sse_seen_t;

static int record(void *ctx, const char *type, const char *id, const char *data)
{
    sse_seen_t *s = ctx;
    size_t o = strlen(s->log);
    snprintf(s->log + o, sizeof s->log - o, "[%s|%s|%s]", type, id, data);
    return ++s->n == s->stop_at ? 7 : 0;
}

static const char STREAM[] = "retry: 2000\n\n"
                             ": keep-alive\n\n"
                             "event: state\nid: 1-0,2-0\ndata: {\"state\":\"RUNNING\"}\n\n"
                             "event: metrics\r\nid: 1-0,2-1\r\ndata: {\"a\":1,\r\ndata:  \"b\":2}\r\n\r\n"
                             "data:no space\rid: 9-9\r\r"
                             "id: 10-0\nevent: plan\n\n" /* no data: not dispatched, but the id counts */
                             "bogus: field\nevent:end\ndata\n\n";
static const char WANT[] = "[state|1-0,2-0|{\"state\":\"RUNNING\"}]"
                           "[metrics|1-0,2-1|{\"a\":1,\n \"b\":2}]"
                           "[message|9-9|no space]"
                           "[end|10-0|]";

static void test_sse_parser(void **state)
{
    /* Every split of the stream into two chunks (CRLF split too) gives the same events. */
    size_t len = strlen(STREAM);
    for (size_t cut = 0; cut <= len; cut++) {
        sse_seen_t seen = {"", 0, 0};
        sse_parser_t p;
        sse_init(&p, record, &seen);
        assert_int_equal(sse_feed(&p, STREAM, cut), 0);
        assert_int_equal(sse_feed(&p, STREAM + cut, len - cut), 0);
        if (strcmp(seen.log, WANT) != 0) fail_msg("split at %zu: %s", cut, seen.log);
        assert_int_equal(p.retry_ms, 2000);
        assert_string_equal(p.last_id, "10-0");
        sse_free(&p);
    }
    /* One byte at a time. */
    sse_seen_t seen = {"", 0, 0};
    sse_parser_t p;
    sse_init(&p, record, &seen);
    for (size_t i = 0; i < len; i++) assert_int_equal(sse_feed(&p, STREAM + i, 1), 0);
    assert_string_equal(seen.log, WANT);
    sse_free(&p);

    /* An id is taken over only at the blank line that ends its event: an event cut off by a
     * dropped connection is asked for again. */
    sse_seen_t s2 = {"", 0, 0};
    sse_init(&p, record, &s2);
    const char *part = "id: 1-0\ndata: x\n\nid: 2-0\ndata: y\n";
    assert_int_equal(sse_feed(&p, part, strlen(part)), 0);
    assert_string_equal(p.last_id, "1-0");
    sse_free(&p);

    /* The callback stops the stream with its value. */
    sse_seen_t s3 = {"", 0, 2};
    sse_init(&p, record, &s3);
    assert_int_equal(sse_feed(&p, STREAM, len), 7);
    assert_int_equal(s3.n, 2);
    sse_free(&p);

    /* An event (or a line) beyond SSE_EVENT_MAX is an error, not a growing buffer. */
    sse_seen_t s4 = {"", 0, 0};
    sse_init(&p, record, &s4);
    char *big = malloc(64 * 1024);
    memset(big, 'x', 64 * 1024);
    memcpy(big, "data: ", 6);
    int rc = 0;
    for (int i = 0; i < 20 && rc == 0; i++) rc = sse_feed(&p, big, 64 * 1024);
    assert_int_equal(rc, -1);
    sse_free(&p);
    sse_init(&p, record, &s4);
    big[64 * 1024 - 1] = '\n';
    rc = 0;
    for (int i = 0; i < 20 && rc == 0; i++) rc = sse_feed(&p, big, 64 * 1024); /* many data lines, one event */
    assert_int_equal(rc, -1);
    assert_int_equal(s4.n, 0);
    sse_free(&p);
    free(big);
}

/* ---- the progress view ------------------------------------------------------------------------- */

static json_t *jl(const char *s)
{
    json_t *j = json_loads(s, 0, NULL);
    assert_non_null(j);
    return j;
}

static int apply(progress_t *p, const char *ev, int *rank)
{
    json_t *j = jl(ev);
    int what = progress_event(p, j, rank);
    json_decref(j);
    return what;
}

/* A language model's watch: its speed in tokens/s (samples/s x its window, missing stays
 * "-") and its accuracy the next token's; an image job's columns stay as they were. */
static void test_progress_language_model(void **state)
{
    progress_t p;
    progress_init(&p, "j-5");
    json_t *job = jl("{\"id\": \"j-5\", \"name\": \"lm\", \"state\": \"RUNNING\", \"world\": 2, \"spec\":"
                     " {\"model\": {\"gpt\": {\"block_size\": 16}}, \"dataset\": {\"format\": \"text\"}}}");
    progress_job(&p, job);
    json_decref(job);
    assert_int_equal(p.block, 16);
    json_t *nodes = jl("{\"ranks\": [{\"rank\": 0, \"host\": \"a\", \"role\": \"worker\", \"step\": 5, \"epoch\": 1,"
                       " \"batch\": 8, \"loss\": 2.5, \"samples_per_s\": 100.25, \"test_accuracy\": 0.25},"
                       " {\"rank\": 1, \"role\": \"worker\", \"step\": 5, \"epoch\": 1, \"samples_per_s\": null}]}");
    progress_nodes(&p, nodes);
    json_decref(nodes);
    capture_t c;
    cap_open(&c);
    progress_print_header(&p, c.f);
    progress_print_rank(&p, 0, c.f);
    progress_print_rank(&p, 1, c.f);
    char *text = cap_close(&c);
    assert_string_equal(text,
                        "RANK  ROLE    HOST              EPOCH     STEP  BATCH      LOSS   TOKENS/S  STALE  NEXT_ACC\n"
                        "   0  worker  a                     1        5      8    2.5000       1604      -    0.2500\n"
                        "   1  worker  -                     1        5      -         -          -      -         -\n");
    free(text);
    cap_open(&c);
    progress_draw(&p, c.f, 1003, 120, 24);
    text = cap_close(&c);
    assert_non_null(strstr(text, "TOKENS/S"));
    assert_non_null(strstr(text, "NEXT_ACC"));
    assert_null(strstr(text, "SAMPLES/S"));
    free(text);
    progress_free(&p);
    /* a token data set under an imported model, before its summary: the window is not
     * known, so the speed stays in samples/s, the accuracy the next token's */
    progress_init(&p, "j-6");
    job = jl("{\"id\": \"j-6\", \"world\": 1, \"spec\": {\"model\": {\"onnx\": \"m\"}, \"dataset\":"
             " {\"format\": \"tokens\"}}}");
    progress_job(&p, job);
    json_decref(job);
    assert_int_equal(p.block, 0);
    cap_open(&c);
    progress_print_header(&p, c.f);
    text = cap_close(&c);
    assert_non_null(strstr(text, "SAMPLES/S"));
    assert_non_null(strstr(text, "NEXT_ACC"));
    free(text);
    progress_free(&p);
}

static void test_progress(void **state)
{
    progress_t p;
    progress_init(&p, "j-3");
    json_t *job = jl("{\"id\": \"j-3\", \"name\": \"demo\", \"state\": \"RUNNING\", \"world\": 3}");
    progress_job(&p, job);
    json_decref(job);
    assert_int_equal(p.nranks, 3);
    json_t *nodes = jl("{\"ranks\": [{\"rank\": 0, \"host\": \"a\", \"role\": \"worker\", \"step\": 5, \"epoch\": 1,"
                       " \"batch\": 32, \"loss\": 1.5, \"samples_per_s\": 100.25, \"staleness\": {\"mean\": 0.5},"
                       " \"updated\": 990}, {\"rank\": 1}, {\"rank\": 99999}]}");
    progress_nodes(&p, nodes);
    json_decref(nodes);
    assert_int_equal(p.nranks, 3); /* the out-of-range rank is ignored */
    assert_true(p.ranks[0].known);
    assert_false(p.ranks[1].known);

    int rank = -1;
    assert_int_equal(apply(&p,
                           "{\"type\": \"metrics\", \"job\": \"j-3\", \"kind\": \"step\", \"rank\": 2, \"role\":"
                           " \"worker\", \"host\": \"b\\u001b\", \"step\": 9, \"epoch\": 1, \"batch\": 64, \"loss\":"
                           " 0.61234, \"samples_per_s\": 5210.44, \"staleness\": {\"mean\": 2}, \"time\": 1000}",
                           &rank),
                     PROGRESS_RANK);
    assert_int_equal(rank, 2);
    assert_int_equal(apply(&p, "{\"type\": \"metrics\", \"job\": \"j-4\", \"rank\": 0}", &rank), PROGRESS_NONE);
    assert_int_equal(apply(&p, "{\"type\": \"metrics\", \"job\": \"j-3\", \"rank\": -1}", &rank), PROGRESS_NONE);
    assert_int_equal(apply(&p, "{\"type\": \"metrics\", \"job\": \"j-3\", \"rank\": 5000}", &rank), PROGRESS_NONE);
    assert_int_equal(apply(&p, "{\"type\": \"metrics\", \"job\": \"j-3\", \"rank\": \"0\"}", &rank), PROGRESS_NONE);
    assert_int_equal(apply(&p, "{\"type\": \"gossip\", \"job\": \"j-3\"}", &rank), PROGRESS_NONE);
    assert_int_equal(apply(&p, "{\"type\": \"plan\", \"job\": \"j-3\", \"version\": 4, \"batches\": [40, 88]}", &rank),
                     PROGRESS_PLAN);
    assert_string_equal(p.plan, "40,88");
    assert_int_equal(apply(&p,
                           "{\"type\": \"metrics\", \"job\": \"j-3\", \"rank\": 2, \"kind\": \"epoch\", "
                           "\"test_accuracy\": 0.8, \"time\": 1001}",
                           &rank),
                     PROGRESS_RANK);
    assert_true(fabs(p.ranks[2].loss - 0.61234) < 1e-9); /* an epoch record keeps what it lacks */

    capture_t c;
    cap_open(&c);
    progress_print_header(&p, c.f);
    progress_print_rank(&p, 2, c.f);
    progress_print_rank(&p, 1, c.f);
    progress_print_plan(&p, c.f);
    assert_int_equal(apply(&p,
                           "{\"type\": \"state\", \"job\": \"j-3\", \"state\": \"FAILED\", \"reason\": \"rank 1 "
                           "died\"}",
                           &rank),
                     PROGRESS_STATE);
    progress_print_state(&p, c.f);
    char *text = cap_close(&c);
    assert_string_equal(text,
                        "RANK  ROLE    HOST              EPOCH     STEP  BATCH      LOSS  SAMPLES/S  STALE  TEST_ACC\n"
                        "   2  worker  b?                    1        9     64    0.6123     5210.4    2.0    0.8000\n"
                        "   1  (no report yet)\n"
                        "-- j-3 batch plan v4: 40,88\n"
                        "-- j-3 FAILED: rank 1 died\n");
    free(text);

    /* Frames: the second replaces the first (cursor up by its height), lines never wrap,
     * and ranks beyond the terminal's height are summarised. */
    cap_open(&c);
    progress_draw(&p, c.f, 1003, 60, 24);
    assert_int_equal(p.drawn, 5); /* title, header, 3 ranks (a final state shows no reason line) */
    progress_draw(&p, c.f, 1003, 60, 24);
    text = cap_close(&c);
    assert_non_null(strstr(text, "\033[5A"));
    assert_non_null(strstr(text, "j-3  demo  FAILED  2/3 ranks reporting  plan v4 [40,88]"));
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        char *visible = strrchr(line, 'K'); /* after the last erase-line */
        if (visible && strncmp(visible - 3, "\r\033[2K", 5) == 0) assert_true(fmt_width(visible + 1) <= 59);
    }
    free(text);
    cap_open(&c);
    p.drawn = 0;
    progress_draw(&p, c.f, 1003, 200, 5);
    text = cap_close(&c);
    assert_non_null(strstr(text, "... 2 more ranks")); /* 5 rows: title, header, 1 rank, this line */
    assert_non_null(strstr(text, "   0  worker  a                     1        5     32    1.5000      100.2    0.5"
                                 "         -    13s")); /* wide terminal: the AGE column */
    free(text);
    progress_free(&p);
}

/* A watch into a pipe: a line per rank per epoch, not per step; step lines only with
 * --every, at most one per rank per that many seconds; never the same line twice in a row
 * (the final record repeats the last epoch's). */
static void test_progress_lines_due(void **state)
{
    progress_t p;
    progress_init(&p, "j-3");
    json_t *nodes = jl("{\"ranks\": [{\"rank\": 0, \"host\": \"a\", \"role\": \"worker\", \"step\": 5, \"epoch\": 1,"
                       " \"batch\": 32, \"loss\": 1.5, \"updated\": 990}, {\"rank\": 1}]}");
    progress_nodes(&p, nodes);
    json_decref(nodes);
    capture_t c;
    cap_open(&c);
    /* the watch's start: the node hash of a rank that reported; none for one that did not */
    assert_int_equal(progress_print_due(&p, 0, 100, 0, c.f), 1);
    assert_int_equal(progress_print_due(&p, 1, 100, 0, c.f), 0);
    assert_int_equal(progress_print_due(&p, 7, 100, 0, c.f), 0); /* no such rank */
    int rank = -1, printed = 0;
    char ev[256];
    /* two epochs of 16 steps each, one step a second: step records print nothing */
    for (int step = 6; step <= 32; step++) {
        snprintf(ev, sizeof ev,
                 "{\"type\": \"metrics\", \"job\": \"j-3\", \"kind\": \"step\", \"rank\": 0, \"step\": %d, "
                 "\"epoch\": %d, \"loss\": %g}",
                 step, (step - 1) / 16 + 1, 2.0 / step);
        assert_int_equal(apply(&p, ev, &rank), PROGRESS_RANK);
        printed += progress_print_due(&p, 0, 100 + step, 0, c.f);
        if (step == 16 || step == 32) {
            snprintf(ev, sizeof ev,
                     "{\"type\": \"metrics\", \"job\": \"j-3\", \"kind\": \"epoch\", \"rank\": 0, \"step\": %d, "
                     "\"epoch\": %d, \"loss\": 0.5, \"test_accuracy\": 0.%d}",
                     step, step / 16, step);
            assert_int_equal(apply(&p, ev, &rank), PROGRESS_RANK);
            printed += progress_print_due(&p, 0, 100 + step, 0, c.f);
        }
    }
    /* the final record: the last epoch's figures again, so no second line */
    assert_int_equal(apply(&p,
                           "{\"type\": \"metrics\", \"job\": \"j-3\", \"kind\": \"final\", \"rank\": 0, "
                           "\"step\": 32, \"epoch\": 2, \"loss\": 0.5, \"test_accuracy\": 0.32}",
                           &rank),
                     PROGRESS_RANK);
    printed += progress_print_due(&p, 0, 140, 0, c.f);
    assert_int_equal(printed, 2);
    char *text = cap_close(&c);
    assert_string_equal(text,
                        "   0  worker  a                     1        5     32    1.5000          -      -         -\n"
                        "   0  worker  a                     1       16     32    0.5000          -      -    0.1600\n"
                        "   0  worker  a                     2       32     32    0.5000          -      -    0.3200\n");
    free(text);

    /* --every 10: a step line when 10 s have passed since the rank's last line */
    cap_open(&c);
    printed = 0;
    for (int step = 33; step <= 60; step++) {
        snprintf(ev, sizeof ev,
                 "{\"type\": \"metrics\", \"job\": \"j-3\", \"kind\": \"step\", \"rank\": 0, \"step\": %d}", step);
        assert_int_equal(apply(&p, ev, &rank), PROGRESS_RANK);
        printed += progress_print_due(&p, 0, 140 + (step - 32), 10, c.f); /* one a second */
    }
    text = cap_close(&c);
    free(text);
    assert_int_equal(printed, 3); /* at 142, 152, 162: the rank's last line was epoch 2's, at 132 */
    /* later, the latest step (60) gets its line; asked again, time passed: no duplicate */
    cap_open(&c);
    assert_int_equal(progress_print_due(&p, 0, 1000, 10, c.f), 1);
    assert_int_equal(progress_print_due(&p, 0, 2000, 10, c.f), 0);
    text = cap_close(&c);
    assert_non_null(strstr(text, "       60 "));
    assert_ptr_equal(strchr(text, '\n'), text + strlen(text) - 1); /* one line */
    free(text);
    progress_free(&p);
}

/* The clear-text token rule (cliargs.h): decided from the URL's text alone. */
static void test_token_transport(void **state)
{
    (void)state;
    char err[512];
    static const char *const OK[] = {
        "http://127.0.0.1:8080", "http://localhost:8080/", "http://LOCALHOST",          "http://127.8.9.10/x",
        "http://[::1]:8080",     "https://10.0.0.5:8443",  "HTTPS://pacer.example.org", "http://evil@127.0.0.1:80",
    };
    for (size_t i = 0; i < sizeof OK / sizeof OK[0]; i++) {
        err[0] = 0;
        assert_int_equal(cli_token_transport_ok(OK[i], "tok", 0, err, sizeof err), 0);
    }
    static const char *const REFUSED[] = {
        "http://10.255.255.1:8080",  "http://pacer.example.org", "http://[::2]:80", "http://127.0.0.1@10.0.0.1/",
        "http://localhost.evil.org", "http://128.0.0.1",         "http://[::1",     "http://0.0.0.0:8080",
    };
    for (size_t i = 0; i < sizeof REFUSED / sizeof REFUSED[0]; i++) {
        err[0] = 0;
        assert_int_equal(cli_token_transport_ok(REFUSED[i], "tok", 0, err, sizeof err), -1);
        assert_non_null(strstr(err, "refusing to send the API token in clear text"));
        assert_non_null(strstr(err, "--allow-insecure-token"));
        /* allowed explicitly, or no token to send: nothing to refuse */
        assert_int_equal(cli_token_transport_ok(REFUSED[i], "tok", 1, err, sizeof err), 0);
        assert_int_equal(cli_token_transport_ok(REFUSED[i], NULL, 0, err, sizeof err), 0);
        assert_int_equal(cli_token_transport_ok(REFUSED[i], "", 0, err, sizeof err), 0);
    }
    assert_int_equal(cli_token_transport_ok("http://10.1.2.3", "tok", 0, err, sizeof err), -1);
    assert_non_null(strstr(err, "'10.1.2.3' is not a loopback address"));

    /* the options: global, after the command too */
    cli_args_t a;
    assert_int_equal(parse(&a, err, NULL, NULL, "ls", "--cacert", "/ca.pem", "--allow-insecure-token", NULL), 0);
    assert_string_equal(a.cacert, "/ca.pem");
    assert_int_equal(a.allow_insecure_token, 1);
    assert_int_equal(parse(&a, err, NULL, NULL, "--cacert=/x.pem", "watch", "j1", NULL), 0);
    assert_string_equal(a.cacert, "/x.pem");
    assert_int_equal(a.allow_insecure_token, 0);
}

/* pacer whoami: no arguments; the answer as four lines, "none" explained. */
static void test_whoami(void **state)
{
    (void)state;
    cli_args_t a;
    char err[ERRLEN];
    assert_int_equal(parse(&a, err, NULL, "tok", "whoami", "--json", NULL), 0);
    assert_int_equal(a.command->cmd, CMD_WHOAMI);
    assert_int_equal(a.json, 1);
    assert_int_equal(parse(&a, err, NULL, NULL, "whoami", "alice", NULL), -1);
    assert_non_null(strstr(err, "usage: pacer whoami"));
    static const struct {
        const char *json, *want;
    } cases[] = {
        {"{\"name\": \"alice\", \"role\": \"member\", \"auth\": \"user-token\", \"expires\": null}",
         "name           alice\nrole           member\nauth           user-token\nexpires        never\n"},
        {"{\"name\": null, \"role\": \"viewer\", \"auth\": \"anonymous\"}",
         "name           -\nrole           viewer\nauth           anonymous\nexpires        never\n"},
        {"{\"name\": \"admin\", \"role\": \"admin\", \"auth\": \"none\"}",
         "name           admin\nrole           admin\nauth           none (the coordinator has no token: it checks none, every "
         "local caller is the admin)\nexpires        never\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *who = json_loads(cases[i].json, 0, NULL);
        assert_non_null(who);
        capture_t c;
        cap_open(&c);
        fmt_whoami(c.f, who);
        char *text = cap_close(&c);
        assert_string_equal(text, cases[i].want);
        free(text);
        json_decref(who);
    }
    /* an expiring token: its time, not "never" */
    json_t *who = json_pack("{s:s, s:s, s:s, s:f}", "name", "dave", "role", "member", "auth", "user-token", "expires",
                            2000000000.0);
    capture_t c;
    cap_open(&c);
    fmt_whoami(c.f, who);
    char *text = cap_close(&c);
    assert_null(strstr(text, "never"));
    assert_non_null(strstr(text, "expires        20"));
    free(text);
    json_decref(who);
}

/* generate ID PROMPT: each option stored with its seen bit (only those given are sent),
 * malformed numbers refused by the option's name, the options refused on other commands. */
static void test_args_generate(void **state)
{
    cli_args_t a;
    char err[ERRLEN];
    assert_int_equal(parse(&a, err, NULL, NULL, "generate", "j-1", "Once upon", "--max-tokens", "64", "--temperature",
                           "0.8", "--top-k=40", "--seed", "7", "--checkpoint", "best", NULL),
                     0);
    assert_int_equal(a.command->cmd, CMD_GENERATE);
    assert_string_equal(a.arg, "j-1");
    assert_string_equal(a.arg2, "Once upon");
    assert_int_equal(a.max_tokens, 64);
    assert_true(a.temperature > 0.79 && a.temperature < 0.81);
    assert_int_equal(a.top_k, 40);
    assert_int_equal(a.seed, 7);
    assert_string_equal(a.checkpoint, "best");
    unsigned all = OPT_MAX_TOKENS | OPT_TEMPERATURE | OPT_TOP_K | OPT_SEED | OPT_CHECKPOINT;
    assert_int_equal(a.seen & all, all);

    assert_int_equal(parse(&a, err, NULL, NULL, "generate", "j-1", "--", "-starts with a dash", NULL), 0);
    assert_string_equal(a.arg2, "-starts with a dash");
    assert_int_equal(a.seen & all, 0); /* none given: none sent */
    assert_int_equal(parse(&a, err, NULL, NULL, "generate", "j-1", "x", "--temperature", "0", "--top-k", "0", NULL), 0);
    assert_int_equal(a.seen & (OPT_TEMPERATURE | OPT_TOP_K), OPT_TEMPERATURE | OPT_TOP_K); /* 0 is a value */

    static const char *const bad[][3] = {
        {"--max-tokens", "12x", "--max-tokens: '12x' is not a whole number from 1 to 1000000"},
        {"--max-tokens", "0", "--max-tokens: '0' is not a whole number"},
        {"--temperature", "-0.5", "--temperature: '-0.5' is not a number from 0 to 1e6"},
        {"--temperature", "inf", "--temperature: 'inf' is not a number"},
        {"--top-k", "-1", "--top-k: '-1' is not a whole number from 0 to 1000000"},
        {"--seed", "99999999999999999999", "--seed: '99999999999999999999' is not a whole number"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(parse(&a, err, NULL, NULL, "generate", "j-1", "x", bad[i][0], bad[i][1], NULL), -1);
        assert_non_null(strstr(err, bad[i][2]));
    }
    assert_int_equal(parse(&a, err, NULL, NULL, "generate", "j-1", NULL), -1);
    assert_string_equal(err, "usage: pacer generate ID PROMPT");
    assert_int_equal(parse(&a, err, NULL, NULL, "get", "j-1", "--top-k", "3", NULL), -1);
    assert_string_equal(err, "get: --top-k does not apply to get");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_args_commands_and_options),
        cmocka_unit_test(test_args_refusals),
        cmocka_unit_test(test_args_help_text),
        cmocka_unit_test(test_clean_and_cut),
        cmocka_unit_test(test_times),
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_jobs_and_job),
        cmocka_unit_test(test_job_keys_aligned),
        cmocka_unit_test(test_no_model),
        cmocka_unit_test(test_models_and_datasets),
        cmocka_unit_test(test_problem_and_states),
        cmocka_unit_test(test_sse_parser),
        cmocka_unit_test(test_progress),
        cmocka_unit_test(test_progress_language_model),
        cmocka_unit_test(test_progress_lines_due),
        cmocka_unit_test(test_token_transport),
        cmocka_unit_test(test_whoami),
        cmocka_unit_test(test_args_generate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
