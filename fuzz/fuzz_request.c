/* fuzz/fuzz_request.c - libFuzzer target over the parts of the HTTP layer that see
 * client bytes before anything else does (build and run: make fuzz).
 *
 * The first byte picks the surface (its value mod 4; the seeds use '0'..'3'), the rest
 * is the client's input:
 *   0  a POST /api/v1/jobs body: handlers_body_problem (one decode, spec_from_json, the
 *      problem document with its field), serialised as the server would; the same bytes
 *      as a POST /api/v1/users body (users_body_parse, issue 45) and a PUT
 *      /api/v1/users/{name} body (users_update_parse: a weight and limits), and a stored
 *      user record (users_record_parse: what KEY_USERS holds, read back from Redis), and a
 *      drain's body (drain_body_parse);
 *   1  a query string: split at '&' and '=' as libmicrohttpd does, then every typed
 *      getter the handlers use (limit, offset, tail, state, since);
 *   2  a request line "METHOD PATH": the route matcher, the static path filter, the
 *      content-type table, and the encoded-NUL check of the raw target (routes_target_nul);
 *   3  header values: Last-Event-ID parsing, bearer parsing and comparison, a user
 *      token's name (users_token_name) and its salted hash, the listen
 *      address parser, problem field extraction, Prometheus label escaping, SSE framing.
 */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "auth.h"
#include "handlers.h"
#include "jobstore.h"
#include "prom.h"
#include "query.h"
#include "respond.h"
#include "routes.h"
#include "server.h"
#include "sse.h"
#include "static.h"
#include "users.h"

static void body(const char *text, size_t len)
{
    json_t *p = handlers_body_problem(text, len);
    if (p) {
        /* What respond_problem sends: it must serialise, and name a 4xx/5xx status. */
        char *s = json_dumps(p, JSON_COMPACT);
        json_int_t status = json_integer_value(json_object_get(p, "status"));
        if (!s || status < 400 || status > 599) abort();
        const char *field = json_string_value(json_object_get(p, "field"));
        if (field && !*field) abort();
        free(s);
        json_decref(p);
    }
    /* A users body: accepted only with a valid name and role and an expiry in range;
     * refused always with a message. */
    char name[USER_NAME_MAX + 1], err[256] = "";
    user_role_t role = USER_VIEWER;
    double exp = -1;
    if (users_body_parse(text, len, name, sizeof name, &role, &exp, err, sizeof err) == 0) {
        if (users_name_check(name, NULL, 0) != 0 || (unsigned)role > USER_ADMIN || exp < 0 || exp > USER_EXPIRES_MAX_S)
            abort();
    } else if (!err[0]) {
        abort();
    }
    /* A drain's body (POST /api/v1/cluster/hosts/{name}/drain): a deadline and a reason
     * shorter than its buffer, or a message. */
    double deadline = 0;
    char dreason[DRAIN_HTTP_REASON_MAX + 1];
    err[0] = 0;
    if (drain_body_parse(text, len, &deadline, dreason, sizeof dreason, err, sizeof err) == 0) {
        if (err[0] || strlen(dreason) > DRAIN_HTTP_REASON_MAX || deadline != deadline) abort();
    } else if (!err[0]) {
        abort();
    }
    /* A user update (PUT /api/v1/users/{name}): something to change, a weight 0 (unchanged)
     * or in (0, USER_WEIGHT_MAX], each limit it names null or in [0, USER_LIMIT_MAX] and a
     * priority null or one of the three; or a message. */
    user_update_t u;
    err[0] = 0;
    if (users_update_parse(text, len, &u, err, sizeof err) == 0) {
        const long counts[] = {u.set.max_queued, u.set.max_slots, u.set.max_models};
        if (!(u.weight == 0 || (u.weight > 0 && u.weight <= USER_WEIGHT_MAX)) || (u.weight == 0 && !u.present)) abort();
        for (int i = 0; i < 3; i++)
            if (counts[i] != USER_LIMIT_UNSET && (counts[i] < 0 || counts[i] > USER_LIMIT_MAX)) abort();
        int p = u.set.max_priority;
        if (p != USER_PRIO_UNSET && (p < USER_PRIO_LOW || p > USER_PRIO_HIGH)) abort();
    } else if (!err[0]) {
        abort();
    }
    /* A stored user record (KEY_USERS, read back from Redis): accepted only with a weight
     * in range and each limit unset or in range; refused always with a message. */
    user_record_t rec;
    err[0] = 0;
    if (users_record_parse("alice", text, len, &rec, err, sizeof err) == 0) {
        const long counts[] = {rec.limits.max_queued, rec.limits.max_slots, rec.limits.max_models};
        if (!(rec.weight > 0 && rec.weight <= USER_WEIGHT_MAX)) abort();
        for (int i = 0; i < 3; i++)
            if (counts[i] != USER_LIMIT_UNSET && (counts[i] < 0 || counts[i] > USER_LIMIT_MAX)) abort();
        int p = rec.limits.max_priority;
        if (p != USER_PRIO_UNSET && (p < USER_PRIO_LOW || p > USER_PRIO_HIGH)) abort();
    } else if (!err[0]) {
        abort();
    }
}

