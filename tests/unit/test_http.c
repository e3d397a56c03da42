/* tests/unit/test_http.c - the HTTP layer (http/).
 *
 * The pure parts directly: route matching (404/405 and the Allow list), query parameters,
 * problem documents and the field of a spec error, the constant-time token comparison
 * and bearer parsing, the loopback rule, the Prometheus text, static paths, SSE ids and
 * frames, and that docs/openapi.json documents every route. Then the request state
 * machine end to end: a real server (http_start) on a free port in front of a
 * coordinator client whose Redis does not exist, spoken to over a socket: every refusal
 * that does not need Redis (401, 404, 405, 413, 415, 400) and the 503s that do.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <limits.h>
#include <math.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "auth.h"
#include "coordinator.h"
#include "handlers.h"
#include "jobstore.h"
#include "prom.h"
#include "query.h"
#include "respond.h"
#include "routes.h"
#include "server.h"
#include "sse.h"
#include "static.h"
#include "textgen.h"
#include "users.h"

/* ---- routes ------------------------------------------------------------------------------------ */

static void test_routes_match(void **state)
{
    route_match_t m;
    const route_t *r = routes_match("GET", "/api/v1/jobs/j-12/events", &m);
    assert_int_equal(m.status, 0);
    assert_ptr_equal(r->handler, handle_job_events);
    assert_int_equal(m.nparams, 1);
    assert_string_equal(m.params[0], "j-12");
    assert_true(r->flags & ROUTE_STREAM);

    r = routes_match("POST", "/api/v1/jobs", &m);
    assert_ptr_equal(r->handler, handle_jobs_submit);
    assert_true(r->flags & ROUTE_MUTATES);
    assert_true(r->flags & ROUTE_JSON_BODY);
    r = routes_match("DELETE", "/api/v1/jobs/j-1", &m);
    assert_ptr_equal(r->handler, handle_job_cancel);
    r = routes_match("POST", "/api/v1/jobs/j-1/retry", &m);
    assert_ptr_equal(r->handler, handle_job_retry);
    assert_true(r->flags & ROUTE_MUTATES);
    assert_false(r->flags & ROUTE_JSON_BODY);
    assert_string_equal(m.params[0], "j-1");
    r = routes_match("HEAD", "/api/v1/jobs/j-1", &m); /* HEAD runs the GET route */
    assert_ptr_equal(r->handler, handle_job_get);
    r = routes_match("GET", "/static/vendor/uPlot.min.css", &m);
    assert_ptr_equal(r->handler, handle_static);
    assert_string_equal(m.params[0], "vendor/uPlot.min.css");
    r = routes_match("GET", "/", &m);
    assert_ptr_equal(r->handler, handle_index);
}

static void test_routes_not_found_and_method(void **state)
{
    route_match_t m;
    const char *missing[] = {
        "/api/v1/jobs/",       "/api/v1/job", "/api/v1/jobs/j-1/nodes/x", "/api/v2/jobs", "//", "", "/static/",
        "/api/v1/jobs//nodes", "relative"};
    for (size_t i = 0; i < sizeof missing / sizeof missing[0]; i++) {
        const route_t *r = routes_match("GET", missing[i], &m);
        assert_int_equal(m.status, 404);
        assert_ptr_equal(r->handler, handle_not_found); /* the sentinel */
        assert_null(r->method);
    }
    routes_match("PUT", "/api/v1/jobs", &m);
    assert_int_equal(m.status, 405);
    assert_string_equal(m.allow, "GET, HEAD, POST");
    routes_match("POST", "/api/v1/jobs/j-1", &m);
    assert_int_equal(m.status, 405);
    assert_string_equal(m.allow, "GET, HEAD, DELETE");
    routes_match("DELETE", "/metrics", &m);
    assert_int_equal(m.status, 405);
    assert_string_equal(m.allow, "GET, HEAD");
    /* A parameter longer than ROUTE_PARAM_LEN does not match (no truncation). */
    char long_path[ROUTE_PARAM_LEN + 64];
    snprintf(long_path, sizeof long_path, "/api/v1/jobs/");
    memset(long_path + strlen(long_path), 'x', ROUTE_PARAM_LEN);
    long_path[sizeof long_path - 1] = 0;
    routes_match("GET", long_path, &m);
    assert_int_equal(m.status, 404);
}

/* Every route is in docs/openapi.json with its method ("{path*}" is "{path}" there). */
static void test_routes_target_nul(void **state)
{
    assert_int_equal(routes_target_nul("/api/v1/models/a%00b"), ROUTE_NUL_PATH);
    assert_int_equal(routes_target_nul("/a%00?x=%00"), ROUTE_NUL_PATH);
    assert_int_equal(routes_target_nul("/a?x=1%00"), ROUTE_NUL_QUERY);
    assert_int_equal(routes_target_nul("/a%000"), ROUTE_NUL_PATH);
    assert_int_equal(routes_target_nul("/a%0"), ROUTE_NUL_NONE);
    assert_int_equal(routes_target_nul("/a%2500"), ROUTE_NUL_NONE); /* "%00" spelled out, not a NUL */
    assert_int_equal(routes_target_nul(NULL), ROUTE_NUL_NONE);
    assert_null(auth_host_headers_problem(1, "localhost", 9));
    assert_null(auth_host_headers_problem(0, NULL, 0));
    assert_non_null(strstr(auth_host_headers_problem(2, "localhost", 9), "more than one Host"));
    assert_non_null(strstr(auth_host_headers_problem(1, "local\0host", 10), "NUL"));
}

/* Issue 45: every route that changes something has its role rule (routes_action), none
 * falls back to admin-only by accident, and the plain reads are reads. */
static void test_routes_actions(void **state)
{
    (void)state;
    size_t n;
    const route_t *r = routes_table(&n);
    for (size_t i = 0; i < n; i++) {
        int act = routes_action(&r[i]);
        if (r[i].flags & ROUTE_MUTATES) {
            if (act == USER_ACT_READ || act == USER_ACT_ADMIN)
                fail_msg("%s %s changes something but has no action in routes.c's table", r[i].method, r[i].pattern);
        } else if (act != USER_ACT_READ && act != USER_ACT_USERS) {
            fail_msg("%s %s reads but has action %d", r[i].method, r[i].pattern, act);
        }
    }
    route_t unknown = {"POST", "/api/v1/new-thing", NULL, ROUTE_MUTATES};
    assert_int_equal(routes_action(&unknown), USER_ACT_ADMIN);
}

