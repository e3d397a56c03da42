/* http/handlers_catalog.c - the catalog (common/catalog.h) through the API: GET
 * /api/v1/models, /api/v1/models/{name} (404 model-not-found for a name the catalog does
 * not have), PUT and DELETE /api/v1/models/{name} (uploaded ONNX models:
 * coordinator/modelstore.c) and /api/v1/datasets. coordinator/models.c builds the
 * documents. */
#include "handlers.h"

#include <stdio.h>
#include <string.h>

#include "catalog.h"
#include "http_internal.h"
#include "respond.h"

/* An uploaded model's "owner" (its uploader; null when none is recorded: a
 * model from before users); other models have none. */
static void set_owner(json_t *m, json_t *owners)
{
    const char *src = json_string_value(json_object_get(m, "source"));
    if (!src || strcmp(src, "uploaded") != 0) return;
    json_t *o = json_object_get(owners, json_string_value(json_object_get(m, "name")));
    json_object_set_new(m, "owner", o ? json_incref(o) : json_null());
}

int handle_models(http_req_t *rq)
{
    json_t *out = NULL, *owners = NULL;
    int code = coord_models(rq->srv->coord, &out);
    if (code != COORD_OK) return handler_coord_error(rq, code, NULL);
    if ((code = coord_model_owners(rq->srv->coord, &owners)) != COORD_OK) {
        json_decref(out);
        return handler_coord_error(rq, code, NULL);
    }
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(out, "models"), i, m) set_owner(m, owners);
    json_decref(owners);
    return respond_json(rq->conn, MHD_HTTP_OK, out, NULL, 0);
}

/* A member may replace or delete only the models they uploaded: 0, or 1 with
 * the answer (403, 503) in *ret. */
static int model_refused(http_req_t *rq, user_action_t act, int *ret)
{
    if (rq->role == USER_ADMIN) return 0;
    const char *name = rq->match.params[0];
    catalog_model_t m;
    int exists = catalog_model_get(name, &m) == 0;
    if (exists && m.source != CATALOG_UPLOADED) return 0; /* a built-in: the handler's own 409 */
    char owner[USER_OWNER_MAX + 1];
    int code = exists ? coord_model_owner(rq->srv->coord, name, owner, sizeof owner) : COORD_OK;
    if (code != COORD_OK) {
        *ret = handler_coord_error(rq, code, NULL);
        return 1;
    }
    if (!exists && act == USER_ACT_MODEL_DELETE) return 0; /* the handler's 404 */
    return handler_refused(rq, act, "model", name, exists, exists ? owner : NULL, ret);
}

/* 404 model-not-found for name. */
static int model_not_found(http_req_t *rq, const char *name)
{
    {
        char detail[256];
        /* a name is echoed only when it is one the catalog could hold */
        if (catalog_name_valid(name))
            snprintf(detail, sizeof detail, "no model %.63s in the catalog (GET /api/v1/models lists them)", name);
        else
            snprintf(detail, sizeof detail, "not a model name: " CATALOG_NAME_RULE " (GET /api/v1/models lists them)",
                     CATALOG_NAME_MAX - 1);
        return handler_problem(rq, problem_new(404, "model-not-found", "No such model", detail, NULL, NULL));
    }
}

int handle_model(http_req_t *rq)
{
    const char *name = rq->match.params[0];
    json_t *out = NULL;
    int code = coord_model(rq->srv->coord, name, &out);
    if (code == COORD_ENOTFOUND) return model_not_found(rq, name);
    if (code != COORD_OK) return handler_coord_error(rq, code, NULL);
    json_t *owners = NULL;
    if ((code = coord_model_owners(rq->srv->coord, &owners)) != COORD_OK) {
        json_decref(out);
        return handler_coord_error(rq, code, NULL);
    }
    set_owner(out, owners);
    json_decref(owners);
    return respond_json(rq->conn, MHD_HTTP_OK, out, NULL, 0);
}

/* The model routes' refusals, each its own problem type (docs/openapi.json). */
static int model_problem(http_req_t *rq, int code, const char *err)
{
    switch (code) {
    case COORD_EINVAL:
        return handler_problem(rq, problem_new(400, "model-not-onnx", "Not an ONNX model", err, NULL, NULL));
    case COORD_EDATA:
        return handler_problem(rq,
                               problem_new(422, "model-unsupported", "pacer cannot train this model", err, NULL, NULL));
    case COORD_ESTATE:
        return handler_problem(rq, problem_new(409, "model-conflict", "Not possible for this model", err, NULL, NULL));
    case COORD_ELIMIT:
        return handler_problem(rq, problem_new(429, "limit-reached", "A limit is reached", err, NULL, NULL));
    default: return handler_coord_error(rq, code, err);
    }
}

int handle_model_put(http_req_t *rq)
{
    const char *name = rq->match.params[0];
    /* a name no model can have is a request to fix (400 naming the rule), not a missing model */
    if (!catalog_name_valid(name)) {
        char detail[160];
        snprintf(detail, sizeof detail, "not a model name: " CATALOG_NAME_RULE, CATALOG_NAME_MAX - 1);
        return handler_problem(rq, problem_new(400, "bad-request", NULL, detail, NULL, NULL));
    }
    int ret;
    if (model_refused(rq, USER_ACT_MODEL_PUT, &ret)) return ret;
    json_t *out = NULL;
    int created = 0;
    char err[1024];
    /* the uploader owns a new model (recorded with it); a replacement keeps the model's
     * owner. The store refuses (409) what another upload stored after this request began:
     * of two uploads of a new name at once one wins, and none replaces unseen bytes. */
    coord_caller_t by = {rq->authed ? rq->user : NULL, rq->role};
    int code = coord_model_put(rq->srv->coord, name, rq->body, rq->body_len, &by, rq->started, &out, &created, err,
                               sizeof err);
    if (code != COORD_OK) return model_problem(rq, code, err);
    return respond_json(rq->conn, created ? MHD_HTTP_CREATED : MHD_HTTP_OK, out, NULL, 0);
}

int handle_model_delete(http_req_t *rq)
{
    const char *name = rq->match.params[0];
    int ret;
    if (model_refused(rq, USER_ACT_MODEL_DELETE, &ret)) return ret;
    char err[512];
    int code = coord_model_delete(rq->srv->coord, name, err, sizeof err);
    if (code == COORD_ENOTFOUND) return model_not_found(rq, name);
    if (code != COORD_OK) return model_problem(rq, code, err);
    return respond_buffer(rq->conn, MHD_HTTP_NO_CONTENT, NULL, NULL, 0, NULL, 0);
}

int handle_datasets(http_req_t *rq)
{
    json_t *out = NULL;
    int code = coord_datasets(rq->srv->coord, &out);
    if (code != COORD_OK) return handler_coord_error(rq, code, NULL);
    return respond_json(rq->conn, MHD_HTTP_OK, out, NULL, 0);
}
