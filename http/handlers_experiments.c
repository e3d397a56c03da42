/* http/handlers_experiments.c - experiments (coordinator/experiment.h): GET, POST
 * /api/v1/experiments, GET and DELETE /api/v1/experiments/{id}. A viewer may only read
 * (server.c's route_forbidden); a member may cancel only their own experiments (checked
 * here, as handlers.c checks jobs). */
#include "handlers.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "clog.h"
#include "experiment.h"
#include "http_internal.h"
#include "jsonbody.h"
#include "respond.h"
#include "users.h"

static const char *exp_id(http_req_t *rq) { return rq->match.params[0]; }

/* A coordinator error, with the experiment's own words for 404 and 409. */
static int exp_error(http_req_t *rq, int code, const char *err)
{
    const char *detail = err && *err ? err : coord_strerror(code);
    if (code == COORD_ENOTFOUND)
        return handler_problem(rq, problem_new(404, "experiment-not-found", "No such experiment", detail, NULL, NULL));
    if (code == COORD_ESTATE)
        return handler_problem(rq, problem_new(409, "experiment-finished", "Not possible in the experiment's state",
                                               detail, NULL, NULL));
    return handler_coord_error(rq, code, err);
}

int handle_experiments_list(http_req_t *rq)
{
    long offset = 0, limit = 50;
    char err[256];
    if (query_long(&rq->query, "offset", 0, LONG_MAX / 2, 0, &offset, err, sizeof err) < 0 ||
        query_long(&rq->query, "limit", 1, 1000, 1, &limit, err, sizeof err) < 0)
        return handler_bad_parameter(rq, err);
    json_t *out = NULL;
    int code = coord_experiment_list(rq->srv->coord, offset, limit, &out);
    if (code != COORD_OK) return exp_error(rq, code, NULL);
    return respond_json(rq->conn, MHD_HTTP_OK, out, NULL, 0);
}

int handle_experiments_submit(http_req_t *rq)
{
    if (!rq->body || rq->body_len == 0)
        return handler_problem(rq, problem_new(400, "invalid-json", "Invalid JSON", "the request body is empty", NULL,
                                               NULL));
    if (memchr(rq->body, 0, rq->body_len))
        return handler_problem(rq, problem_new(400, "invalid-json", "Invalid JSON",
                                               "the request body contains a NUL byte", NULL, NULL));
    json_error_t jerr;
    json_t *body = json_loadb(rq->body, rq->body_len, JSON_REJECT_DUPLICATES, &jerr);
    if (!body) {
        char detail[512];
        snprintf(detail, sizeof detail, "line %d column %d: %s", jerr.line, jerr.column, jsonbody_text(&jerr));
        return handler_problem(rq, problem_new(400, "invalid-json", "Invalid JSON", detail, NULL, NULL));
    }
    coord_caller_t by = {rq->authed ? rq->user : NULL, rq->role};
    char id[EXPERIMENT_ID_MAX] = "", err[1024] = "";
    json_t *out = NULL;
    int code = coord_experiment_submit(rq->srv->coord, body, &by, id, sizeof id, &out, err, sizeof err);
    json_decref(body);
    if (code != COORD_OK) return exp_error(rq, code, err);
    if (!out) out = json_pack("{s:s, s:s}", "id", id, "state", "RUNNING");
    snprintf(rq->target, sizeof rq->target, "%s", id);
    char location[96];
    snprintf(location, sizeof location, "/api/v1/experiments/%s", id);
    http_header_t h[] = {{MHD_HTTP_HEADER_LOCATION, location}};
    clog_printf("http: experiment %s submitted", id);
    return respond_json(rq->conn, MHD_HTTP_CREATED, out, h, 1);
}

int handle_experiment_get(http_req_t *rq)
{
    json_t *out = NULL;
    char err[512] = "";
    int code = coord_experiment_get(rq->srv->coord, exp_id(rq), &out, err, sizeof err);
    if (code != COORD_OK) return exp_error(rq, code, err);
    return respond_json(rq->conn, MHD_HTTP_OK, out, NULL, 0);
}

int handle_experiment_cancel(http_req_t *rq)
{
    snprintf(rq->target, sizeof rq->target, "%.40s", exp_id(rq));
    if (rq->role != USER_ADMIN) {
        char owner[USER_OWNER_MAX + 1];
        int exists = 0, ret;
        int code = coord_experiment_owner(rq->srv->coord, exp_id(rq), owner, sizeof owner, &exists);
        if (code != COORD_OK) return exp_error(rq, code, NULL);
        if (exists && handler_refused(rq, USER_ACT_CANCEL, "experiment", exp_id(rq), 1, owner, &ret)) return ret;
    }
    char err[512] = "";
    int code = coord_experiment_cancel(rq->srv->coord, exp_id(rq), err, sizeof err);
    if (code != COORD_OK) return exp_error(rq, code, err);
    json_t *out = NULL;
    if (coord_experiment_get(rq->srv->coord, exp_id(rq), &out, NULL, 0) != COORD_OK)
        out = json_pack("{s:s, s:s}", "id", exp_id(rq), "state", "CANCELLED");
    clog_printf("http: experiment %s cancelled", exp_id(rq));
    return respond_json(rq->conn, MHD_HTTP_OK, out, NULL, 0);
}
