/* http/handlers_webhooks.c - POST, GET /api/v1/webhooks and DELETE /api/v1/webhooks/{id}
 * (coordinator/webhook.h): an admin's subscriptions cover any job, a member's their own
 * (routes.c lets members and admins change them; the coordinator checks whose job and
 * whose subscription). No answer carries a secret. */
#include "handlers.h"

#include <stdio.h>
#include <string.h>

#include "clog.h"
#include "http_internal.h"
#include "respond.h"
#include "webhook.h"

static coord_caller_t webhook_caller(const http_req_t *rq)
{
    return (coord_caller_t){rq->authed ? rq->user : NULL, rq->role};
}

static int webhook_problem(http_req_t *rq, int code, const char *err)
{
    switch (code) {
    case COORD_EINVAL:
        return handler_problem(rq, problem_new(400, "invalid-webhook", "Invalid webhook", err, NULL, NULL));
    case COORD_EDENIED:
        return handler_problem(rq, problem_new(403, "forbidden", NULL, err, "role", users_role_name(rq->role)));
    case COORD_ENOTFOUND:
        return handler_problem(rq, problem_new(404, "not-found", "No such job or webhook", err, NULL, NULL));
    case COORD_ESTATE:
        return handler_problem(rq,
                               problem_new(409, "webhooks-unavailable", "Webhooks are not available", err, NULL, NULL));
    default: return handler_coord_error(rq, code, err);
    }
}

int handle_webhooks_add(http_req_t *rq)
{
    char err[512] = "";
    json_t *out = NULL;
    coord_caller_t by = webhook_caller(rq);
    int code = coord_webhook_add(rq->srv->coord, &by, rq->body, rq->body_len, &out, err, sizeof err);
    if (code != COORD_OK) return webhook_problem(rq, code, err);
    const char *id = json_string_value(json_object_get(out, "id"));
    snprintf(rq->target, sizeof rq->target, "%s", id ? id : "");
    char location[64];
    snprintf(location, sizeof location, "/api/v1/webhooks/%s", id ? id : "");
    http_header_t h[] = {{MHD_HTTP_HEADER_LOCATION, location}};
    return respond_json(rq->conn, MHD_HTTP_CREATED, out, h, 1);
}

int handle_webhooks_list(http_req_t *rq)
{
    char err[256] = "";
    json_t *out = NULL;
    coord_caller_t by = webhook_caller(rq);
    int code = coord_webhook_list(rq->srv->coord, &by, &out, err, sizeof err);
    if (code != COORD_OK) return webhook_problem(rq, code, err);
    return respond_json(rq->conn, MHD_HTTP_OK, out, NULL, 0);
}

int handle_webhook_delete(http_req_t *rq)
{
    char err[256] = "";
    const char *id = rq->match.params[0];
    snprintf(rq->target, sizeof rq->target, "%.63s", id);
    coord_caller_t by = webhook_caller(rq);
    int code = coord_webhook_remove(rq->srv->coord, &by, id, err, sizeof err);
    if (code != COORD_OK) return webhook_problem(rq, code, err);
    return respond_buffer(rq->conn, MHD_HTTP_NO_CONTENT, NULL, NULL, 0, NULL, 0);
}
