/* http/server.c - see server.h. The life of a request:
 *
 *   URI log callback         allocate the per-request state; note the request target as
 *                            sent, before libmicrohttpd decodes it: a NUL (%00, or a raw
 *                            byte) that decoding would turn into the target's end.
 *   1st access-handler call  match the route, collect the query, and refuse early what
 *                            can be refused from the headers alone: 400 (a NUL in the
 *                            target, Host headers), 421, 404/405, 401, 415, 413 by
 *                            Content-Length.
 *   body calls               consume the body chunk by chunk, keeping at most the limit.
 *   last call                run the route's handler, which answers exactly once.
 *   completion callback      free the per-request state (success, error and abort alike).
 *
 * Header deadline (--header-timeout, Slowloris): libmicrohttpd's connection timeout is an
 * idle timeout, which a client sending one byte a second never reaches. So every
 * connection is tracked from accept (MHD_OPTION_NOTIFY_CONNECTION) with the time it began
 * waiting for a request's headers; the first access-handler call (headers complete) stops
 * the clock, the completion callback starts it again for the next request on a kept-alive
 * connection, and a thread shuts down the socket of any connection still waiting after
 * the deadline (libmicrohttpd then sees the peer gone and closes it). The list is under
 * hdr_lock, and libmicrohttpd removes a connection from it (NOTIFY_CLOSED) before it
 * closes the socket, so the thread never shuts down a descriptor that was reused.
 */
#include "server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "clog.h"
#include "http_internal.h"
#include "respond.h"
#include "sse.h"
#include "static.h"

#define OPENAPI_MAX (1 << 20)
#define CONNECTION_LIMIT 1024
#define CONNECTION_TIMEOUT_S 60

void http_config_defaults(http_config_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->listen = "127.0.0.1:8080";
    cfg->threads = HTTP_THREADS_DEFAULT;
    cfg->sse_max = HTTP_SSE_MAX_DEFAULT;
    cfg->sse_per_client = HTTP_SSE_PER_CLIENT_DEFAULT;
    cfg->conns_per_client = HTTP_CONNS_PER_CLIENT_DEFAULT;
    cfg->header_timeout_s = HTTP_HEADER_TIMEOUT_DEFAULT_S;
    cfg->body_max = HTTP_BODY_MAX_DEFAULT;
    cfg->cache_ms = HTTP_CACHE_MS_DEFAULT;
}

int http_listen_parse(const char *listen, char *host, size_t hostlen, int *port)
{
    if (!listen || !hostlen) return -1;
    const char *colon;
    size_t hn;
    if (listen[0] == '[') {
        const char *close = strchr(listen, ']');
        if (!close || close[1] != ':') return -1;
        hn = (size_t)(close - listen - 1);
        if (hn == 0 || hn >= hostlen) return -1;
        memcpy(host, listen + 1, hn);
        colon = close + 1;
    } else {
        colon = strrchr(listen, ':');
        if (!colon) return -1;
        hn = (size_t)(colon - listen);
        if (hn >= hostlen || memchr(listen, ':', hn)) return -1; /* bare IPv6 needs brackets */
        memcpy(host, listen, hn);
    }
    host[hn] = 0;
    const char *p = colon + 1;
    if (!*p || strlen(p) > 5) return -1;
    long v = 0;
    for (; *p; p++) {
        if (*p < '0' || *p > '9') return -1;
        v = v * 10 + (*p - '0');
    }
    if (v > 65535) return -1;
    *port = (int)v;
    return 0;
}

int http_check_config(const http_config_t *cfg, char *err, size_t errlen)
{
    char host[256];
    int port;
    if (http_listen_parse(cfg->listen, host, sizeof host, &port) != 0) {
        snprintf(err, errlen, "--listen %s: not ADDR:PORT (e.g. 127.0.0.1:8080, [::1]:8080)",
                 cfg->listen ? cfg->listen : "");
        return -1;
    }
    int has_token = cfg->token && *cfg->token;
    if (has_token && auth_token_check(cfg->token, err, errlen) != 0) return -1;
    if (!auth_host_is_loopback(host) && !has_token) {
        snprintf(err, errlen,
                 "refusing to serve the API on %s without a token: anyone who can reach it could submit and cancel "
                 "jobs. Set PACER_TOKEN or --token-file FILE, or listen on 127.0.0.1",
                 cfg->listen);
        return -1;
    }
    if (cfg->threads < 1 || cfg->threads > 256) {
        snprintf(err, errlen, "--http-threads: must be between 1 and 256");
        return -1;
    }
    if (cfg->cache_ms < 0 || cfg->cache_ms > 60000) {
        snprintf(err, errlen, "--api-cache-ms: must be between 0 and 60000");
        return -1;
    }
    if (cfg->sse_max < 1 || cfg->sse_max > 10000) {
        snprintf(err, errlen, "--sse-max: must be between 1 and 10000");
        return -1;
    }
    if (cfg->sse_per_client < 0 || cfg->sse_per_client > 10000) {
        snprintf(err, errlen, "--sse-per-client: must be between 1 and 10000");
        return -1;
    }
    if (cfg->conns_per_client < 0 || cfg->conns_per_client > CONNECTION_LIMIT) {
        snprintf(err, errlen, "--max-conns-per-client: must be between 1 and %d", CONNECTION_LIMIT);
        return -1;
    }
    if (cfg->header_timeout_s < 0 || cfg->header_timeout_s > CONNECTION_TIMEOUT_S) {
        snprintf(err, errlen, "--header-timeout: must be between 1 and %d seconds", CONNECTION_TIMEOUT_S);
        return -1;
    }
    if (cfg->nallowed_hosts < 0 || cfg->nallowed_hosts > HTTP_ALLOWED_HOSTS_MAX) {
        snprintf(err, errlen, "--allowed-host: at most %d", HTTP_ALLOWED_HOSTS_MAX);
        return -1;
    }
    for (int i = 0; i < cfg->nallowed_hosts; i++) {
        char h[AUTH_HOST_MAX + 1];
        if (!cfg->allowed_hosts || auth_host_header_parse(cfg->allowed_hosts[i], h, sizeof h) != 0) {
            snprintf(err, errlen, "--allowed-host %.64s: not a host name or address",
                     cfg->allowed_hosts && cfg->allowed_hosts[i] ? cfg->allowed_hosts[i] : "");
            return -1;
        }
    }
    return 0;
}

