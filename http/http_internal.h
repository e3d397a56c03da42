/* http/http_internal.h - the server object and the per-request state, shared by the
 * files of http/ (server.c owns them; handlers.c, sse.c and static.c read them). */
#ifndef PACER_HTTP_INTERNAL_H
#define PACER_HTTP_INTERNAL_H

#include <limits.h>
#include <pthread.h>
#include <stddef.h>

#include <microhttpd.h>

#include "auth.h"
#include "coordinator.h"
#include "query.h"
#include "respond.h"
#include "routes.h"
#include "server.h"
#include "users.h"

typedef struct sse_stream sse_stream_t;

#define HTTP_JOB_CACHE_SLOTS 64

/* One cached GET /api/v1/jobs/{id} answer (handlers.c). */
typedef struct {
    char id[COORD_ID_MAX];
    char *text;
    size_t len;
    double at; /* monotonic time it was read from Redis */
} job_cache_entry_t;

struct http_server {
    coordinator_t *coord;
    struct MHD_Daemon *daemon;
    int port;
    int public_reads;
    int viewers_generate; /* server.h's: generation is every user's, not the owner's alone */
    int sse_max;
    int sse_per_client;
    int conns_per_client; /* MHD_OPTION_PER_IP_CONNECTION_LIMIT */
    int header_timeout_s; /* deadline for a request's headers (server.c, "header deadline") */
    char allowed_hosts[HTTP_ALLOWED_HOSTS_MAX][AUTH_HOST_MAX + 1];
    const char *allowed_ptrs[HTTP_ALLOWED_HOSTS_MAX];
    int nallowed_hosts;
    int threads;
    char *tls_cert, *tls_key; /* copies of cfg's PEM texts (the key wiped at stop); NULL = plain HTTP */
    size_t body_max;
    size_t model_max; /* ROUTE_BINARY_BODY routes' body limit (--max-model-bytes) */
    char token[AUTH_TOKEN_MAX];
    size_t token_len; /* 0 = no token configured */
    char static_dir[PATH_MAX];
    char *openapi; /* docs/openapi.json, read at start; NULL when not found */
    size_t openapi_len;

    pthread_mutex_t lock; /* everything below */
    pthread_cond_t cond;
    int stopping;
    int sse_open;          /* streams counted against sse_max (until their response is freed) */
    int sse_threads;       /* live SSE threads */
    sse_stream_t *streams; /* list of open streams, for shutdown */

    /* The header deadline (server.c): every connection, and whether it is waiting for a
     * request's headers since `since`; a thread closes the late ones. */
    pthread_mutex_t hdr_lock; /* the list and every entry's fields */
    pthread_cond_t hdr_cond;
    struct hdr_conn *hdr_conns;
    int hdr_stop;
    int hdr_thread_on;
    pthread_t hdr_thread;

    pthread_mutex_t prom_lock; /* the /metrics cache */
    char *prom_text;
    size_t prom_len;
    double prom_at;
    int prom_building; /* a thread is rebuilding prom_text (outside the lock) */

    double cache_s; /* job answers: how long an entry is fresh; 0 = no cache */
    pthread_mutex_t job_cache_lock;
    job_cache_entry_t job_cache[HTTP_JOB_CACHE_SLOTS];
};

/* Per request: allocated on the first access-handler call, freed in the completion
 * callback (which MHD runs on success, error and abort alike). */
struct http_req {
    http_server_t *srv;
    struct MHD_Connection *conn;
    const char *method;
    const char *path; /* decoded, without the query string */
    route_match_t match;
    query_t query;
    char *body; /* ROUTE_JSON_BODY routes: the request body, NUL-terminated */
    size_t body_len, body_cap, received;
    int answered; /* a response was queued early (4xx before the body) */
    /* A refusal decided from the headers of a request whose body is on its way: answered
     * once the body is read and dropped (server.c's on_request), with its headers. */
    json_t *deferred;
    http_header_t deferred_hdrs[2];
    size_t ndeferred;
    char client[64]; /* the peer's address ("127.0.0.1"): per-client limits */
    /* The request target as sent (server.c's uri_log, before libmicrohttpd decodes it in
     * place): where it starts, its length up to the first NUL, whether that part has a
     * '?', and routes_target_nul of it. */
    const char *raw_target;
    size_t raw_len;
    int raw_query;
    int target_nul;
    /* The caller (server.c's authorized): "admin" for the daemon's token and for
     * everyone when no token is configured; a user's name for their token; "" for an
     * anonymous reader (--public-reads). */
    char user[USER_NAME_MAX + 1];
    user_role_t role;
    int authed; /* 1 when user names a caller (the audit records only those) */
    /* A user's token (not the daemon's): the stored hash it matched, which an event
     * stream opened with it re-checks (sse.c: renewal replaces it); "" otherwise. */
    char token_hash[SHA256_HEX_LEN + 1];
    char target[64]; /* what a change acted on, for the audit: set by the handler that
                           creates something (a new job's id); else the route's {param} */
    double started;  /* clock_mono_s() when its headers were in: what it can have seen */
    /* A handler that suspended the connection to answer later (handlers_generate.c): resume
     * is called when libmicrohttpd calls the request again after MHD_resume_connection, to
     * queue the answer (it clears itself); resume_done when the request is over, answered or
     * not (server.c's on_completed). */
    int (*resume)(http_req_t *rq);
    void (*resume_done)(http_req_t *rq);
    void *resume_ctx;
};

/* Kills every generation still running and waits (10 s at most) until each has handed its
 * suspended connection back to libmicrohttpd (handlers_generate.c), which must not stop
 * with one suspended. */
void generate_shutdown(void);

#endif
