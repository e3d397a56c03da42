/* http/handlers_drain.c - POST and DELETE /api/v1/cluster/hosts/{name}/drain (admins:
 * routes.c's USER_ACT_CLUSTER): a host taken away with notice (coordinator/drain.h). */
#include "handlers.h"

#include <stdio.h>
#include <string.h>

#include "clog.h"
#include "http_internal.h"
#include "respond.h"

#define DRAIN_BODY_MAX 4096

static int drain_problem(http_req_t *rq, int code, const char *err)
{
    if (code == COORD_EINVAL)
        return handler_problem(rq, problem_new(400, "invalid-drain", "Invalid drain", err, NULL, NULL));
    if (code == COORD_ENOTFOUND)
        return handler_problem(rq, problem_new(404, "host-not-found", "No such host", err, NULL, NULL));
    return handler_coord_error(rq, code, err);
}

/* {"deadline_s": N (default 300), "reason": "..." (optional)}; any other field is refused
 * by name, so a typo is not a drain with defaults. */
int handle_host_drain(http_req_t *rq)
{
    const char *name = rq->match.params[0];
    snprintf(rq->target, sizeof rq->target, "%.63s", name);
    double deadline_s = 300;
    const char *reason = NULL;
    json_t *body = NULL;
    if (rq->body_len > DRAIN_BODY_MAX) return handler_bad_parameter(rq, "body: at most 4096 bytes");
    if (rq->body_len > 0) {
        json_error_t e;
        body = json_loadb(rq->body, rq->body_len, 0, &e);
        if (!json_is_object(body)) {
            json_decref(body);
            return handler_bad_parameter(rq, "body: must be a JSON object {\"deadline_s\": N, \"reason\": \"...\"}");
        }
        const char *key;
        json_t *v;
        char err[160];
        json_object_foreach(body, key, v)
        {
            if (strcmp(key, "deadline_s") == 0 && json_is_number(v)) deadline_s = json_number_value(v);
            else if (strcmp(key, "reason") == 0 && json_is_string(v)) reason = json_string_value(v);
            else {
                snprintf(err, sizeof err, "%.60s: %s", key,
                         strcmp(key, "deadline_s") == 0 ? "must be a number of seconds"
                         : strcmp(key, "reason") == 0   ? "must be a string"
                                                        : "unknown field (deadline_s, reason)");
                json_decref(body);
                return handler_bad_parameter(rq, err);
            }
        }
    }
    char err[512] = "";
    json_t *out = NULL;
    int code = coord_host_drain(rq->srv->coord, name, deadline_s, reason, &out, err, sizeof err);
    json_decref(body);
    if (code != COORD_OK) return drain_problem(rq, code, err);
    clog_printf("http: host %.200s drained", name);
    return respond_json(rq->conn, MHD_HTTP_OK, out, NULL, 0);
}

int handle_host_undrain(http_req_t *rq)
{
    const char *name = rq->match.params[0];
    snprintf(rq->target, sizeof rq->target, "%.63s", name);
    char err[512] = "";
    int code = coord_host_undrain(rq->srv->coord, name, err, sizeof err);
    if (code != COORD_OK) return drain_problem(rq, code, err);
    clog_printf("http: drain of host %.200s ended", name);
    return respond_buffer(rq->conn, MHD_HTTP_NO_CONTENT, NULL, NULL, 0, NULL, 0);
}