/* Each JSON route's 415 says what that route reads: only job submission asks for the job
 * spec (a generate request without Content-Type was told to "send the job spec"). */
static void test_routes_json_bodies(void **state)
{
    (void)state;
    size_t n;
    const route_t *r = routes_table(&n);
    for (size_t i = 0; i < n; i++) {
        if (!(r[i].flags & ROUTE_JSON_BODY)) continue;
        const char *what = routes_json_body(&r[i]);
        if (strcmp(what, "a JSON body") == 0)
            fail_msg("%s %s reads JSON but routes.c does not say what", r[i].method, r[i].pattern);
        const int submit = strcmp(r[i].method, "POST") == 0 && strcmp(r[i].pattern, "/api/v1/jobs") == 0;
        if (!submit && strstr(what, "job spec")) fail_msg("%s %s asks for %s", r[i].method, r[i].pattern, what);
    }
    route_match_t m;
    assert_non_null(strstr(routes_json_body(routes_match("POST", "/api/v1/jobs/j-1/generate", &m)),
                           "the generate request ({\"prompt\""));
    assert_string_equal(routes_json_body(routes_match("POST", "/api/v1/jobs", &m)), "the job spec");
}

/* A body jansson refuses: each fault has its own message, with where and jansson's text
 * (they all used to be "body: must be a JSON object"); a body that is JSON but no object
 * still gets that. The generate request and the drain alike. */
static void test_body_json_faults(void **state)
{
    (void)state;
    static const struct {
        const char *body, *want;
    } cases[] = {
        {"{\"prompt\": \"a\377\"}",
         "body: not UTF-8 at byte 13 (line 1 column 13; JSON text is UTF-8): unable to decode byte 0xff"},
        {"{\"prompt\": \"a\xc0\xaf\"}", "body: not UTF-8 at byte 13"},
        {"{\"prompt\": \"\\ud800\"}", "body: a lone surrogate at line 1 column 19"},
        {"{\"prompt\": \"\\udc00x\"}", "body: a lone surrogate at"},
        {"{\"prompt\": \"a\", \"temperature\": NaN}", "body: NaN and Infinity are not JSON numbers (line 1 column 34)"},
        {"{\"prompt\": \"a\", \"temperature\": Infinity}", "body: NaN and Infinity are not JSON numbers"},
        {"{\"prompt\": \"a\", \"prompt\": \"b\"}", "body: a key given twice at line 1 column 24 (give each key once)"},
        {"{\"prompt\": \"a\", \"seed\": 1e999}", "body: a number out of range at line 1 column"},
        {"{\"prompt\": \"\\x\"}", "body: an invalid escape at line 1 column"},
        {"{\"prompt\": ", "body: invalid JSON at line 1 column"},
        {"[1]", "body: must be a JSON object {\"prompt\""},
    };
    char err[512];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        genreq_t r;
        err[0] = 0;
        assert_int_equal(genreq_parse(cases[i].body, strlen(cases[i].body), &r, err, sizeof err), -1);
        if (!strstr(err, cases[i].want))
            fail_msg("generate body %s: '%s', want '%s'", cases[i].body, err, cases[i].want);
    }
    double deadline;
    char reason[64];
    static const char *dup = "{\"deadline_s\": 5, \"deadline_s\": 6}", *utf = "{\"reason\": \"x\377\"}";
    assert_int_equal(drain_body_parse(dup, strlen(dup), &deadline, reason, sizeof reason, err, sizeof err), -1);
    assert_non_null(strstr(err, "body: a key given twice at line 1 column 30"));
    assert_int_equal(drain_body_parse(utf, strlen(utf), &deadline, reason, sizeof reason, err, sizeof err), -1);
    assert_non_null(strstr(err, "body: not UTF-8 at byte 13"));
}

/* The generate request's numbers are refused by their JSON names, in the ranges
 * pacer-generate's own flags take: a subnormal temperature (which strtod there refuses,
 * and which came back naming --temperature) is refused here; the smallest normal one and
 * 0 pass. */
static void test_genreq_ranges(void **state)
{
    (void)state;
    static const struct {
        const char *body, *want;
    } bad[] = {
        {"{\"prompt\": \"a\", \"temperature\": 1e-310}",
         "temperature: 1e-310 is below the smallest normal number 2.2250738585072014e-308: give 0 (greedy) or a number "
         "from 2.2250738585072014e-308 to 100"},
        {"{\"prompt\": \"a\", \"temperature\": 4.9e-324}", "temperature: 4.94066e-324 is below the smallest normal"},
        {"{\"prompt\": \"a\", \"temperature\": 100.5}", "temperature: must be a number from 0 (greedy) to 100"},
        {"{\"prompt\": \"a\", \"top_k\": 1048577}", "top_k: must be an integer from 0 to 1048576"},
        {"{\"prompt\": \"a\", \"top_k\": 1.5}", "top_k: must be an integer from 0 to 1048576"},
        {"{\"prompt\": \"a\", \"max_tokens\": 0}", "max_tokens: must be an integer from 1 to 1024"},
        {"{\"prompt\": \"a\", \"max_tokens\": 1e3}", "max_tokens: must be an integer from 1 to 1024"},
        {"{\"prompt\": \"a\", \"top_p\": 0.9}", "top_p: unknown field"},
        {"{\"prompt\": \"a\", \"precision\": \"fp16\"}", "precision: must be \"fp32\" or \"bf16\""},
        {"{\"prompt\": \"a\", \"precision\": 16}", "precision: must be \"fp32\" or \"bf16\""},
    };
    char err[512];
    genreq_t r;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        assert_int_equal(genreq_parse(bad[i].body, strlen(bad[i].body), &r, err, sizeof err), -1);
        if (!strstr(err, bad[i].want)) fail_msg("%s: '%s', want '%s'", bad[i].body, err, bad[i].want);
        if (strstr(err, "--")) fail_msg("%s: '%s' names a flag", bad[i].body, err);
    }
    static const char *good[] = {"{\"prompt\": \"a\", \"temperature\": 2.2250738585072014e-308}",
                                 "{\"prompt\": \"a\", \"temperature\": 0}",
                                 "{\"prompt\": \"a\", \"temperature\": 100, \"top_k\": 1048576, \"max_tokens\": 1024}",
                                 "{\"prompt\": \"a\", \"precision\": \"bf16\"}"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        if (genreq_parse(good[i], strlen(good[i]), &r, err, sizeof err) != 0) fail_msg("%s: refused: %s", good[i], err);
        genreq_free(&r);
    }
}