/* ---- per request ---------------------------------------------------------------------------------- */

/* The peer's address as text ("127.0.0.1", "::1"); "?" when unknown. */
static void client_address(struct MHD_Connection *conn, char *out, size_t len)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    const struct sockaddr *sa = ci ? ci->client_addr : NULL;
    snprintf(out, len, "?");
    if (sa && sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, out, (socklen_t)len);
    else if (sa && sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, out, (socklen_t)len);
}

static enum MHD_Result collect_query(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    query_add(cls, key, value);
    return MHD_YES;
}

/* The token a request presents: the Authorization header's, or a stream's ?access_token=
 * (EventSource cannot set headers). NULL when none. */
static const char *presented_token(http_req_t *rq, size_t *len)
{
    const char *tok;
    const char *h = MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (auth_bearer(h, &tok, len) == 0) return tok;
    const char *q = (rq->match.route->flags & ROUTE_STREAM) ? query_get(&rq->query, "access_token") : NULL;
    if (q) *len = strlen(q);
    return q;
}

/* The 401 of a coordinator without a token to a request that presents one. */
static const char NO_AUTH_TOKEN_DETAIL[] =
    "this coordinator has no authentication configured and knows no tokens: send the request without one, or "
    "restart the coordinator with --token-file FILE or PACER_TOKEN to check tokens";

static void set_caller(http_req_t *rq, const char *user, user_role_t role)
{
    snprintf(rq->user, sizeof rq->user, "%s", user);
    rq->role = role;
    rq->authed = 1;
}

/* Who is calling: sets rq->user and rq->role and returns NULL, or returns the
 * 401's detail. No token configured: everyone is the local admin (the listen address is
 * loopback and the Host rule holds), but a request that presents a token is refused: this
 * coordinator checks none, and answering it as the admin would tell its sender that a
 * user's token (or one made up) is valid and has the admin's role. The daemon's token is
 * "admin". A user's token (NAME.HEX, common/users.h) is checked against that user's
 * salted hash in constant time, then its expiry; the hash is kept in rq for an event
 * stream to re-check (sse.c). --public-reads lets a request without a valid token read
 * as an anonymous viewer. */
static const char *authorized(http_req_t *rq)
{
    const http_server_t *srv = rq->srv;
    unsigned f = rq->match.route->flags;
    rq->role = USER_VIEWER;
    size_t len = 0;
    const char *tok = presented_token(rq, &len);
    if (srv->token_len == 0) {
        if (tok && len > 0 && !(f & ROUTE_PUBLIC)) return NO_AUTH_TOKEN_DETAIL;
        set_caller(rq, USER_ADMIN_NAME, USER_ADMIN);
        return NULL;
    }
    const char *why = NULL;
    char name[USER_NAME_MAX + 1];
    user_record_t rec;
    int code;
    if (tok && auth_equal(tok, len, srv->token, srv->token_len)) {
        set_caller(rq, USER_ADMIN_NAME, USER_ADMIN);
        return NULL;
    }
    if (!tok) why = "this endpoint needs Authorization: Bearer <token>";
    else if (users_token_name(tok, len, name, sizeof name) != 0) why = "the bearer token is wrong";
    else if ((code = coord_user_get(srv->coord, name, &rec)) != COORD_OK)
        why = code == COORD_EUNAVAIL ? "the token cannot be checked now: Redis is unreachable; try again"
                                     : "the bearer token is wrong";
    else {
        char hash[SHA256_HEX_LEN + 1];
        users_token_hash(rec.salt, tok, len, hash);
        if (!auth_equal(hash, SHA256_HEX_LEN, rec.hash, SHA256_HEX_LEN)) why = "the bearer token is wrong";
        else if (rec.expires > 0 && clock_wall_s() >= rec.expires)
            why = "the bearer token has expired: an admin gives its user a new one by removing and adding the user "
                  "again (pacer user rm, pacer user add)";
        else {
            set_caller(rq, rec.name, rec.role);
            memcpy(rq->token_hash, rec.hash, sizeof rq->token_hash);
            return NULL;
        }
    }
    if ((f & ROUTE_PUBLIC) || (!(f & ROUTE_MUTATES) && srv->public_reads)) return NULL; /* anonymous reader */
    return why;
}

