/* http/server.h - the REST API and dashboard server of pacer-coordinator (libmicrohttpd).
 *
 *   http_check_config()   before anything starts: the listen address parses, and a
 *                         non-loopback address has a token (else the daemon exits 2);
 *   http_start()          after coordinator_start(): binds and serves on a thread pool;
 *   http_stop()           before coordinator_stop(): ends the SSE streams, waits for
 *                         their threads, stops the daemon. No coord_* call runs after it.
 *
 * Threads: MHD_OPTION_THREAD_POOL_SIZE workers with epoll serve the short requests; each
 * Server-Sent Events stream has its own thread blocked in coord_events_wait, and its
 * connection is suspended while there is nothing to send (sse.c).
 *
 * Caching: GET /api/v1/jobs/{id} answers are kept for cache_ms (500 ms by default; a
 * POST or DELETE through this server drops the job's entry at once), /metrics text for
 * one second. Everything else is read from Redis on every request.
 *
 * Without a token on a loopback address the API is open: anyone who can open a connection
 * to 127.0.0.1 on this machine can submit and cancel jobs. Requests whose Host is not a
 * loopback name or address (or an --allowed-host) are refused with 421, so that a web
 * page cannot reach the API through DNS rebinding. With a token every API call needs it
 * (reads too, unless public_reads); /healthz and the dashboard's files never do.
 */
#ifndef PACER_HTTP_SERVER_H
#define PACER_HTTP_SERVER_H

#include <stddef.h>

#include "coordinator.h"

#define HTTP_BODY_MAX_DEFAULT (1 << 20)
#define HTTP_MODEL_MAX_DEFAULT ((size_t)64 << 20) /* PUT /api/v1/models/{name}: --max-model-bytes */
#define HTTP_SSE_MAX_DEFAULT 64
#define HTTP_SSE_PER_CLIENT_DEFAULT 8
#define HTTP_ALLOWED_HOSTS_MAX 16
#define HTTP_CONNS_PER_CLIENT_DEFAULT 32
#define HTTP_HEADER_TIMEOUT_DEFAULT_S 10
#define HTTP_THREADS_DEFAULT 4
#define HTTP_CACHE_MS_DEFAULT 500

typedef struct {
    const char *listen;               /* "ADDR:PORT", "[v6]:PORT"; port 0 = any free port */
    const char *token;                /* NULL or "" = none */
    int public_reads;                 /* with a token: the read endpoints do not need it */
    int viewers_generate;             /* every user, viewers included, may generate from any job
                                           (POST /api/v1/jobs/{id}/generate); 0: the owner and admins */
    const char *const *allowed_hosts; /* without a token: Host names answered besides the
                                           loopback ones (--allowed-host) */
    int nallowed_hosts;
    int sse_per_client;     /* streams one client address may hold; 0 = HTTP_SSE_PER_CLIENT_DEFAULT */
    int conns_per_client;   /* connections one client address may hold (more are closed at
                                 accept); 0 = HTTP_CONNS_PER_CLIENT_DEFAULT */
    int header_timeout_s;   /* a connection whose request headers are not all in this many
                                 seconds after it was accepted (or after its previous request
                                 ended) is closed, however it trickles (Slowloris); 0 = default */
    const char *static_dir; /* NULL = build/static next to the binary, else ./static */
    int threads;            /* worker threads; 0 = HTTP_THREADS_DEFAULT */
    int sse_max;            /* concurrent SSE streams; 0 = HTTP_SSE_MAX_DEFAULT */
    size_t body_max;        /* request body limit; 0 = HTTP_BODY_MAX_DEFAULT */
    size_t model_max;       /* an uploaded model's body limit; 0 = HTTP_MODEL_MAX_DEFAULT */
    int cache_ms;           /* GET /api/v1/jobs/{id} answers are reused this long; 0 = off */
    /* HTTPS: PEM texts from http_tls_load() (tls.h), both or neither; NULL = plain HTTP.
     * The REST API, the dashboard, the event streams and /metrics are all served over it. */
    const char *tls_cert_pem;
    const char *tls_key_pem;
} http_config_t;

typedef struct http_server http_server_t;

void http_config_defaults(http_config_t *cfg);

/* "127.0.0.1:8080" -> host "127.0.0.1", port 8080; "[::1]:80" -> "::1"; ":8080" -> "".
 * Returns 0, or -1 when it is not ADDR:PORT with a port in 0..65535. */
int http_listen_parse(const char *listen, char *host, size_t hostlen, int *port);

/* 0, or -1 with a message for the operator (exit status 2). */
int http_check_config(const http_config_t *cfg, char *err, size_t errlen);

/* Starts serving the API of c. Returns 0, or -1 with err (address in use, no static
 * directory, ...). cfg's strings are copied. */
int http_start(coordinator_t *c, const http_config_t *cfg, http_server_t **out, char *err, size_t errlen);

/* The bound port (useful with port 0). */
int http_port(const http_server_t *s);

/* Stops serving and frees s. */
void http_stop(http_server_t *s);

#endif