static void test_routes_documented(void **state)
{
    json_error_t e;
    json_t *doc = json_load_file("docs/openapi.json", 0, &e);
    if (!doc) {
        print_message("docs/openapi.json: %s (run from the repo root)\n", e.text);
        fail();
    }
    assert_string_equal(json_string_value(json_object_get(doc, "openapi")), "3.0.3");
    size_t n;
    const route_t *t = routes_table(&n);
    assert_true(n >= 15);
    for (size_t i = 0; i < n; i++) {
        char path[128], method[16];
        snprintf(path, sizeof path, "%s", t[i].pattern);
        char *star = strstr(path, "*}");
        if (star) memmove(star, star + 1, strlen(star));
        size_t k;
        for (k = 0; t[i].method[k] && k + 1 < sizeof method; k++) method[k] = (char)(t[i].method[k] | 0x20);
        method[k] = 0;
        json_t *op = json_object_get(json_object_get(json_object_get(doc, "paths"), path), method);
        if (!op) print_message("%s %s is not in docs/openapi.json\n", t[i].method, path);
        assert_non_null(op);
    }
    json_decref(doc);
}

/* ---- query --------------------------------------------------------------------------------------- */

static void test_query_long(void **state)
{
    query_t q;
    query_init(&q);
    query_add(&q, "limit", "5000");
    query_add(&q, "offset", "12");
    query_add(&q, "tail", "12abc");
    query_add(&q, "neg", "-3");
    query_add(&q, "huge", "99999999999999999999999");
    query_add(&q, "empty", "");
    query_add(&q, "limit", "7"); /* a repeated key: the first wins */
    long v = -1;
    char err[128];
    assert_int_equal(query_long(&q, "limit", 1, 1000, 1, &v, err, sizeof err), 1);
    assert_int_equal(v, 1000); /* capped */
    assert_int_equal(query_long(&q, "limit", 1, 1000, 0, &v, err, sizeof err), -1);
    assert_string_equal(err, "limit: must be an integer between 1 and 1000");
    assert_int_equal(query_long(&q, "offset", 0, LONG_MAX, 0, &v, err, sizeof err), 1);
    assert_int_equal(v, 12);
    assert_int_equal(query_long(&q, "tail", 1, 10, 1, &v, err, sizeof err), -1);
    assert_int_equal(strncmp(err, "tail: ", 6), 0);
    assert_int_equal(query_long(&q, "neg", 0, LONG_MAX, 0, &v, err, sizeof err), -1);
    assert_int_equal(query_long(&q, "neg", -5, 5, 0, &v, err, sizeof err), 1);
    assert_int_equal(v, -3);
    assert_int_equal(query_long(&q, "huge", 0, LONG_MAX, 1, &v, err, sizeof err), -1);
    assert_int_equal(query_long(&q, "empty", 0, 10, 0, &v, err, sizeof err), -1);
    v = 42;
    assert_int_equal(query_long(&q, "absent", 0, 10, 0, &v, err, sizeof err), 0);
    assert_int_equal(v, 42);
    for (int i = 0; i < 40; i++) query_add(&q, "x", "1"); /* beyond QUERY_MAX: dropped */
    assert_int_equal(q.n, QUERY_MAX);
}

static void test_query_state_and_ids(void **state)
{
    query_t q;
    query_init(&q);
    query_add(&q, "state", "running");
    query_add(&q, "bad", "JOGGING");
    query_add(&q, "empty", "");
    const char *s = NULL;
    char err[160];
    assert_int_equal(query_state(&q, "state", &s, err, sizeof err), 1);
    assert_string_equal(s, "RUNNING");
    assert_int_equal(query_state(&q, "bad", &s, err, sizeof err), -1);
    assert_int_equal(strncmp(err, "bad: must be one of", 19), 0);
    s = NULL;
    assert_int_equal(query_state(&q, "empty", &s, err, sizeof err), 0);
    assert_null(s);
}

#define ID_OK(s) (jobstore_stream_id_parse((s), NULL, NULL) == 0)

/* Stream ids: what Redis accepts and nothing else (issue 13: a part above 2^64 - 1 passed
 * the old digit-count check, Redis refused it, and an event stream retried forever). */
static void test_stream_ids(void **state)
{
    (void)state;
    assert_true(ID_OK("1715000000123-0"));
    assert_true(ID_OK("0"));
    assert_false(ID_OK("1715000000123-"));
    assert_false(ID_OK("-1"));
    assert_false(ID_OK("12a"));
    assert_false(ID_OK(""));
    assert_false(ID_OK(NULL));
    assert_false(ID_OK("1-2-3"));
    assert_false(ID_OK("+1-0"));
    assert_false(ID_OK(" 1-0"));
    assert_false(ID_OK("123456789012345678901-0"));
    unsigned long long ms = 1, seq = 1;
    assert_int_equal(jobstore_stream_id_parse("18446744073709551615-18446744073709551615", &ms, &seq), 0);
    assert_true(ms == 18446744073709551615ULL && seq == 18446744073709551615ULL);
    assert_int_equal(jobstore_stream_id_parse("42", &ms, &seq), 0);
    assert_true(ms == 42 && seq == 0);
    /* one above 2^64 - 1, in either part, and 20-digit values far above it */
    assert_false(ID_OK("18446744073709551616"));
    assert_false(ID_OK("18446744073709551616-0"));
    assert_false(ID_OK("1-18446744073709551616"));
    assert_false(ID_OK("99999999999999999999-0"));
    assert_false(ID_OK("0-99999999999999999999"));
    /* Last-Event-ID carries two of them: either part out of range refuses the header */
    char ev[48], m[48];
    assert_int_equal(sse_id_parse("99999999999999999999-0,1-0", ev, sizeof ev, m, sizeof m), -1);
    assert_int_equal(sse_id_parse("1-0,1-99999999999999999999", ev, sizeof ev, m, sizeof m), -1);
    assert_int_equal(sse_id_parse("18446744073709551615-0,1-18446744073709551615", ev, sizeof ev, m, sizeof m), 0);
    /* and ordering is numeric up to the top */
    assert_true(sse_stream_id_cmp("18446744073709551614-0", "18446744073709551615-0") < 0);
}

/* ---- problems ------------------------------------------------------------------------------------ */