/* The role rule of rq's route (common/users.h), before anything is read or changed: NULL,
 * or the 403's detail into why. Members' changes to one job or model depend on its owner:
 * the handler checks those (handler_refused). */
static const char *route_forbidden(http_req_t *rq, char *why, size_t len)
{
    const route_t *r = rq->match.route;
    if (r->flags & ROUTE_PUBLIC) return NULL;
    int act = routes_action(r);
    int per_object = act == USER_ACT_CANCEL || act == USER_ACT_RETRY || act == USER_ACT_GENERATE ||
                     act == USER_ACT_MODEL_PUT || act == USER_ACT_MODEL_DELETE;
    if (rq->role == USER_MEMBER && per_object) return NULL;
    if (act == USER_ACT_GENERATE && rq->srv->viewers_generate) return NULL;
    if (users_may(rq->role, rq->user, (user_action_t)act, NULL, why, len)) return NULL;
    if (act == USER_ACT_GENERATE) /* say that it is the admin's choice, and how to change it */
        snprintf(why + strlen(why), len - strlen(why),
                 " (this coordinator lets only a job's owner and admins "
                 "generate; pacer-coordinator --viewers-generate lets every user)");
    return why;
}

static int is_json_type(const char *ct)
{
    if (!ct) return 0;
    while (*ct == ' ') ct++;
    size_t n = strcspn(ct, "; \t");
    return n == 16 && strncasecmp(ct, "application/json", 16) == 0;
}

static int is_octet_type(const char *ct)
{
    if (!ct) return 0;
    while (*ct == ' ') ct++;
    size_t n = strcspn(ct, "; \t");
    return n == 24 && strncasecmp(ct, "application/octet-stream", 24) == 0;
}

/* The body limit of rq's route: an uploaded model's, or any other body's. */
static size_t body_limit(const http_req_t *rq)
{
    return rq->match.route && (rq->match.route->flags & ROUTE_BINARY_BODY) ? rq->srv->model_max : rq->srv->body_max;
}

typedef struct {
    size_t n;             /* Host header lines */
    const char *value;    /* the first one's value */
    size_t len;           /* its length up to the first NUL */
    const char *next_key; /* the header line after it in the buffer; NULL when it was the last */
} host_headers_t;

/* Headers come in the order they were received, in one buffer. */
static enum MHD_Result count_host(void *cls, enum MHD_ValueKind kind, const char *key, size_t key_size,
                                  const char *value, size_t value_size)
{
    host_headers_t *h = cls;
    (void)kind;
    if (h->value && !h->next_key && key > h->value) h->next_key = key;
    if (key_size != 4 || strncasecmp(key, "Host", 4) != 0) return MHD_YES;
    if (h->n++ == 0) {
        h->value = value;
        h->len = value_size;
    }
    return MHD_YES;
}

/* The length of a header value as the client sent it. libmicrohttpd hands values over as
 * C strings in its read buffer, where it has turned the line's end (CR, LF) and trailing
 * white space into NULs: a NUL byte the client put inside the value cuts it short
 * silently. What lies between the string's end and the next header line (or, for the
 * last one, the first NUL after white space) is then more than NULs and white space. */
static size_t header_raw_len(const char *v, size_t len, const char *next_key)
{
    size_t raw = len;
    /* (the read buffer is at most a few tens of KiB: anything further is not the next line) */
    if (next_key && next_key - v < (1 << 16)) {
        for (const char *p = v + len; p < next_key; p++)
            if (*p && *p != ' ' && *p != '\t') raw = (size_t)(p - v) + 1;
        return raw;
    }
    const char *p = v + len + 1;
    while (*p == ' ' || *p == '\t') p++;
    return *p ? len + 1 + strlen(v + len + 1) : len;
}

/* 400s for a request line or headers that HTTP itself forbids: they come before every
 * other rule, which would each read something other than what was sent. */
static json_t *malformed_problem(http_req_t *rq)
{
    if (rq->target_nul != ROUTE_NUL_NONE)
        return problem_new(400, "bad-request", NULL,
                           rq->target_nul == ROUTE_NUL_PATH
                               ? "the path holds a NUL byte (%00), which no path of this API has"
                               : "the query string holds a NUL byte (%00), which no parameter of this API takes",
                           NULL, NULL);
    host_headers_t h = {0};
    MHD_get_connection_values_n(rq->conn, MHD_HEADER_KIND, count_host, &h);
    size_t len = h.value ? header_raw_len(h.value, h.len, h.next_key) : 0;
    const char *why = auth_host_headers_problem(h.n, h.value, len);
    return why ? problem_new(400, "bad-request", NULL, why, NULL, NULL) : NULL;
}

