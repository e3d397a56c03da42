/* http/respond.h - every answer of the API leaves through here: respond_json for JSON
 * bodies, respond_problem for errors (RFC 7807 application/problem+json), respond_buffer
 * for the rest (Prometheus text, static files). Each takes ownership of what it is given
 * (the json_t reference, a malloc'ed buffer) on every path, queues the response and
 * returns the MHD_Result of MHD_queue_response.
 *
 * Problem documents: {"type": "urn:pacer:problem:<slug>", "title", "status", "detail",
 * "instance" (the request path), and "field" (the failing job spec field, for invalid
 * specs) or "parameter" (the failing query parameter)}. Building them is pure.
 */
#ifndef PACER_HTTP_RESPOND_H
#define PACER_HTTP_RESPOND_H

#include <stddef.h>

#include <jansson.h>
#include <microhttpd.h>

typedef struct {
    const char *name;
    const char *value;
} http_header_t;

/* Sends body (stolen; NULL sends "null") with Content-Type application/json. */
enum MHD_Result respond_json(struct MHD_Connection *conn, unsigned status, json_t *body, const http_header_t *hdrs,
                             size_t nhdrs);

/* The exact text respond_json sends for body (stolen): compact JSON and a newline.
 * malloc'ed; NULL on out-of-memory. For answers that are also cached. */
char *respond_json_text(json_t *body, size_t *len);

/* Sends a problem document (stolen) with its "status" as the HTTP status. */
enum MHD_Result respond_problem(struct MHD_Connection *conn, json_t *problem, const http_header_t *hdrs, size_t nhdrs);

/* Sends data (malloc'ed, stolen; may be NULL when len is 0) with the given type. */
enum MHD_Result respond_buffer(struct MHD_Connection *conn, unsigned status, const char *content_type, char *data,
                               size_t len, const http_header_t *hdrs, size_t nhdrs);

/* The headers every response carries (nosniff, no framing). Used by the SSE and file
 * responses that are built elsewhere. */
void respond_common_headers(struct MHD_Response *r);

/* ---- problem documents (pure) ----------------------------------------------------------- */

/* A problem: slug names the type ("invalid-spec"), title defaults to the status's reason
 * phrase when NULL, detail and extra ("field"/"parameter" value) may be NULL. */
json_t *problem_new(int status, const char *slug, const char *title, const char *detail, const char *extra_key,
                    const char *extra_value);

/* The problem for a coord_* error code (coordinator.h: EINVAL 400, ENOTFOUND 404, ESTATE
 * 409, EUNAVAIL 503, else 500), err being the coordinator's message (may be empty). For
 * EINVAL the message's field path ("optimizer.lr: must be > 0") becomes "field". */
json_t *problem_from_coord(int code, const char *err);

/* The field path a validation message starts with ("emulate.schedule[1].rank: ...")
 * into field; 0 when there is one, -1 when the message does not start with a path. */
int problem_field(const char *msg, char *field, size_t len);

/* Sets "instance" of a problem (borrowed pointer) to the request path. */
void problem_set_instance(json_t *problem, const char *path);

/* The status respond_buffer last queued on this thread (0 after respond_status_reset or
 * when nothing went through it): the audit's record of what a handler answered. */
void respond_status_reset(void);
unsigned respond_status_last(void);

#endif