static void test_problem_documents(void **state)
{
    json_t *p = problem_new(404, "job-not-found", "No such job", "no job j-9", NULL, NULL);
    assert_string_equal(json_string_value(json_object_get(p, "type")), "urn:pacer:problem:job-not-found");
    assert_string_equal(json_string_value(json_object_get(p, "title")), "No such job");
    assert_int_equal(json_integer_value(json_object_get(p, "status")), 404);
    assert_string_equal(json_string_value(json_object_get(p, "detail")), "no job j-9");
    problem_set_instance(p, "/api/v1/jobs/j-9");
    assert_string_equal(json_string_value(json_object_get(p, "instance")), "/api/v1/jobs/j-9");
    json_decref(p);

    p = problem_new(413, "payload-too-large", NULL, NULL, NULL, NULL); /* title from the status */
    assert_string_equal(json_string_value(json_object_get(p, "title")), "Payload Too Large");
    assert_null(json_object_get(p, "detail"));
    json_decref(p);

    p = problem_new(400, "x", NULL, "bad \xff byte", NULL, NULL); /* invalid UTF-8 is not lost */
    assert_non_null(json_object_get(p, "detail"));
    json_decref(p);

    struct {
        int code, status;
        const char *slug;
    } map[] = {{COORD_EINVAL, 400, "invalid-spec"},
               {COORD_ENOTFOUND, 404, "job-not-found"},
               {COORD_ESTATE, 409, "job-finished"},
               {COORD_EUNAVAIL, 503, "redis-unavailable"},
               {COORD_EINTERNAL, 500, "internal"}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
        p = problem_from_coord(map[i].code, "");
        assert_int_equal(json_integer_value(json_object_get(p, "status")), map[i].status);
        char type[64];
        snprintf(type, sizeof type, "urn:pacer:problem:%s", map[i].slug);
        assert_string_equal(json_string_value(json_object_get(p, "type")), type);
        json_decref(p);
    }
    p = problem_from_coord(COORD_EINVAL, "optimizer.lr: must be > 0");
    assert_string_equal(json_string_value(json_object_get(p, "field")), "optimizer.lr");
    assert_string_equal(json_string_value(json_object_get(p, "detail")), "optimizer.lr: must be > 0");
    json_decref(p);
    p = problem_from_coord(COORD_EINVAL, "spec: must be a JSON object"); /* the whole spec: no field */
    assert_null(json_object_get(p, "field"));
    json_decref(p);
}

static void test_problem_field(void **state)
{
    char f[64];
    assert_int_equal(problem_field("batch_sise: unknown field", f, sizeof f), 0);
    assert_string_equal(f, "batch_sise");
    assert_int_equal(problem_field("emulate.schedule[2].rank: must be < workers (4)", f, sizeof f), 0);
    assert_string_equal(f, "emulate.schedule[2].rank");
    assert_int_equal(problem_field("could not store the job: Redis unavailable", f, sizeof f), -1);
    assert_int_equal(problem_field("no colon here", f, sizeof f), -1);
    assert_int_equal(problem_field(": empty", f, sizeof f), -1);
    assert_int_equal(problem_field("a.very.long.field.name.that.does.not.fit.in.the.buffer.at.all: x", f, 16), -1);
}

static void test_body_problem(void **state)
{
    const char *ok = "{\"model\":\"lenet5\",\"dataset\":{\"name\":\"fashion-mnist\"},\"epochs\":1}";
    assert_null(handlers_body_problem(ok, strlen(ok)));
    json_t *p = handlers_body_problem("{\"model\":", 9);
    assert_string_equal(json_string_value(json_object_get(p, "type")), "urn:pacer:problem:invalid-json");
    assert_int_equal(json_integer_value(json_object_get(p, "status")), 400);
    json_decref(p);
    p = handlers_body_problem("", 0);
    assert_string_equal(json_string_value(json_object_get(p, "type")), "urn:pacer:problem:invalid-json");
    json_decref(p);
    const char nul[] = "{\"model\"\0:1}";
    p = handlers_body_problem(nul, sizeof nul - 1);
    assert_string_equal(json_string_value(json_object_get(p, "type")), "urn:pacer:problem:invalid-json");
    json_decref(p);
    const char *bad =
        "{\"model\":\"lenet5\",\"workers\":2,\"emulate\":{\"slowdown\":[1,2,3]},\"algorithm\":{\"name\":\"ssgd\"}}";
    p = handlers_body_problem(bad, strlen(bad));
    assert_string_equal(json_string_value(json_object_get(p, "type")), "urn:pacer:problem:invalid-spec");
    assert_string_equal(json_string_value(json_object_get(p, "field")), "emulate.slowdown");
    json_decref(p);

    /* The body is decoded once (handlers_body_spec); the answers are spec_parse's: a
     * repeated key is an invalid spec with spec_parse's words, unless the body is broken
     * JSON further on; a bare number is invalid JSON. */
    const char *dup = "{\"model\":\"lenet5\",\"model\":\"mlp\"}";
    job_spec_t *sp = malloc(sizeof *sp);
    assert_non_null(sp);
    char perr[512];
    assert_int_equal(spec_parse(dup, sp, perr, sizeof perr), -1);
    p = handlers_body_problem(dup, strlen(dup));
    assert_string_equal(json_string_value(json_object_get(p, "type")), "urn:pacer:problem:invalid-spec");
    assert_string_equal(json_string_value(json_object_get(p, "detail")), perr);
    json_decref(p);
    const char *dup_broken = "{\"model\":\"lenet5\",\"model\":\"mlp\",}";
    p = handlers_body_problem(dup_broken, strlen(dup_broken));
    assert_string_equal(json_string_value(json_object_get(p, "type")), "urn:pacer:problem:invalid-json");
    json_decref(p);
    p = handlers_body_problem("42", 2);
    assert_string_equal(json_string_value(json_object_get(p, "type")), "urn:pacer:problem:invalid-json");
    json_decref(p);
    assert_null(handlers_body_spec(ok, strlen(ok), sp));
    assert_string_equal(sp->model, "lenet5");
    assert_int_equal(sp->epochs, 1);
    free(sp);
}

/* ---- auth ------------------------------------------------------------------------------------------ */

static void test_auth_equal(void **state)
{
    assert_true(auth_equal("s3cret", 6, "s3cret", 6));
    assert_false(auth_equal("s3creT", 6, "s3cret", 6));
    assert_false(auth_equal("s3cre", 5, "s3cret", 6));
    assert_false(auth_equal("s3cret!", 7, "s3cret", 6));
    assert_false(auth_equal("", 0, "s3cret", 6));
    assert_false(auth_equal("s3cret\0", 7, "s3cret", 6)); /* a NUL does not end the comparison early */
    assert_true(auth_equal("", 0, "", 0));
}