/* Refusals decided from the request line and headers; NULL when the request may go on. */
static json_t *early_problem(http_req_t *rq, http_header_t *hdrs, size_t *nhdrs)
{
    const route_match_t *m = &rq->match;
    json_t *bad = malformed_problem(rq);
    if (bad) return bad;
    /* DNS rebinding: without a token, only a Host that names this machine's loopback (or
     * an --allowed-host). Every route, before anything else: a page served from another
     * name must learn nothing, not even which paths exist. */
    if (rq->srv->token_len == 0) {
        const char *host = MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
        if (!auth_host_allowed(host, rq->srv->allowed_ptrs, rq->srv->nallowed_hosts)) {
            char detail[200];
            snprintf(detail, sizeof detail,
                     "this server has no token and answers only Host localhost, 127.0.0.1 or [::1]%s; got %.64s%s",
                     rq->srv->nallowed_hosts ? " or an --allowed-host" : "", host ? host : "none",
                     host && strlen(host) > 64 ? "..." : "");
            return problem_new(421, "misdirected-request", NULL, detail, NULL, NULL);
        }
    }
    if (m->status == 405) {
        hdrs[(*nhdrs)++] = (http_header_t){MHD_HTTP_HEADER_ALLOW, m->allow};
        char detail[128];
        snprintf(detail, sizeof detail, "%s is not allowed here; allowed: %s", rq->method, m->allow);
        return problem_new(405, "method-not-allowed", NULL, detail, NULL, NULL);
    }
    if (m->status == 404) return NULL; /* the sentinel's handler answers */
    const char *unauth = authorized(rq);
    if (unauth) {
        hdrs[(*nhdrs)++] = (http_header_t){MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"pacer\""};
        return problem_new(401, "unauthorized", NULL, unauth, NULL, NULL);
    }
    char why[256];
    if (route_forbidden(rq, why, sizeof why))
        return problem_new(403, "forbidden", NULL, why, "role", users_role_name(rq->role));
    if (m->route->flags & ROUTE_JSON_BODY) {
        const char *ct = MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
        if (!is_json_type(ct)) {
            char detail[200];
            snprintf(detail, sizeof detail, "send %s with Content-Type: application/json", routes_json_body(m->route));
            return problem_new(415, "unsupported-media-type", NULL, detail, NULL, NULL);
        }
    }
    if (m->route->flags & ROUTE_BINARY_BODY) {
        const char *ct = MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
        if (!is_octet_type(ct))
            return problem_new(415, "unsupported-media-type", NULL,
                               "send the ONNX file's bytes with Content-Type: application/octet-stream", NULL, NULL);
    }
    const char *cl = MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (cl) {
        char *end;
        errno = 0;
        unsigned long long n = strtoull(cl, &end, 10);
        if (errno == 0 && end != cl && n > body_limit(rq)) {
            char detail[160];
            snprintf(detail, sizeof detail, "the body is %llu bytes; the limit is %zu%s", n, body_limit(rq),
                     body_limit(rq) == rq->srv->body_max ? "" : " (--max-model-bytes)");
            return problem_new(413, "payload-too-large", NULL, detail, NULL, NULL);
        }
    }
    return NULL;
}

/* The audit trail: every call to a route that changes something, by a known
 * caller, refused or not, appends who, what, the target and the answer's status to the
 * events stream (coord_audit). Anonymous and unauthenticated requests are not recorded:
 * they change nothing, and a flood of them must not fill the stream. */
static void audit(http_req_t *rq, unsigned status)
{
    if (!rq->authed || !rq->match.route || !(rq->match.route->flags & ROUTE_MUTATES)) return;
    const char *target = rq->target[0] ? rq->target : rq->match.nparams ? rq->match.params[0] : "";
    if (coord_audit(rq->srv->coord, rq->user, users_role_name(rq->role), rq->method, rq->path, target, (int)status) !=
        COORD_OK)
        clog_printf("http: audit: %s %s by %s (status %u) not recorded: Redis unreachable", rq->method, rq->path,
                    rq->user, status);
}

static enum MHD_Result answer_problem(http_req_t *rq, json_t *p, const http_header_t *hdrs, size_t nhdrs)
{
    rq->answered = 1;
    problem_set_instance(p, rq->path);
    unsigned status = (unsigned)json_integer_value(json_object_get(p, "status"));
    enum MHD_Result ret = respond_problem(rq->conn, p, hdrs, nhdrs);
    audit(rq, status);
    return ret;
}

/* Bodies without Content-Length (chunked) are checked as they arrive. libmicrohttpd
 * 0.9.75 cannot queue a response in the middle of a body, so past the limit the rest is
 * read and dropped and 413 answers at the end; past DISCARD_MAX the connection is simply
 * closed. */
#define DISCARD_MAX (8u << 20)

static enum MHD_Result body_chunk(http_req_t *rq, const char *data, size_t n)
{
    rq->received += n;
    if (rq->received > body_limit(rq)) {
        free(rq->body);
        rq->body = NULL;
        rq->body_len = rq->body_cap = 0;
        return rq->received > body_limit(rq) + DISCARD_MAX ? MHD_NO : MHD_YES;
    }
    if (!(rq->match.route->flags & (ROUTE_JSON_BODY | ROUTE_BINARY_BODY))) return MHD_YES; /* read and dropped */
    if (rq->body_len + n + 1 > rq->body_cap) {
        size_t cap = rq->body_cap ? rq->body_cap : 4096;
        while (cap < rq->body_len + n + 1) cap *= 2;
        char *b = realloc(rq->body, cap);
        if (!b) return MHD_NO;
        rq->body = b;
        rq->body_cap = cap;
    }
    memcpy(rq->body + rq->body_len, data, n);
    rq->body_len += n;
    rq->body[rq->body_len] = 0;
    return MHD_YES;
}

