/* http/handlers_drain.c - POST and DELETE /api/v1/cluster/hosts/{name}/drain (admins:
 * routes.c's USER_ACT_CLUSTER): a host taken away with notice (coordinator/drain.h). */
#include "handlers.h"

#include <stdio.h>
#include <string.h>

#include "clog.h"
#include "http_internal.h"
#include "jsonbody.h"
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

int drain_body_parse(const char *text, size_t len, double *deadline_s, char *reason, size_t rlen, char *err,
                     size_t errlen)
{
    *deadline_s = 300;
    if (rlen) reason[0] = 0;
    err[0] = 0;
    if (len > DRAIN_BODY_MAX) {
        snprintf(err, errlen, "body: at most %d bytes", DRAIN_BODY_MAX);
        return -1;
    }
    if (len == 0) return 0;
    json_error_t e;
    json_t *body = json_loadb(text, len, JSON_REJECT_DUPLICATES, &e);
    if (!body) return jsonbody_error(&e, "body", err, errlen);
    if (!json_is_object(body)) {
        json_decref(body);
        snprintf(err, errlen, "body: must be a JSON object {\"deadline_s\": N, \"reason\": \"...\"}");
        return -1;
    }
    const char *key;
    json_t *v;
    json_object_foreach(body, key, v)
    {
        if (strcmp(key, "deadline_s") == 0 && json_is_number(v)) {
            *deadline_s = json_number_value(v);
        } else if (strcmp(key, "reason") == 0 && json_is_string(v) && json_string_length(v) < rlen &&
                   strlen(json_string_value(v)) == json_string_length(v)) {
            snprintf(reason, rlen, "%s", json_string_value(v));
        } else {
            snprintf(err, errlen, "%.60s: %s", key,
                     strcmp(key, "deadline_s") == 0  ? "must be a number of seconds"
                     : strcmp(key, "reason") != 0    ? "unknown field (deadline_s, reason)"
                     : !json_is_string(v)            ? "must be a string"
                     : json_string_length(v) >= rlen ? "too long"
                                                     : "must not hold a NUL character");
            if (json_is_string(v) && strcmp(key, "reason") == 0 && json_string_length(v) >= rlen)
                snprintf(err, errlen, "reason: at most %zu bytes", rlen ? rlen - 1 : 0);
            break;
        }
    }
    json_decref(body);
    return err[0] ? -1 : 0;
}

int handle_host_drain(http_req_t *rq)
{
    const char *name = rq->match.params[0];
    snprintf(rq->target, sizeof rq->target, "%.63s", name);
    double deadline_s;
    char reason[DRAIN_HTTP_REASON_MAX + 1], perr[160];
    if (drain_body_parse(rq->body, rq->body_len, &deadline_s, reason, sizeof reason, perr, sizeof perr) != 0)
        return handler_bad_parameter(rq, perr);
    char err[512] = "";
    json_t *out = NULL;
    int code = coord_host_drain(rq->srv->coord, name, deadline_s, reason[0] ? reason : NULL, &out, err, sizeof err);
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