static void test_auth_bearer_and_loopback(void **state)
{
    const char *tok;
    size_t len;
    assert_int_equal(auth_bearer("Bearer abc123", &tok, &len), 0);
    assert_int_equal(len, 6);
    assert_memory_equal(tok, "abc123", 6);
    assert_int_equal(auth_bearer("  bearer   abc123  ", &tok, &len), 0);
    assert_int_equal(len, 6);
    assert_int_equal(auth_bearer("Basic YWxhZGRpbjpvcGVu", &tok, &len), -1);
    assert_int_equal(auth_bearer("Bearer", &tok, &len), -1);
    assert_int_equal(auth_bearer("Bearer    ", &tok, &len), -1);
    assert_int_equal(auth_bearer("Bearerabc", &tok, &len), -1);
    assert_int_equal(auth_bearer(NULL, &tok, &len), -1);

    assert_true(auth_host_is_loopback("127.0.0.1"));
    assert_true(auth_host_is_loopback("127.1.2.3"));
    assert_true(auth_host_is_loopback("::1"));
    assert_true(auth_host_is_loopback("localhost"));
    assert_false(auth_host_is_loopback("0.0.0.0"));
    assert_false(auth_host_is_loopback(""));
    assert_false(auth_host_is_loopback("::"));
    assert_false(auth_host_is_loopback("10.0.0.1"));
    assert_false(auth_host_is_loopback("example.org"));

    char err[128];
    assert_int_equal(auth_token_check("abc", err, sizeof err), 0);
    assert_int_equal(auth_token_check("a b", err, sizeof err), -1);
    assert_int_equal(auth_token_check("", err, sizeof err), -1);
}

static void test_listen_and_config(void **state)
{
    char host[64];
    int port;
    assert_int_equal(http_listen_parse("127.0.0.1:8080", host, sizeof host, &port), 0);
    assert_string_equal(host, "127.0.0.1");
    assert_int_equal(port, 8080);
    assert_int_equal(http_listen_parse("[::1]:0", host, sizeof host, &port), 0);
    assert_string_equal(host, "::1");
    assert_int_equal(port, 0);
    assert_int_equal(http_listen_parse(":9000", host, sizeof host, &port), 0);
    assert_string_equal(host, "");
    assert_int_equal(http_listen_parse("127.0.0.1", host, sizeof host, &port), -1);
    assert_int_equal(http_listen_parse("127.0.0.1:65536", host, sizeof host, &port), -1);
    assert_int_equal(http_listen_parse("127.0.0.1:80a", host, sizeof host, &port), -1);
    assert_int_equal(http_listen_parse("::1:80", host, sizeof host, &port), -1);
    assert_int_equal(http_listen_parse("[::1]80", host, sizeof host, &port), -1);

    http_config_t cfg;
    http_config_defaults(&cfg);
    char err[512];
    assert_int_equal(http_check_config(&cfg, err, sizeof err), 0);
    cfg.listen = "0.0.0.0:8080";
    assert_int_equal(http_check_config(&cfg, err, sizeof err), -1);
    assert_non_null(strstr(err, "without a token"));
    cfg.token = "t0ken";
    assert_int_equal(http_check_config(&cfg, err, sizeof err), 0);
    cfg.sse_max = 0;
    assert_int_equal(http_check_config(&cfg, err, sizeof err), -1);
}

/* ---- Prometheus --------------------------------------------------------------------------------- */

static void test_prom_render(void **state)
{
    char lab[32];
    assert_int_equal(prom_escape_label("a\"b\\c\nd", lab, sizeof lab), 0);
    assert_string_equal(lab, "a\\\"b\\\\c\\nd");
    assert_int_equal(prom_escape_label("0123456789", lab, 8), -1);

    json_t *nodes = json_loads("{\"job\":\"j-7\",\"world\":2,\"ranks\":["
                               "{\"rank\":0,\"samples_per_s\":5210.5,\"loss\":0.61,\"batch\":48,\"step\":120,"
                               "\"noise_scale\":412.5,\"global_batch\":192,\"goodput\":9100,\"efficiency\":0.8,"
                               "\"lr_scale\":1.2,\"left_out\":0,"
                               "\"gpu_util_pct\":37,\"gpu_mem_used_bytes\":1293942784,\"gpu_mem_total_bytes\":17179869184,"
                               "\"staleness\":{\"count\":40,\"mean\":1.25,\"p95\":3}},"
                               "{\"rank\":1},"
                               /* Nothing measured is exported: the parameter server computes no
                                * samples, has not evaluated yet and has applied no update. */
                               "{\"rank\":2,\"role\":\"ps\",\"samples_per_s\":null,\"test_accuracy\":null,"
                               "\"loss\":0.5,\"staleness\":{\"count\":0,\"mean\":0,\"p95\":0}}]}",
                               0, NULL);
    assert_non_null(nodes);
    prom_input_t in;
    memset(&in, 0, sizeof in);
    in.redis_up = 1;
    in.states[0] = 2; /* QUEUED */
    in.states[1] = 1; /* RUNNING */
    long restarts[1] = {3};
    in.nodes = &nodes;
    in.restarts = restarts;
    in.nnodes = 1;
    in.sse_streams = 4;
    size_t len = 0;
    char *text = prom_render(&in, &len);
    assert_non_null(text);
    assert_int_equal(strlen(text), len);
    const char *want[] = {
        "# TYPE pacer_jobs gauge\n",
        "pacer_jobs{state=\"QUEUED\"} 2\n",
        "pacer_jobs{state=\"RUNNING\"} 1\n",
        "pacer_jobs{state=\"CANCELLED\"} 0\n",
        "pacer_redis_up 1\n",
        "pacer_sse_streams 4\n",
        "pacer_job_restarts{job=\"j-7\"} 3\n",
        "pacer_rank_samples_per_second{job=\"j-7\",rank=\"0\"} 5210.5\n",
        "pacer_rank_staleness_mean{job=\"j-7\",rank=\"0\"} 1.25\n",
        "pacer_rank_staleness_p95{job=\"j-7\",rank=\"0\"} 3\n",
        "# TYPE pacer_rank_staleness_updates_total counter\n",
        "pacer_rank_staleness_updates_total{job=\"j-7\",rank=\"0\"} 40\n",
        "pacer_rank_loss{job=\"j-7\",rank=\"0\"} 0.61\n",
        "pacer_rank_batch_size{job=\"j-7\",rank=\"0\"} 48\n",
        "pacer_rank_gpu_utilization_percent{job=\"j-7\",rank=\"0\"} 37\n",
        "pacer_rank_gpu_memory_used_bytes{job=\"j-7\",rank=\"0\"} 1293942784\n",
        "pacer_rank_gpu_memory_total_bytes{job=\"j-7\",rank=\"0\"} 17179869184\n",
        "pacer_rank_noise_scale{job=\"j-7\",rank=\"0\"} 412.5\n",
        "pacer_rank_global_batch{job=\"j-7\",rank=\"0\"} 192\n",
        "pacer_rank_goodput_samples_per_second{job=\"j-7\",rank=\"0\"} 9100\n",
        "pacer_rank_statistical_efficiency{job=\"j-7\",rank=\"0\"} 0.8\n",
        "pacer_rank_lr_scale{job=\"j-7\",rank=\"0\"} 1.2\n",
        "pacer_rank_left_out{job=\"j-7\",rank=\"0\"} 0\n",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        if (!strstr(text, want[i])) print_message("missing: %s", want[i]);
        assert_non_null(strstr(text, want[i]));
    }
    assert_null(strstr(text, "rank=\"1\"")); /* a rank without values exports nothing */
    assert_non_null(strstr(text, "pacer_rank_loss{job=\"j-7\",rank=\"2\"} 0.5\n"));
    assert_non_null(strstr(text, "pacer_rank_staleness_updates_total{job=\"j-7\",rank=\"2\"} 0\n"));
    assert_null(strstr(text, "pacer_rank_samples_per_second{job=\"j-7\",rank=\"2\"}"));
    assert_null(strstr(text, "pacer_rank_test_accuracy{job=\"j-7\",rank=\"2\"}"));
    /* No update counted: no mean or percentile of them (an absent series, not a 0). */
    assert_null(strstr(text, "pacer_rank_staleness_mean{job=\"j-7\",rank=\"2\"}"));
    assert_null(strstr(text, "pacer_rank_staleness_p95{job=\"j-7\",rank=\"2\"}"));
    /* Every line is a comment or "name{labels} value". */
    for (char *line = text; *line; line = strchr(line, '\n') + 1) {
        assert_true(line[0] == '#' || strncmp(line, "pacer_", 6) == 0);
        assert_non_null(strchr(line, '\n'));
    }
    free(text);

    in.redis_up = 0;
    in.nnodes = 0;
    text = prom_render(&in, &len);
    assert_non_null(strstr(text, "pacer_redis_up 0\n"));
    assert_null(strstr(text, "pacer_jobs{"));
    free(text);
    json_decref(nodes);
}

