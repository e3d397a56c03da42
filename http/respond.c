/* http/respond.c - see respond.h. */
#include "respond.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coordinator.h"

/* 15 significant digits: unix times with milliseconds print as stored. */
#define JSON_FLAGS (JSON_COMPACT | JSON_REAL_PRECISION(15))

/* The status of the last answer this thread queued: a handler runs on one thread from
 * start to answer, so server.c reads it right after for the audit (respond.h). */
static _Thread_local unsigned last_status;

void respond_common_headers(struct MHD_Response *r)
{
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(r, "X-Frame-Options", "DENY");
}

enum MHD_Result respond_buffer(struct MHD_Connection *conn, unsigned status, const char *content_type, char *data,
                               size_t len, const http_header_t *hdrs, size_t nhdrs)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, data ? data : (char *)"",
                                                             data ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
    if (!r) {
        free(data);
        return MHD_NO; /* out of memory: MHD closes the connection */
    }
    if (content_type) MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    respond_common_headers(r);
    for (size_t i = 0; i < nhdrs; i++) MHD_add_response_header(r, hdrs[i].name, hdrs[i].value);
    enum MHD_Result ret = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    last_status = status;
    return ret;
}

void respond_status_reset(void) { last_status = 0; }
unsigned respond_status_last(void) { return last_status; }

char *respond_json_text(json_t *body, size_t *len)
{
    char *text = json_dumps(body ? body : json_null(), JSON_FLAGS | JSON_ENCODE_ANY);
    json_decref(body);
    if (!text) return NULL;
    *len = strlen(text);
    /* A trailing newline keeps `curl` output readable; JSON parsers ignore it. */
    char *t = realloc(text, *len + 2);
    if (t) {
        text = t;
        text[(*len)++] = '\n';
        text[*len] = 0;
    }
    return text;
}

static enum MHD_Result send_json(struct MHD_Connection *conn, unsigned status, const char *type, json_t *body,
                                 const http_header_t *hdrs, size_t nhdrs)
{
    size_t len = 0;
    char *text = respond_json_text(body, &len);
    if (!text) return MHD_NO;
    return respond_buffer(conn, status, type, text, len, hdrs, nhdrs);
}

enum MHD_Result respond_json(struct MHD_Connection *conn, unsigned status, json_t *body, const http_header_t *hdrs,
                             size_t nhdrs)
{
    return send_json(conn, status, "application/json", body, hdrs, nhdrs);
}

enum MHD_Result respond_problem(struct MHD_Connection *conn, json_t *problem, const http_header_t *hdrs, size_t nhdrs)
{
    json_int_t status = json_integer_value(json_object_get(problem, "status"));
    if (status < 400 || status > 599) status = 500;
    return send_json(conn, (unsigned)status, "application/problem+json", problem, hdrs, nhdrs);
}

/* ---- problems -------------------------------------------------------------------------------- */

static const char *http_status_title(int status)
{
    switch (status) {
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 409: return "Conflict";
    case 413: return "Payload Too Large";
    case 415: return "Unsupported Media Type";
    case 421: return "Misdirected Request";
    case 422: return "Unprocessable Content";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return "Error";
    }
}

json_t *problem_new(int status, const char *slug, const char *title, const char *detail, const char *extra_key,
                    const char *extra_value)
{
    char type[96];
    snprintf(type, sizeof type, "urn:pacer:problem:%s", slug ? slug : "error");
    json_t *p = json_object();
    if (!p) return NULL;
    json_object_set_new(p, "type", json_string(type));
    json_object_set_new(p, "title", json_string(title ? title : http_status_title(status)));
    json_object_set_new(p, "status", json_integer(status));
    /* json_string refuses invalid UTF-8; a detail built from client bytes must not vanish. */
    if (detail) {
        json_t *d = json_string(detail);
        json_object_set_new(p, "detail", d ? d : json_string("(detail not valid UTF-8)"));
    }
    if (extra_key && extra_value) {
        json_t *v = json_string(extra_value);
        if (v) json_object_set_new(p, extra_key, v);
    }
    return p;
}

void problem_set_instance(json_t *problem, const char *path)
{
    json_t *v = path ? json_string(path) : NULL;
    if (v) json_object_set_new(problem, "instance", v);
}

int problem_field(const char *msg, char *field, size_t len)
{
    if (!msg || !len) return -1;
    const char *colon = strstr(msg, ": ");
    if (!colon || colon == msg) return -1;
    size_t n = (size_t)(colon - msg);
    if (n >= len) return -1;
    /* A spec field path: identifiers joined by '.', with [N] indexes. */
    for (const char *p = msg; p < colon; p++)
        if (!isalnum((unsigned char)*p) && *p != '_' && *p != '.' && *p != '[' && *p != ']' && *p != '-') return -1;
    if (!isalpha((unsigned char)msg[0]) && msg[0] != '_') return -1;
    memcpy(field, msg, n);
    field[n] = 0;
    return 0;
}

json_t *problem_from_coord(int code, const char *err)
{
    const char *detail = err && *err ? err : coord_strerror(code);
    switch (code) {
    case COORD_EINVAL: {
        char field[256];
        int has = problem_field(detail, field, sizeof field) == 0 && strcmp(field, "spec") != 0;
        return problem_new(400, "invalid-spec", "Invalid job spec", detail, has ? "field" : NULL, has ? field : NULL);
    }
    case COORD_ENOTFOUND: return problem_new(404, "job-not-found", "No such job", detail, NULL, NULL);
    case COORD_ENOFIT: {
        char field[256];
        int has = problem_field(detail, field, sizeof field) == 0;
        return problem_new(422, "does-not-fit", "The cluster cannot run this job", detail, has ? "field" : NULL,
                           has ? field : NULL);
    }
    case COORD_EDATA: {
        char field[256];
        int has = problem_field(detail, field, sizeof field) == 0;
        return problem_new(422, "invalid-dataset", "The data set cannot be used", detail, has ? "field" : NULL,
                           has ? field : NULL);
    }
    case COORD_ESTATE: return problem_new(409, "job-finished", "Not possible in the job's state", detail, NULL, NULL);
    case COORD_ELIMIT: return problem_new(429, "limit-reached", "A limit is reached", detail, NULL, NULL);
    case COORD_EDENIED: {
        char field[256];
        int has = problem_field(detail, field, sizeof field) == 0;
        return problem_new(403, "forbidden", NULL, detail, has ? "field" : NULL, has ? field : NULL);
    }
    case COORD_EUNAVAIL:
        return problem_new(503, "redis-unavailable", "Redis unavailable",
                           err && *err ? err : "the job store (Redis) does not answer; try again later", NULL, NULL);
    default: return problem_new(500, "internal", NULL, detail, NULL, NULL);
    }
}
