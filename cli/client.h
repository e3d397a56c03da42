/* cli/client.h - the HTTP side of `pacer`: libcurl against the coordinator's REST API.
 *
 * One easy handle per process, so the connection is reused across calls (logs -f polls
 * over one). Every call names what failed: a transport failure is "cannot reach the
 * coordinator at URL: <libcurl's reason>"; an HTTP answer, whatever its status, is
 * returned for the caller to read (fmt_problem for the errors). Bodies kept in memory
 * are bounded (CLIENT_BODY_MAX); downloads and event streams are not kept.
 */
#ifndef PACER_CLI_CLIENT_H
#define PACER_CLI_CLIENT_H

#include <stddef.h>
#include <stdio.h>

#include "cliargs.h"
#include "sseparse.h"

#define CLIENT_BODY_MAX (64u << 20)

typedef struct client client_t;

typedef struct {
    long status; /* HTTP status; 0 before an answer */
    char *body;  /* NUL-terminated; NULL when empty or streamed elsewhere */
    size_t len;
    char content_type[128];
    char location[256];
} client_resp_t;

/* Called about every 250 ms while a stream is open (also when nothing arrives); a
 * positive return stops the stream and is returned by client_stream. */
typedef int (*client_tick_fn)(void *ctx);

/* base_url: http(s)://HOST[:PORT][/PREFIX] (checked by cli_url_valid); token may be NULL. */
client_t *client_new(const char *base_url, const char *token, char *err, size_t errlen);
/* https: verify the coordinator against the CA certificate(s) in the PEM file path
 * (CURLOPT_CAINFO) instead of the system's. Verification itself is never turned off. 0,
 * or -1 with err when the file cannot be opened (named). */
int client_set_cacert(client_t *c, const char *path, char *err, size_t errlen);
void client_free(client_t *c);
const char *client_url(const client_t *c);

/* method "GET", "POST", "PUT", "DELETE"; path begins with '/' and may carry a query; body
 * (may be NULL) is sent as application/json, a PUT to /api/v1/models/ as
 * application/octet-stream (an uploaded model's bytes). 0 when an answer came (r filled; free it with
 * client_resp_free), -1 when none did (err says why, naming the URL). */
int client_call(client_t *c, const char *method, const char *path, const char *body, size_t body_len, client_resp_t *r,
                char *err, size_t errlen);

/* GET path; a 2xx body is written to out as it arrives (r->body stays NULL), any other
 * answer is kept in r->body for its problem detail. *written counts the bytes written. */
int client_download(client_t *c, const char *path, FILE *out, size_t *written, client_resp_t *r, char *err,
                    size_t errlen);

/* GET path as an event stream (Accept: text/event-stream, Last-Event-ID when not NULL or
 * empty): a 200 body goes through parser (its callback sees the events), any other answer
 * is kept in r->body. Returns 0 when the server ended the stream, a non-zero value that
 * the parser's callback or tick returned (positive) to stop it, or -1 when the connection failed or
 * went silent for 45 s (err says which). */
int client_stream(client_t *c, const char *path, const char *last_event_id, sse_parser_t *parser, client_tick_fn tick,
                  void *ctx, client_resp_t *r, char *err, size_t errlen);

/* POST body (JSON) asking for an event stream (Accept: text/event-stream, then
 * application/json): a 200 answer of type text/event-stream goes through parser; any other
 * answer (an error, or the JSON of a server that answers whole) is kept in r->body, its
 * type in r->content_type. Returns like client_stream (there is no tick). */
int client_post_stream(client_t *c, const char *path, const char *body, size_t body_len, sse_parser_t *parser,
                       client_resp_t *r, char *err, size_t errlen);

void client_resp_free(client_resp_t *r);

/* "/api/v1/jobs/<id><suffix>" with id percent-encoded (ids come from the command line). */
int client_job_path(char *out, size_t len, const char *id, const char *suffix);
/* The same under any collection ("/api/v1/models/"). 0, or -1 when it does not fit. */
int client_item_path(char *out, size_t len, const char *collection, const char *id, const char *suffix);

#endif