/* ---- static files, SSE ---------------------------------------------------------------------------- */

static void test_static_paths(void **state)
{
    const char *ok[] = {"index.html", "vendor/uPlot.min.css", "a/b/c.js", "x-y_z.1.js"};
    const char *bad[] = {"",   "../etc/passwd", "a/../b", "..",   ".hidden", "a/.git/config", "a//b",
                         "a/", "/abs",          "a b.js", "a%2e", "a\\b",    "vendor/./x"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) assert_true(static_path_ok(ok[i]));
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (static_path_ok(bad[i])) print_message("accepted: %s\n", bad[i]);
        assert_false(static_path_ok(bad[i]));
    }
    assert_string_equal(static_content_type("index.html"), "text/html; charset=utf-8");
    assert_string_equal(static_content_type("vendor/uPlot.iife.min.js"), "text/javascript; charset=utf-8");
    assert_string_equal(static_content_type("x.CSS"), "text/css; charset=utf-8");
    assert_string_equal(static_content_type("noext"), "application/octet-stream");
    assert_string_equal(static_content_type("dir.d/noext"), "application/octet-stream");
}

static void test_sse_ids_and_frames(void **state)
{
    char ev[48], m[48];
    assert_int_equal(sse_id_parse("1715000000123-0,1715000000456-3", ev, sizeof ev, m, sizeof m), 0);
    assert_string_equal(ev, "1715000000123-0");
    assert_string_equal(m, "1715000000456-3");
    assert_int_equal(sse_id_parse("1715000000123-0", ev, sizeof ev, m, sizeof m), 0);
    assert_string_equal(m, "");
    assert_int_equal(sse_id_parse("x,1-0", ev, sizeof ev, m, sizeof m), -1);
    assert_int_equal(sse_id_parse("1-0,", ev, sizeof ev, m, sizeof m), -1);
    assert_int_equal(sse_id_parse(",1-0", ev, sizeof ev, m, sizeof m), -1);
    assert_int_equal(sse_id_parse("", ev, sizeof ev, m, sizeof m), -1);

    assert_true(sse_stream_id_cmp("9-0", "10-0") < 0); /* numeric, not lexical */
    assert_true(sse_stream_id_cmp("10-2", "10-10") < 0);
    assert_int_equal(sse_stream_id_cmp("7-1", "7-1"), 0);
    assert_true(sse_stream_id_cmp("11", "10-5") > 0);
    assert_true(sse_stream_id_cmp("bad", "1-0") < 0);

    char buf[256];
    long n = sse_frame(buf, sizeof buf, "metrics", "1-0,2-0", "{\"a\":1}");
    assert_int_equal(n, (long)strlen(buf));
    assert_string_equal(buf, "event: metrics\nid: 1-0,2-0\ndata: {\"a\":1}\n\n");
    sse_frame(buf, sizeof buf, NULL, NULL, "two\nlines\r\nhere");
    assert_string_equal(buf, "data: two\ndata: lines\ndata: here\n\n");
    assert_int_equal(sse_frame(buf, 10, "metrics", "1-0", "{}"), -1);
}

/* ---- the server, end to end (Redis absent) --------------------------------------------------------- */

typedef struct {
    http_server_t *srv;
    coordinator_t *coord;
    char dir[64];
} server_fixture_t;