/* Whether a refusal decided from the headers should wait for the body: a client that is
 * still sending when the server answers and closes can lose the answer (the close with
 * unread bytes resets the connection, and the reset discards what the client had not
 * read yet: curl then reports no status at all). So a body the client sends at once
 * (no "Expect: 100-continue", which waits for our answer instead) within the route's
 * limit and DISCARD_MAX, or chunked, is read and dropped first (past DISCARD_MAX the
 * connection is closed: body_chunk's rule). A declared length past the limit is refused
 * at once: such a client may well wait for the answer before sending (the 413 says so
 * without reading megabytes for nothing). */
static int body_follows(const http_req_t *rq)
{
    const char *expect = MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_EXPECT);
    if (expect && strncasecmp(expect, "100-continue", 12) == 0) return 0;
    const char *te = MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
    if (te && strstr(te, "chunked")) return 1;
    const char *cl = MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (!cl) return 0;
    char *end;
    errno = 0;
    unsigned long long n = strtoull(cl, &end, 10);
    return errno == 0 && end != cl && n > 0 && n <= DISCARD_MAX && n <= body_limit(rq);
}

/* ---- header deadline ----------------------------------------------------------------------- */

typedef struct hdr_conn {
    struct hdr_conn *prev, *next;
    MHD_socket fd;
    double since; /* monotonic: when it began waiting for headers */
    int waiting;  /* 1 while a request's headers are not complete */
} hdr_conn_t;

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    http_server_t *s = cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        hdr_conn_t *h = calloc(1, sizeof *h);
        if (!h || !ci) { /* untracked: it still has libmicrohttpd's idle timeout */
            free(h);
            *socket_context = NULL;
            return;
        }
        h->fd = ci->connect_fd;
        h->since = clock_mono_s();
        h->waiting = 1;
        pthread_mutex_lock(&s->hdr_lock);
        h->next = s->hdr_conns;
        if (h->next) h->next->prev = h;
        s->hdr_conns = h;
        pthread_mutex_unlock(&s->hdr_lock);
        *socket_context = h;
    } else if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
        hdr_conn_t *h = *socket_context;
        if (!h) return;
        pthread_mutex_lock(&s->hdr_lock);
        if (h->prev) h->prev->next = h->next;
        else s->hdr_conns = h->next;
        if (h->next) h->next->prev = h->prev;
        pthread_mutex_unlock(&s->hdr_lock);
        free(h);
        *socket_context = NULL;
    }
}

/* waiting = 1: the connection waits for a (next) request's headers from now on. */
static void hdr_mark(http_server_t *s, struct MHD_Connection *conn, int waiting)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    hdr_conn_t *h = ci ? ci->socket_context : NULL;
    if (!h) return;
    pthread_mutex_lock(&s->hdr_lock);
    h->waiting = waiting;
    if (waiting) h->since = clock_mono_s();
    pthread_mutex_unlock(&s->hdr_lock);
}

#define HDR_SWEEP_S 0.25
static void *hdr_main(void *arg)
{
    http_server_t *s = arg;
    pthread_mutex_lock(&s->hdr_lock);
    while (!s->hdr_stop) {
        struct timespec until;
        clock_wall_deadline(HDR_SWEEP_S, &until);
        pthread_cond_timedwait(&s->hdr_cond, &s->hdr_lock, &until);
        double now = clock_mono_s();
        int closed = 0;
        for (hdr_conn_t *h = s->hdr_conns; h; h = h->next)
            if (h->waiting && now - h->since > s->header_timeout_s) {
                shutdown(h->fd, SHUT_RDWR);
                h->waiting = 0; /* once */
                closed++;
            }
        if (closed) {
            pthread_mutex_unlock(&s->hdr_lock);
            clog_printf("http: closed %d connection%s whose request headers were not complete %d s after it was "
                        "opened or its last request ended (--header-timeout)",
                        closed, closed == 1 ? "" : "s", s->header_timeout_s);
            pthread_mutex_lock(&s->hdr_lock);
        }
    }
    pthread_mutex_unlock(&s->hdr_lock);
    return NULL;
}

/* The request target as sent, before libmicrohttpd decodes it in place (its URI log
 * callback, once per request, before the headers are read). The per-request state is
 * allocated here: it becomes the request's *con_cls, which the completion callback frees
 * (libmicrohttpd calls it for every request this callback saw). NULL when out of memory:
 * on_request allocates it then, without the raw target's checks. */
