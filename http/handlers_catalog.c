/* http/handlers_catalog.c - the catalog (common/catalog.h) through the API: GET
 * /api/v1/models, /api/v1/models/{name} (404 model-not-found for a name the catalog does
 * not have), PUT and DELETE /api/v1/models/{name} (uploaded ONNX models:
 * coordinator/modelstore.c) and /api/v1/datasets. coordinator/models.c builds the
 * documents. */
#include "handlers.h"

#include <stdio.h>

#include "catalog.h"
#include "http_internal.h"
#include "respond.h"

int handle_models(http_req_t *rq)
{
    json_t *out = NULL;
    int code = coord_models(rq->srv->coord, &out);
    if (code != COORD_OK) return handler_coord_error(rq, code, NULL);
    return respond_json(rq->conn, MHD_HTTP_OK, out, NULL, 0);
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
    json_t *out = NULL;
    int created = 0;
    char err[1024];
    int code = coord_model_put(rq->srv->coord, name, rq->body, rq->body_len, &out, &created, err, sizeof err);
    if (code != COORD_OK) return model_problem(rq, code, err);
    return respond_json(rq->conn, created ? MHD_HTTP_CREATED : MHD_HTTP_OK, out, NULL, 0);
}

int handle_model_delete(http_req_t *rq)
{
    const char *name = rq->match.params[0];
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