static int server_setup(void **state)
{
    server_fixture_t *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/pacer-http-XXXXXX");
    if (!mkdtemp(f->dir)) return -1;
    char path[128];
    snprintf(path, sizeof path, "%s/index.html", f->dir);
    FILE *fp = fopen(path, "w");
    fputs("<!doctype html><title>pacer</title>", fp);
    fclose(fp);
    char err[512], sock[128];
    snprintf(sock, sizeof sock, "unix://%s/no-redis.sock", f->dir);
    if (coordinator_open(sock, f->dir, &f->coord, err, sizeof err) != COORD_OK) return -1;
    http_config_t cfg;
    http_config_defaults(&cfg);
    cfg.listen = "127.0.0.1:0";
    cfg.token = "unit-test-token";
    cfg.static_dir = f->dir;
    cfg.threads = 2;
    if (http_start(f->coord, &cfg, &f->srv, err, sizeof err) != 0) {
        print_message("http_start: %s\n", err);
        return -1;
    }
    *state = f;
    return 0;
}

static int server_teardown(void **state)
{
    server_fixture_t *f = *state;
    http_stop(f->srv);
    coordinator_stop(f->coord);
    char path[160];
    snprintf(path, sizeof path, "%s/index.html", f->dir);
    unlink(path);
    rmdir(f->dir);
    free(f);
    return 0;
}

/* Sends a raw request (which must say Connection: close) and reads the whole answer into
 * resp. Returns the status code, or -1. */
/* Sends n bytes of req (NUL bytes included) and reads the answer; its status or -1. */
static int http_raw_n(int port, const char *req, size_t n, char *resp, size_t len)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) return -1;
    size_t off = 0;
    while (off < n) {
        ssize_t k = send(fd, req + off, n - off, MSG_NOSIGNAL);
        if (k <= 0) break;
        off += (size_t)k;
    }
    size_t got = 0;
    for (;;) {
        ssize_t k = recv(fd, resp + got, len - 1 - got, 0);
        if (k <= 0) break;
        got += (size_t)k;
        if (got + 1 >= len) break;
    }
    close(fd);
    resp[got] = 0;
    int status = -1;
    if (sscanf(resp, "HTTP/1.1 %d", &status) != 1) return -1;
    return status;
}

static int http_raw(int port, const char *req, char *resp, size_t len)
{
    return http_raw_n(port, req, strlen(req), resp, len);
}

static const char *body_of(const char *resp)
{
    const char *b = strstr(resp, "\r\n\r\n");
    return b ? b + 4 : "";
}

static void expect_problem(const char *resp, int status, const char *type)
{
    assert_non_null(strstr(resp, "Content-Type: application/problem+json"));
    json_t *p = json_loads(body_of(resp), 0, NULL);
    assert_non_null(p);
    assert_int_equal(json_integer_value(json_object_get(p, "status")), status);
    char want[96];
    snprintf(want, sizeof want, "urn:pacer:problem:%s", type);
    assert_string_equal(json_string_value(json_object_get(p, "type")), want);
    assert_non_null(json_object_get(p, "title"));
    json_decref(p);
}

static void test_server_refusals(void **state)
{
    server_fixture_t *f = *state;
    int port = http_port(f->srv);
    assert_true(port > 0);
    static char r[65536];

    assert_int_equal(http_raw(port, "GET /nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", r, sizeof r), 404);
    expect_problem(r, 404, "not-found");

    assert_int_equal(http_raw(port, "PUT /api/v1/jobs HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", r, sizeof r),
                     405);
    expect_problem(r, 405, "method-not-allowed");
    assert_non_null(strstr(r, "Allow: GET, HEAD, POST"));

    const char *post = "POST /api/v1/jobs HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\n"
                       "Content-Length: 2\r\n%s\r\n{}";
    char req[512];
    snprintf(req, sizeof req, post, "");
    assert_int_equal(http_raw(port, req, r, sizeof r), 401);
    expect_problem(r, 401, "unauthorized");
    assert_non_null(strstr(r, "WWW-Authenticate: Bearer"));
    snprintf(req, sizeof req, post, "Authorization: Bearer wrong-token\r\n");
    assert_int_equal(http_raw(port, req, r, sizeof r), 401);
    snprintf(req, sizeof req, post, "Authorization: Bearer unit-test-token\r\n");
    assert_int_equal(http_raw(port, req, r, sizeof r), 400); /* the token is right; {} has no model */
    expect_problem(r, 400, "invalid-spec");
    json_t *p = json_loads(body_of(r), 0, NULL);
    assert_string_equal(json_string_value(json_object_get(p, "field")), "model");
    json_decref(p);

    assert_int_equal(http_raw(port,
                              "POST /api/v1/jobs HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer "
                              "unit-test-token\r\nContent-Length: 2\r\n\r\n{}",
                              r, sizeof r),
                     415);
    expect_problem(r, 415, "unsupported-media-type");

    /* Refused from the declared length alone: the body is never sent. */
    assert_int_equal(http_raw(port,
                              "POST /api/v1/jobs HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer "
                              "unit-test-token\r\nContent-Type: application/json\r\nContent-Length: 2097152\r\n\r\n",
                              r, sizeof r),
                     413);
    expect_problem(r, 413, "payload-too-large");

    snprintf(req, sizeof req,
             "POST /api/v1/jobs HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer unit-test-token\r\n"
             "Content-Type: application/json; charset=utf-8\r\nContent-Length: 9\r\n\r\n{\"model\":");
    assert_int_equal(http_raw(port, req, r, sizeof r), 400);
    expect_problem(r, 400, "invalid-json");

    assert_int_equal(
        http_raw(
            port,
            "GET /api/v1/jobs?limit=abc HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer unit-test-token\r\n\r\n",
            r, sizeof r),
        400);
    expect_problem(r, 400, "invalid-parameter");
    assert_non_null(strstr(r, "\"parameter\":\"limit\""));
}

/* The detail of the problem document in resp. */
static void expect_detail(const char *resp, const char *part)
{
    json_t *p = json_loads(body_of(resp), 0, NULL);
    assert_non_null(p);
    const char *d = json_string_value(json_object_get(p, "detail"));
    if (!d || !strstr(d, part)) fail_msg("detail %s, want %s", d ? d : "(none)", part);
    json_decref(p);
}

/* Issue 42: libmicrohttpd hands a NUL in the request target or in a header over as the
 * end of a C string, so "/api/v1/models/a%00b" read as "/api/v1/models/a". Every such
 * request is 400, whether the NUL came encoded (%00) or as a raw byte ('@' below stands
 * for one), and so is a request with two Host headers. */