static void *uri_log(void *cls, const char *uri, struct MHD_Connection *conn)
{
    (void)cls, (void)conn;
    http_req_t *rq = calloc(1, sizeof *rq);
    if (!rq) return NULL;
    rq->raw_target = uri;
    rq->raw_len = strlen(uri);
    rq->raw_query = strchr(uri, '?') != NULL;
    rq->target_nul = routes_target_nul(uri);
    return rq;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_data_size, void **con_cls)
{
    http_server_t *srv = cls;
    http_req_t *rq = *con_cls;
    if (!rq || !rq->srv) {
        if (!rq) rq = calloc(1, sizeof *rq);
        if (!rq) return MHD_NO; /* out of memory: MHD drops the connection */
        *con_cls = rq;
        /* A NUL byte sent as is in the target: libmicrohttpd ends the target at the last
         * space before the version (which it hands us, in the same buffer), so the version
         * starts further than one byte past the text uri_log could see. */
        if (rq->raw_target == url && rq->target_nul == ROUTE_NUL_NONE && version > url + rq->raw_len + 1)
            rq->target_nul = rq->raw_query ? ROUTE_NUL_QUERY : ROUTE_NUL_PATH;
        rq->srv = srv;
        rq->conn = conn;
        rq->started = clock_mono_s();
        rq->method = method;
        rq->path = url;
        client_address(conn, rq->client, sizeof rq->client);
        /* The headers are in: the deadline stops, and from now on the connection gets the
         * ordinary idle timeout (the short one, MHD_OPTION_CONNECTION_TIMEOUT, is for
         * headers that dribble in). */
        hdr_mark(srv, conn, 0);
        MHD_set_connection_option(conn, MHD_CONNECTION_OPTION_TIMEOUT, (unsigned)CONNECTION_TIMEOUT_S);
        query_init(&rq->query);
        routes_match(method, url, &rq->match);
        MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, collect_query, &rq->query);
        http_header_t hdrs[2];
        size_t nh = 0;
        json_t *p = early_problem(rq, hdrs, &nh);
        if (p && body_follows(rq)) {
            rq->deferred = p;
            memcpy(rq->deferred_hdrs, hdrs, nh * sizeof *hdrs);
            rq->ndeferred = nh;
            return MHD_YES;
        }
        if (p) return answer_problem(rq, p, hdrs, nh);
        return MHD_YES;
    }
    if (*upload_data_size > 0) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (rq->answered) return MHD_YES;
        if (rq->deferred) return (rq->received += n) > DISCARD_MAX ? MHD_NO : MHD_YES; /* read and dropped */
        return body_chunk(rq, upload_data, n);
    }
    if (rq->answered) {
        if (!rq->resume) return MHD_YES;
        respond_status_reset();
        const enum MHD_Result r = (enum MHD_Result)rq->resume(rq);
        audit(rq, respond_status_last());
        return r;
    }
    if (rq->deferred) {
        json_t *p = rq->deferred;
        rq->deferred = NULL;
        return answer_problem(rq, p, rq->deferred_hdrs, rq->ndeferred);
    }
    if (rq->received > body_limit(rq)) {
        char detail[128];
        snprintf(detail, sizeof detail, "the body is larger than the limit of %zu bytes", body_limit(rq));
        return answer_problem(rq, problem_new(413, "payload-too-large", NULL, detail, NULL, NULL), NULL, 0);
    }
    rq->answered = 1;
    if ((rq->match.route->flags & (ROUTE_JSON_BODY | ROUTE_BINARY_BODY)) && !rq->body) rq->body = calloc(1, 1);
    respond_status_reset();
    enum MHD_Result ret = (enum MHD_Result)rq->match.route->handler(rq);
    if (!rq->resume) audit(rq, respond_status_last()); /* else once it is answered */
    return ret;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode toe)
{
    http_req_t *rq = *con_cls;
    /* A kept-alive connection now waits for its next request's headers: the deadline
     * starts again. */
    hdr_mark(cls, conn, 1);
    if (!rq) return;
    if (rq->resume_done) rq->resume_done(rq);
    json_decref(rq->deferred);
    free(rq->body);
    free(rq);
    *con_cls = NULL;
}

/* libmicrohttpd's messages, at most LOG_BURST a second: a client that opens a thousand
 * connections past its limit (each one a "connection limit" line) must not flood the log
 * or the disk. What is dropped is counted and said with the next line that passes. */
#define LOG_BURST 5
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static double window;
    static int in_window;
    static unsigned long dropped;
    double now = clock_mono_s();
    pthread_mutex_lock(&lock);
    if (now - window >= 1.0) {
        window = now;
        in_window = 0;
    }
    int pass = in_window < LOG_BURST;
    unsigned long said = 0;
    if (pass) {
        in_window++;
        said = dropped;
        dropped = 0;
    } else {
        dropped++;
    }
    pthread_mutex_unlock(&lock);
    if (!pass) return;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == '\r')) msg[--n] = 0;
    if (said) clog_printf("http: (%lu messages like the ones above were not logged)", said);
    clog_printf("http: %s", msg);
}

/* ---- start and stop ------------------------------------------------------------------------------- */

