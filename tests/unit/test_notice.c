/* tests/unit/test_notice.c - a stop on notice: the note a worker leaves (common/notice.h),
 * written and read back, every field of a hostile one refused by name, and the restart
 * policy's verdict on exit 75 (coordinator/supervise.h): RESTARTING at once, no restart
 * used, even when none is left. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "format.h"
#include "notice.h"
#include "supervise.h"

static void parse_refused(const char *text, const char *want)
{
    notice_t n;
    char err[256] = "";
    assert_int_equal(notice_parse(text, strlen(text), &n, err, sizeof err), -1);
    if (!strstr(err, want)) fail_msg("'%s': error '%s' does not name '%s'", text, err, want);
}

static void test_notice_round_trip(void **state)
{
    (void)state;
    char dir[] = "/tmp/pacer-notice-XXXXXX", path[256], err[256];
    assert_non_null(mkdtemp(dir));
    assert_int_equal(notice_path(path, sizeof path, dir, "job"), 0);
    notice_t n = {.signal = 15, .rank = 3, .at_step = 41, .checkpoint_step = 41}, back;
    snprintf(n.host, sizeof n.host, "pw2");
    assert_int_equal(notice_read(path, &back, err, sizeof err), 0); /* none yet */
    assert_int_equal(notice_write(path, &n, err, sizeof err), 0);
    assert_int_equal(notice_read(path, &back, err, sizeof err), 1);
    assert_int_equal(back.signal, 15);
    assert_int_equal(back.rank, 3);
    assert_string_equal(back.host, "pw2");
    assert_int_equal(back.at_step, 41);
    assert_int_equal(back.checkpoint_step, 41);
    unlink(path);
    rmdir(dir);
    char small[8];
    assert_int_equal(notice_path(small, sizeof small, dir, "job"), -1);
}

static void test_notice_refusals(void **state)
{
    (void)state;
    parse_refused("", "not a JSON object");
    parse_refused("[1]", "not a JSON object");
    parse_refused("{\"rank\":0,\"at_step\":1,\"checkpoint_step\":1}", "\"signal\" is missing");
    parse_refused("{\"signal\":99,\"rank\":0,\"at_step\":1,\"checkpoint_step\":1}", "\"signal\" 99 is outside");
    parse_refused("{\"signal\":15,\"rank\":-1,\"at_step\":1,\"checkpoint_step\":1}", "\"rank\" -1 is outside");
    parse_refused("{\"signal\":15,\"rank\":0,\"at_step\":1e3,\"checkpoint_step\":1}", "\"at_step\" is missing or not");
    parse_refused("{\"signal\":15,\"rank\":0,\"at_step\":9007199254740993,\"checkpoint_step\":1}", "\"at_step\"");
    parse_refused("{\"signal\":15,\"rank\":0,\"at_step\":5,\"checkpoint_step\":9}", "\"checkpoint_step\" 9 is outside");
    parse_refused("{\"signal\":15,\"rank\":0,\"at_step\":5,\"checkpoint_step\":5,\"host\":7}", "\"host\" is not");
    parse_refused("{\"signal\":15,\"rank\":0,\"at_step\":5,\"checkpoint_step\":5,\"host\":\"a b\"}", "not printable");
    parse_refused("{\"signal\":15,\"signal\":15,\"rank\":0,\"at_step\":5,\"checkpoint_step\":5}", "not a JSON object");
    char big[NOTICE_FILE_MAX + 2];
    memset(big, ' ', sizeof big);
    notice_t n;
    char err[128];
    assert_int_equal(notice_parse(big, sizeof big, &n, err, sizeof err), -1);
    assert_non_null(strstr(err, "bytes, more than"));
    char host[200];
    snprintf(host, sizeof host, "{\"signal\":15,\"rank\":0,\"at_step\":5,\"checkpoint_step\":-1,\"host\":\"%0100d\"}",
             0);
    parse_refused(host, "\"host\" is longer than 63 bytes");
}

static void test_supervise_notice(void **state)
{
    (void)state;
    sv_out_t o;
    sv_in_t in = {.outcome = SV_EXITED,
                  .code = NOTICE_EXIT_STATUS,
                  .restarts = 2,
                  .max_restarts = 2,
                  .backoff_base_s = 5,
                  .last_line = "notice: stopped after step 41"};
    supervise_decide(&in, &o);
    assert_int_equal(o.state, JOB_RESTARTING);
    assert_int_equal(o.notice, 1);
    assert_int_equal(o.restarts, 2); /* none used, and none needed */
    assert_true(o.delay_s == 0);
    assert_non_null(strstr(o.reason, "interrupted with notice"));
    in.code = 1; /* a failure with none left still fails */
    supervise_decide(&in, &o);
    assert_int_equal(o.state, JOB_FAILED);
    assert_int_equal(o.notice, 0);
}

/* pacer get's row for a job's interruptions (cli/format.c). */
static void test_get_row(void **state)
{
    (void)state;
    json_t *job = json_loads("{\"id\": \"j-1\", \"name\": \"n\", \"state\": \"RUNNING\", \"interruptions_total\": 2, "
                             "\"interruptions\": [{\"reason\": \"notice\", \"host\": \"pw1\", \"at_step\": 4, "
                             "\"checkpoint_step\": 4, \"lost_steps\": 0, \"at\": 1},"
                             "{\"reason\": \"notice\", \"host\": \"pw2\", \"at_step\": 41, \"checkpoint_step\": 40, "
                             "\"lost_steps\": 1, \"at\": 2}]}",
                             0, NULL);
    assert_non_null(job);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    fmt_job(f, job, 10);
    fclose(f);
    if (!strstr(text, "2 times; the last: notice on pw2 after step 41, resumed from step 40 (1 lost)"))
        fail_msg("pacer get shows no interruption row:\n%s", text);
    free(text);
    json_decref(job);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_notice_round_trip),
        cmocka_unit_test(test_notice_refusals),
        cmocka_unit_test(test_supervise_notice),
        cmocka_unit_test(test_get_row),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