static void query(char *text)
{
    query_t q;
    query_init(&q);
    for (char *save = NULL, *pair = strtok_r(text, "&", &save); pair; pair = strtok_r(NULL, "&", &save)) {
        char *eq = strchr(pair, '=');
        if (eq) *eq++ = 0;
        query_add(&q, pair, eq);
    }
    long v = -7;
    char err[256];
    const char *st = NULL;
    if (query_long(&q, "limit", 1, 1000, 1, &v, err, sizeof err) == 1 && (v < 1 || v > 1000)) abort();
    if (query_long(&q, "offset", 0, LONG_MAX, 0, &v, err, sizeof err) == 1 && v < 0) abort();
    if (query_long(&q, "tail", 1, 100000, 1, &v, err, sizeof err) == 1 && (v < 1 || v > 100000)) abort();
    if (query_state(&q, "state", &st, err, sizeof err) == 1 && !st) abort();
    const char *since = query_get(&q, "since");
    if (since) (void)jobstore_stream_id_parse(since, NULL, NULL);
}

static void request_line(const char *text)
{
    char method[16];
    size_t n = strcspn(text, " ");
    if (n >= sizeof method) return;
    memcpy(method, text, n);
    method[n] = 0;
    const char *path = text[n] ? text + n + 1 : "";
    route_match_t m;
    const route_t *r = routes_match(method, path, &m);
    if (!r || !r->handler) abort();
    if (m.status == 0 && m.nparams > 0 && strlen(m.params[0]) >= ROUTE_PARAM_LEN) abort();
    if (static_path_ok(path)) {
        /* Whatever passes the filter stays inside the static root: relative, and no
         * segment is "." or "..". */
        if (path[0] == '/') abort();
        for (const char *seg = path; seg; seg = strchr(seg, '/') ? strchr(seg, '/') + 1 : NULL) {
            size_t sl = strcspn(seg, "/");
            if ((sl == 1 && seg[0] == '.') || (sl == 2 && seg[0] == '.' && seg[1] == '.')) abort();
        }
    }
    (void)static_content_type(path);
    /* routes_target_nul: a NUL exactly when "%00" is there, in the query exactly when the
     * first one comes after a '?'. */
    const char *nul = strstr(path, "%00"), *q = strchr(path, '?');
    int want = !nul ? ROUTE_NUL_NONE : q && q < nul ? ROUTE_NUL_QUERY : ROUTE_NUL_PATH;
    if (routes_target_nul(path) != want) abort();
}

static void headers(const char *text, size_t len)
{
    char ev[48], m[48], field[256], label[512], host[256], frame[4096];
    if (sse_id_parse(text, ev, sizeof ev, m, sizeof m) == 0 && jobstore_stream_id_parse(ev, NULL, NULL) != 0) abort();
    (void)sse_stream_id_cmp(text, "1-0");
    const char *tok;
    size_t tlen;
    if (auth_bearer(text, &tok, &tlen) == 0) {
        /* The token that came out of the header: a non-empty slice of it, trimmed. */
        if (tlen == 0 || tok < text || tok + tlen > text + len || tok[0] == ' ' || tok[tlen - 1] == ' ') abort();
        /* auth_equal against an oracle: equal to a copy of itself in another buffer, not
         * equal to that copy with any one byte changed, nor to a prefix of it. */
        char *copy = malloc(tlen);
        if (copy) {
            memcpy(copy, tok, tlen);
            if (!auth_equal(tok, tlen, copy, tlen)) abort();
            size_t at = (size_t)(unsigned char)tok[0] % tlen;
            copy[at] ^= 0x20;
            if (auth_equal(tok, tlen, copy, tlen)) abort();
            copy[at] ^= 0x20;
            if (tlen > 1 && (auth_equal(tok, tlen - 1, copy, tlen) || auth_equal(tok, tlen, copy, tlen - 1))) abort();
            free(copy);
        }
    }
    /* A user token: its name is a valid user name and the token's own prefix; its salted
     * hash is 64 hex digits whatever the bytes. */
    char uname[USER_NAME_MAX + 1], uhash[SHA256_HEX_LEN + 1];
    if (users_token_name(text, len, uname, sizeof uname) == 0 &&
        (users_name_check(uname, NULL, 0) != 0 || strncmp(uname, text, strlen(uname)) != 0 ||
         text[strlen(uname)] != '.'))
        abort();
    users_token_hash("0123456789abcdef0123456789abcdef", text, len, uhash);
    if (!sha256_hex_valid(uhash)) abort();
    /* Any input against a fixed secret: equal exactly when the bytes are. */
    static const char SECRET[] = "secret-token";
    int same = len == sizeof SECRET - 1 && memcmp(text, SECRET, len) == 0;
    if (auth_equal(text, len, SECRET, sizeof SECRET - 1) != same) abort();
    int port;
    if (http_listen_parse(text, host, sizeof host, &port) == 0 && (port < 0 || port > 65535)) abort();
    (void)auth_host_is_loopback(text);
    if (problem_field(text, field, sizeof field) == 0 && strlen(field) >= sizeof field) abort();
    (void)prom_escape_label(text, label, sizeof label);
    long k = sse_frame(frame, sizeof frame, "metrics", "1-0,2-0", text);
    if (k >= (long)sizeof frame) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    int mode = data[0] % 4;
    char *text = malloc(size);
    if (!text) return 0;
    memcpy(text, data + 1, size - 1);
    text[size - 1] = 0; /* the server NUL-terminates bodies too */
    switch (mode) {
    case 0: body(text, size - 1); break;
    case 1: query(text); break;
    case 2: request_line(text); break;
    default: headers(text, strlen(text)); break;
    }
    free(text);
    return 0;
}