static char *read_small_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = malloc(OPENAPI_MAX + 1);
    size_t n = buf ? fread(buf, 1, OPENAPI_MAX + 1, f) : 0;
    fclose(f);
    if (!buf || n == 0 || n > OPENAPI_MAX) {
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

/* docs/openapi.json: a copy in the static directory (make puts one in build/static),
 * else docs/ of the source tree next to the binary's directory, else ./docs. */
static void load_openapi(http_server_t *s)
{
    char path[PATH_MAX + 64], exe[PATH_MAX];
    snprintf(path, sizeof path, "%s/openapi.json", s->static_dir);
    s->openapi = read_small_file(path, &s->openapi_len);
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (!s->openapi && n > 0) {
        exe[n] = 0;
        char *slash = strrchr(exe, '/');
        if (slash) *slash = 0;
        snprintf(path, sizeof path, "%s/../docs/openapi.json", exe);
        s->openapi = read_small_file(path, &s->openapi_len);
    }
    if (!s->openapi) s->openapi = read_small_file("docs/openapi.json", &s->openapi_len);
    if (!s->openapi) clog_printf("http: docs/openapi.json not found; /api/v1/openapi.json will answer 404");
}

static int resolve_addr(const char *host, int port, struct sockaddr_storage *ss, int *v6, char *err, size_t errlen)
{
    memset(ss, 0, sizeof *ss);
    struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
    *v6 = 0;
    if (!*host) {
        a4->sin_family = AF_INET;
        a4->sin_addr.s_addr = htonl(INADDR_ANY);
    } else if (strcasecmp(host, "localhost") == 0 || inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
        a4->sin_family = AF_INET;
        if (strcasecmp(host, "localhost") == 0) a4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    } else if (inet_pton(AF_INET6, host, &a6->sin6_addr) == 1) {
        a6->sin6_family = AF_INET6;
        *v6 = 1;
    } else {
        struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE};
        struct addrinfo *res = NULL;
        int e = getaddrinfo(host, NULL, &hints, &res);
        if (e != 0 || !res) {
            snprintf(err, errlen, "--listen: cannot resolve %s: %s", host, gai_strerror(e));
            return -1;
        }
        memcpy(ss, res->ai_addr, res->ai_addrlen);
        *v6 = res->ai_family == AF_INET6;
        freeaddrinfo(res);
    }
    if (*v6) a6->sin6_port = htons((uint16_t)port);
    else a4->sin_port = htons((uint16_t)port);
    return 0;
}

/* The server's copies of the certificate and key; the key's bytes do not outlive it. */
static void tls_wipe(http_server_t *s)
{
    if (s->tls_key) explicit_bzero(s->tls_key, strlen(s->tls_key));
    free(s->tls_key);
    free(s->tls_cert);
    s->tls_key = s->tls_cert = NULL;
}