static void test_server_nul_and_host(void **state)
{
    server_fixture_t *f = *state;
    int port = http_port(f->srv);
    static char r[65536];
    static const struct {
        const char *req, *detail;
    } CASES[] = {
        {"PUT /api/v1/models/a%00b HTTP/1.1\r\nHost: x\r\n", "the path holds a NUL byte"},
        {"DELETE /api/v1/models/a%00zzz HTTP/1.1\r\nHost: x\r\n", "the path holds a NUL byte"},
        {"GET /api/v1/jobs/j-1%00/model.onnx HTTP/1.1\r\nHost: x\r\n", "the path holds a NUL byte"},
        {"GET /static/app.js%00x HTTP/1.1\r\nHost: x\r\n", "the path holds a NUL byte"},
        {"GET /api/v1/jobs?state=a%00b HTTP/1.1\r\nHost: x\r\n", "the query string holds a NUL byte"},
        {"GET /api/v1/models/a@b HTTP/1.1\r\nHost: x\r\n", "the path holds a NUL byte"},
        {"GET /healthz?x=@y HTTP/1.1\r\nHost: x\r\n", "the query string holds a NUL byte"},
        {"GET /healthz HTTP/1.1\r\nHost: localhost\r\nHost: evil.com\r\n", "more than one Host header"},
        {"GET /healthz HTTP/1.1\r\nhost: localhost\r\nHOST: localhost\r\n", "more than one Host header"},
        {"GET /healthz HTTP/1.1\r\nHost: local@host\r\n", "the Host header holds a NUL byte"},
        {"GET /healthz HTTP/1.1\r\nHost: localhost@@.evil.com\r\nX-A: b\r\n", "the Host header holds a NUL byte"},
        {"GET /healthz HTTP/1.1\r\nX-A: b\r\nHost: localhost@.evil.com\r\n", "the Host header holds a NUL byte"},
    };
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        char req[512];
        int n = snprintf(req, sizeof req, "%sConnection: close\r\nAuthorization: Bearer unit-test-token\r\n\r\n",
                         CASES[i].req);
        for (int k = 0; k < n; k++)
            if (req[k] == '@') req[k] = 0;
        int st = http_raw_n(port, req, (size_t)n, r, sizeof r);
        if (st != 400) fail_msg("case %zu (%s): HTTP %d, want 400", i, CASES[i].req, st);
        expect_problem(r, 400, "bad-request");
        expect_detail(r, CASES[i].detail);
    }
    /* A request libmicrohttpd refuses itself after the request line (a header without a
     * colon): the state the URI log callback allocated is freed all the same (the
     * sanitized build's leak check). */
    assert_int_equal(http_raw(port, "GET /nope HTTP/1.1\r\nHost: x\r\nNoColon\r\nConnection: close\r\n\r\n", r,
                              sizeof r),
                     400);
    /* What is allowed still is: one Host, trailing white space, a line ending in LF alone. */
    assert_int_equal(http_raw(port, "GET /nope HTTP/1.1\r\nHost: x  \r\nX-A: b\r\nConnection: close\r\n\r\n", r,
                              sizeof r),
                     404);
    assert_int_equal(http_raw(port, "GET /nope%20x HTTP/1.1\nConnection: close\nHost: x\n\n", r, sizeof r), 404);
}

static void test_server_static_and_redis_down(void **state)
{
    server_fixture_t *f = *state;
    int port = http_port(f->srv);
    static char r[65536];
    assert_int_equal(http_raw(port, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", r, sizeof r), 200);
    assert_non_null(strstr(r, "Content-Type: text/html"));
    assert_non_null(strstr(r, "<title>pacer</title>"));
    assert_int_equal(http_raw(port, "GET /static/../index.html HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", r,
                              sizeof r),
                     404);
    assert_int_equal(http_raw(port,
                              "GET /static/%2e%2e/%2e%2e/etc/passwd HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                              r, sizeof r),
                     404);

    /* Reads need the token by default (--public-reads opens them). */
    assert_int_equal(http_raw(port, "GET /api/v1/jobs HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", r, sizeof r),
                     401);
    expect_problem(r, 401, "unauthorized");
    assert_int_equal(http_raw(port, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", r, sizeof r), 401);

    /* Redis does not exist: health and reads say 503, /metrics says pacer_redis_up 0. */
    assert_int_equal(http_raw(port, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", r, sizeof r), 503);
    assert_int_equal(
        http_raw(
            port,
            "GET /api/v1/jobs HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer unit-test-token\r\n\r\n",
            r, sizeof r),
        503);
    expect_problem(r, 503, "redis-unavailable");
    assert_int_equal(
        http_raw(
            port,
            "GET /api/v1/jobs/j-1/events HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer unit-test-token\r\n\r\n",
            r, sizeof r),
        503);
    assert_int_equal(
        http_raw(port,
                 "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer unit-test-token\r\n\r\n",
                 r, sizeof r),
        200);
    assert_non_null(strstr(r, "text/plain; version=0.0.4"));
    assert_non_null(strstr(r, "pacer_redis_up 0\n"));
    assert_int_equal(http_raw(port,
                              "DELETE /api/v1/jobs/j-1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: "
                              "Bearer unit-test-token\r\n\r\n",
                              r, sizeof r),
                     503);
    /* Garbage is answered (or dropped) without harm to the server. */
    http_raw(port, "\x01\x02 nonsense\r\n\r\n", r, sizeof r);
    assert_int_equal(http_raw(port, "GET /nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", r, sizeof r), 404);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_routes_match),
        cmocka_unit_test(test_routes_target_nul),
        cmocka_unit_test(test_routes_not_found_and_method),
        cmocka_unit_test(test_routes_documented),
        cmocka_unit_test(test_routes_actions),
        cmocka_unit_test(test_routes_json_bodies),
        cmocka_unit_test(test_body_json_faults),
        cmocka_unit_test(test_genreq_ranges),
        cmocka_unit_test(test_query_long),
        cmocka_unit_test(test_query_state_and_ids),
        cmocka_unit_test(test_stream_ids),
        cmocka_unit_test(test_problem_documents),
        cmocka_unit_test(test_problem_field),
        cmocka_unit_test(test_body_problem),
        cmocka_unit_test(test_auth_equal),
        cmocka_unit_test(test_auth_bearer_and_loopback),
        cmocka_unit_test(test_listen_and_config),
        cmocka_unit_test(test_prom_render),
        cmocka_unit_test(test_static_paths),
        cmocka_unit_test(test_sse_ids_and_frames),
        cmocka_unit_test_setup_teardown(test_server_refusals, server_setup, server_teardown),
        cmocka_unit_test_setup_teardown(test_server_nul_and_host, server_setup, server_teardown),
        cmocka_unit_test_setup_teardown(test_server_static_and_redis_down, server_setup, server_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
