/* http/routes.h - the REST API's route table and its matcher.
 *
 * One static table (routes.c) lists every endpoint: method, path pattern, handler and
 * flags; it ends in a not-found sentinel whose handler answers 404. Patterns are literal
 * segments plus "{name}" (one non-empty segment) and a final "{name*}" (the rest of the
 * path, one or more segments). HEAD matches the GET routes. A path that some route
 * matches with another method is a 405, with the allowed methods. Matching is pure.
 */
#ifndef PACER_HTTP_ROUTES_H
#define PACER_HTTP_ROUTES_H

#include <stddef.h>

#define ROUTE_PARAMS_MAX 2
#define ROUTE_PARAM_LEN 512

typedef struct http_req http_req_t;

/* Returns the MHD_Result of queueing the answer (MHD_YES / MHD_NO). */
typedef int (*route_handler_t)(http_req_t *rq);

enum {
    ROUTE_MUTATES = 1,   /* POST/DELETE: needs the token when one is configured */
    ROUTE_PUBLIC = 2,    /* never needs the token (dashboard files, /healthz) */
    ROUTE_JSON_BODY = 4, /* reads a JSON body: Content-Type application/json, size limit */
    /* reads a binary body (an ONNX model): Content-Type application/octet-stream, limited
     * by model_max (--max-model-bytes) instead of body_max */
    ROUTE_BINARY_BODY = 16,
    ROUTE_STREAM = 8, /* Server-Sent Events: ?access_token= is accepted (EventSource
                             cannot send headers) */
};


typedef struct {
    const char *method; /* NULL in the sentinel */
    const char *pattern;
    route_handler_t handler;
    unsigned flags;
} route_t;

typedef struct {
    const route_t *route; /* the route to run: a match, or the sentinel */
    int status;           /* 0 matched, 404 no route, 405 wrong method */
    char allow[64];       /* 405: "GET, HEAD, DELETE" */
    int nparams;
    char params[ROUTE_PARAMS_MAX][ROUTE_PARAM_LEN];
} route_match_t;

/* Matches method + path (no query string). Never returns NULL. */
const route_t *routes_match(const char *method, const char *path, route_match_t *m);

/* Matches one pattern; 1 on a match with the captures in m->params. */
int route_pattern_match(const char *pattern, const char *path, route_match_t *m);

/* Where a raw request target (as the client sent it, before percent-decoding: "/a%00b?x=1")
 * holds an encoded NUL: ROUTE_NUL_NONE, ROUTE_NUL_PATH or ROUTE_NUL_QUERY. libmicrohttpd
 * decodes %00 into the C string it hands the handlers, which would then read "/a" for
 * "/a%00b": a name cut short, another resource than the one asked for. The server
 * refuses such a request with 400. */
enum { ROUTE_NUL_NONE = 0, ROUTE_NUL_PATH = 1, ROUTE_NUL_QUERY = 2 };
int routes_target_nul(const char *raw);

/* What route r does, for the role rules (common/users.h's user_action_t): its
 * entry in routes.c's action table; else USER_ACT_READ for a read, and USER_ACT_ADMIN
 * (admins only) for a ROUTE_MUTATES route nobody classified, so that a new change is not
 * opened to members by default. */
int routes_action(const route_t *r);

/* What a ROUTE_JSON_BODY route reads, in words for its 415 ("the job spec", "the generate
 * request (...)"); "a JSON body" for a route without an entry. */
const char *routes_json_body(const route_t *r);

/* The table, sentinel excluded, for tests and docs. */
const route_t *routes_table(size_t *n);

#endif