int http_start(coordinator_t *c, const http_config_t *cfg, http_server_t **out, char *err, size_t errlen)
{
    *out = NULL;
    if (http_check_config(cfg, err, errlen) != 0) return -1;
    char host[256];
    int port = 0;
    http_listen_parse(cfg->listen, host, sizeof host, &port);
    http_server_t *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    s->coord = c;
    s->public_reads = cfg->public_reads;
    s->viewers_generate = cfg->viewers_generate;
    s->sse_max = cfg->sse_max;
    s->sse_per_client = cfg->sse_per_client > 0 ? cfg->sse_per_client : HTTP_SSE_PER_CLIENT_DEFAULT;
    for (int i = 0; i < cfg->nallowed_hosts; i++) {
        auth_host_header_parse(cfg->allowed_hosts[i], s->allowed_hosts[i], sizeof s->allowed_hosts[i]);
        s->allowed_ptrs[i] = s->allowed_hosts[i];
    }
    s->nallowed_hosts = cfg->nallowed_hosts;
    s->conns_per_client = cfg->conns_per_client > 0 ? cfg->conns_per_client : HTTP_CONNS_PER_CLIENT_DEFAULT;
    s->header_timeout_s = cfg->header_timeout_s > 0 ? cfg->header_timeout_s : HTTP_HEADER_TIMEOUT_DEFAULT_S;
    s->threads = cfg->threads;
    s->body_max = cfg->body_max ? cfg->body_max : HTTP_BODY_MAX_DEFAULT;
    s->model_max = cfg->model_max ? cfg->model_max : HTTP_MODEL_MAX_DEFAULT;
    s->cache_s = cfg->cache_ms / 1000.0;
    if (!cfg->tls_cert_pem != !cfg->tls_key_pem) {
        snprintf(err, errlen, "--tls-cert and --tls-key: give both");
        free(s);
        return -1;
    }
    if (cfg->tls_cert_pem && (!(s->tls_cert = strdup(cfg->tls_cert_pem)) || !(s->tls_key = strdup(cfg->tls_key_pem)))) {
        snprintf(err, errlen, "out of memory");
        tls_wipe(s);
        free(s);
        return -1;
    }
    if (cfg->token && *cfg->token) {
        s->token_len = strlen(cfg->token);
        memcpy(s->token, cfg->token, s->token_len + 1);
    }
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->cond, NULL);
    pthread_mutex_init(&s->prom_lock, NULL);
    pthread_mutex_init(&s->job_cache_lock, NULL);
    pthread_mutex_init(&s->hdr_lock, NULL);
    pthread_cond_init(&s->hdr_cond, NULL);
    if (static_root_resolve(cfg->static_dir, s->static_dir, sizeof s->static_dir, err, errlen) != 0) goto fail;
    load_openapi(s);

    struct sockaddr_storage ss;
    int v6 = 0;
    if (resolve_addr(host, port, &ss, &v6, err, errlen) != 0) goto fail;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG |
                     (v6 ? MHD_USE_IPv6 : 0) | (s->tls_cert ? MHD_USE_TLS : 0);
    /* HTTPS: the pair was already tried by http_tls_load (tls.c); without TLS the array
     * ends at once. */
    struct MHD_OptionItem tls_opts[] = {
        {s->tls_cert ? MHD_OPTION_HTTPS_MEM_KEY : MHD_OPTION_END, 0, s->tls_key},
        {MHD_OPTION_HTTPS_MEM_CERT, 0, s->tls_cert},
        {MHD_OPTION_END, 0, NULL},
    };
    s->daemon = MHD_start_daemon(flags, (uint16_t)port, NULL, NULL, on_request, s, MHD_OPTION_EXTERNAL_LOGGER, mhd_log,
                                 s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss, MHD_OPTION_THREAD_POOL_SIZE,
                                 (unsigned)s->threads, MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
                                 MHD_OPTION_NOTIFY_CONNECTION, on_connection, s, MHD_OPTION_URI_LOG_CALLBACK, uri_log,
                                 s, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)s->header_timeout_s,
                                 MHD_OPTION_CONNECTION_LIMIT, (unsigned)CONNECTION_LIMIT,
                                 MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)s->conns_per_client, MHD_OPTION_ARRAY,
                                 tls_opts, MHD_OPTION_END);
    if (!s->daemon) {
        snprintf(err, errlen, "cannot serve %s on %s: %s", s->tls_cert ? "HTTPS" : "HTTP", cfg->listen,
                 errno ? strerror(errno) : "libmicrohttpd failed");
        goto fail;
    }
    if (pthread_create(&s->hdr_thread, NULL, hdr_main, s) != 0) {
        snprintf(err, errlen, "cannot start the header-deadline thread");
        MHD_stop_daemon(s->daemon);
        goto fail;
    }
    s->hdr_thread_on = 1;
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
    s->port = info ? info->port : port;
    clog_printf("http: REST API and dashboard on %s://%s%s%s:%d/ (%d threads, static files from %s%s)",
                s->tls_cert ? "https" : "http", v6 ? "[" : "", *host ? host : "0.0.0.0", v6 ? "]" : "", s->port,
                s->threads, s->static_dir,
                s->token_len ? (s->public_reads ? ", token needed for POST and DELETE (--public-reads)"
                                                : ", token needed for every API call")
                             : ", no token: open to local users, Host must be loopback");
    *out = s;
    return 0;
fail:
    pthread_cond_destroy(&s->hdr_cond);
    pthread_mutex_destroy(&s->hdr_lock);
    pthread_mutex_destroy(&s->job_cache_lock);
    pthread_mutex_destroy(&s->prom_lock);
    pthread_cond_destroy(&s->cond);
    pthread_mutex_destroy(&s->lock);
    free(s->openapi);
    tls_wipe(s);
    free(s);
    return -1;
}

int http_port(const http_server_t *s) { return s ? s->port : 0; }

void http_stop(http_server_t *s)
{
    if (!s) return;
    /* End the event streams (their threads call the coordinator; new ones are refused
     * from here on, 503); then stop the workers, which closes the listening socket and
     * joins them: no coord_* call runs after this returns. Requests that arrive
     * meanwhile are served: the coordinator is still up.
     *
     * Not MHD_quiesce_daemon: in libmicrohttpd 0.9.75 to 0.9.77 (Debian 12 has 0.9.75)
     * with a thread pool and epoll it panics, aborting the process, when a pool thread
     * took the listening socket out of its epoll set in the same instant (the quiesce
     * side does not allow ENOENT); coordinator_stop_busy.sh hits that race. */
    clog_printf("http: stopping");
    sse_shutdown(s);
    /* generations' connections wait suspended for their answer: libmicrohttpd must not
     * stop with one suspended */
    generate_shutdown();
    /* the deadline thread first: MHD_stop_daemon closes every connection's socket */
    if (s->hdr_thread_on) {
        pthread_mutex_lock(&s->hdr_lock);
        s->hdr_stop = 1;
        pthread_cond_signal(&s->hdr_cond);
        pthread_mutex_unlock(&s->hdr_lock);
        pthread_join(s->hdr_thread, NULL);
    }
    MHD_stop_daemon(s->daemon);
    clog_printf("http: stopped");
    for (int i = 0; i < HTTP_JOB_CACHE_SLOTS; i++) free(s->job_cache[i].text);
    pthread_cond_destroy(&s->hdr_cond);
    pthread_mutex_destroy(&s->hdr_lock);
    pthread_mutex_destroy(&s->job_cache_lock);
    pthread_mutex_destroy(&s->prom_lock);
    pthread_cond_destroy(&s->cond);
    pthread_mutex_destroy(&s->lock);
    free(s->prom_text);
    free(s->openapi);
    tls_wipe(s);
    free(s);
}
