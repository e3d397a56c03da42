/* http/handlers_users.c - users and tokens: GET, POST /api/v1/users and
 * PUT (a weight), DELETE /api/v1/users/{name} (admins: server.c's route_forbidden checks the role before
 * these run), POST /api/v1/token (the caller's own new token) and GET /api/v1/whoami (who
 * the presented token is, for the dashboard's buttons). coordinator/users.c stores them. */
#include "handlers.h"

#include <stdio.h>
#include <string.h>

#include "clog.h"
#include "http_internal.h"
#include "respond.h"
#include "users.h"

int handle_users_list(http_req_t *rq)
{
    json_t *out = NULL;
    int code = coord_user_list(rq->srv->coord, &out);
    if (code != COORD_OK) return handler_coord_error(rq, code, NULL);
    /* the daemon's own token: always there while one is configured, no record */
    if (rq->srv->token_len)
        json_array_insert_new(json_object_get(out, "users"), 0,
                              json_pack("{s:s, s:s, s:n, s:n, s:s, s:f}", "name", USER_ADMIN_NAME, "role", "admin",
                                        "created", "expires", "created_by", "--token-file or PACER_TOKEN", "weight",
                                        1.0));
    return respond_json(rq->conn, MHD_HTTP_OK, out, NULL, 0);
}

static int user_conflict(http_req_t *rq, const char *err)
{
    return handler_problem(rq, problem_new(409, "user-conflict", "Not possible for this user", err, NULL, NULL));
}

/* Without the daemon's token the coordinator checks no token (everyone local is the
 * admin, server.c), so a user it created would hold a token nothing asks for, and their
 * role would bind nobody: refused, whatever the body, saying how to turn checking on. */
static const char AUTH_OFF_DETAIL[] =
    "authentication is off: this coordinator was started without a token, so it checks none and every local "
    "caller is the admin; a user's role would bind nobody. To turn it on, restart the coordinator with --token-file "
    "FILE or PACER_TOKEN set: that token's holder is the first admin, who then adds users with it";

int handle_users_add(http_req_t *rq)
{
    char name[USER_NAME_MAX + 1], err[512], token[USER_TOKEN_LEN + 1];
    user_role_t role;
    double expires_in;
    if (!rq->srv->token_len)
        return handler_problem(rq, problem_new(409, "authentication-off", "Users need authentication", AUTH_OFF_DETAIL,
                                               NULL, NULL));
    if (users_body_parse(rq->body, rq->body_len, name, sizeof name, &role, &expires_in, err, sizeof err) != 0)
        return handler_problem(rq, problem_new(400, "invalid-user", "Invalid user", err, NULL, NULL));
    snprintf(rq->target, sizeof rq->target, "%s", name);
    json_t *out = NULL;
    int code = coord_user_add(rq->srv->coord, name, role, expires_in, rq->user, token, sizeof token, &out, err,
                              sizeof err);
    if (code == COORD_ESTATE) return user_conflict(rq, err);
    if (code != COORD_OK) return handler_coord_error(rq, code, err);
    json_object_set_new(out, "token", json_string(token)); /* shown this once; only its hash is kept */
    memset(token, 0, sizeof token);
    char location[96];
    snprintf(location, sizeof location, "/api/v1/users/%s", name);
    http_header_t h[] = {{MHD_HTTP_HEADER_LOCATION, location}};
    clog_printf("http: user %s (%s) created by %s", name, users_role_name(role), rq->user);
    return respond_json(rq->conn, MHD_HTTP_CREATED, out, h, 1);
}

int handle_user_delete(http_req_t *rq)
{
    const char *name = rq->match.params[0];
    char err[256];
    int code = coord_user_remove(rq->srv->coord, name, err, sizeof err);
    if (code == COORD_ESTATE) return user_conflict(rq, err);
    if (code == COORD_ENOTFOUND)
        return handler_problem(rq, problem_new(404, "user-not-found", "No such user", err, NULL, NULL));
    if (code != COORD_OK) return handler_coord_error(rq, code, err);
    clog_printf("http: user %s removed by %s", name, rq->user);
    return respond_buffer(rq->conn, MHD_HTTP_NO_CONTENT, NULL, NULL, 0, NULL, 0);
}

/* An admin's change of a user: {"weight": W} (its fair share under --policy fair) and its
 * limits (max_queued, max_slots, max_models, max_priority: common/users.h). */
int handle_user_update(http_req_t *rq)
{
    const char *name = rq->match.params[0];
    char err[256];
    user_update_t u;
    if (users_update_parse(rq->body, rq->body_len, &u, err, sizeof err) != 0)
        return handler_problem(rq, problem_new(400, "invalid-user", "Invalid user", err, NULL, NULL));
    json_t *out = NULL;
    int code = coord_user_update(rq->srv->coord, name, &u, &out, err, sizeof err);
    if (code == COORD_ESTATE) return user_conflict(rq, err);
    if (code == COORD_ENOTFOUND)
        return handler_problem(rq, problem_new(404, "user-not-found", "No such user", err, NULL, NULL));
    if (code != COORD_OK) return handler_coord_error(rq, code, err);
    clog_printf("http: user %s updated by %s", name, rq->user);
    return respond_json(rq->conn, MHD_HTTP_OK, out, NULL, 0);
}

/* One token per user: the new one replaces the old, which stops working at once (a
 * leaked token is then cut off by its owner alone). The expiry stays. */
int handle_token_new(http_req_t *rq)
{
    if (!rq->authed || strcmp(rq->user, USER_ADMIN_NAME) == 0)
        return user_conflict(rq, rq->authed ? "the user admin is the daemon's own token (PACER_TOKEN, --token-file): "
                                              "change it there and restart the daemon"
                                            : "an anonymous reader has no token to renew");
    char token[USER_TOKEN_LEN + 1], err[256];
    int code = coord_user_token_new(rq->srv->coord, rq->user, token, sizeof token, err, sizeof err);
    if (code == COORD_ENOTFOUND)
        return handler_problem(rq, problem_new(404, "user-not-found", "No such user", err, NULL, NULL));
    if (code != COORD_OK) return handler_coord_error(rq, code, err);
    user_record_t r;
    json_t *out = coord_user_get(rq->srv->coord, rq->user, &r) == COORD_OK ? users_record_public(&r)
                                                                           : json_pack("{s:s}", "name", rq->user);
    json_object_set_new(out, "token", json_string(token));
    memset(token, 0, sizeof token);
    return respond_json(rq->conn, MHD_HTTP_OK, out, NULL, 0);
}

int handle_whoami(http_req_t *rq)
{
    json_t *out = json_pack("{s:o, s:s, s:s}", "name", rq->authed ? json_string(rq->user) : json_null(), "role",
                            users_role_name(rq->role), "auth",
                            !rq->srv->token_len                      ? "none"
                            : !rq->authed                            ? "anonymous"
                            : strcmp(rq->user, USER_ADMIN_NAME) == 0 ? "daemon-token"
                                                                     : "user-token");
    /* the dashboard shows the Generate card by it (server.h's viewers_generate) */
    if (out) json_object_set_new(out, "viewers_generate", json_boolean(rq->srv->viewers_generate));
    user_record_t r;
    if (out && rq->authed && strcmp(rq->user, USER_ADMIN_NAME) != 0 &&
        coord_user_get(rq->srv->coord, rq->user, &r) == COORD_OK)
        json_object_set_new(out, "expires", r.expires > 0 ? json_real(r.expires) : json_null());
    return respond_json(rq->conn, MHD_HTTP_OK, out, NULL, 0);
}
