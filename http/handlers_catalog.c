/* http/handlers_catalog.c - the catalog (common/catalog.h) through the API: GET
 * /api/v1/models, /api/v1/models/{name} (404 model-not-found for a name the catalog does
 * not have) and /api/v1/datasets. coordinator/models.c builds the documents. */
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

int handle_model(http_req_t *rq)
{
    const char *name = rq->match.params[0];
    json_t *out = NULL;
    int code = coord_model(rq->srv->coord, name, &out);
    if (code == COORD_ENOTFOUND) {
        char detail[256];
        /* a name is echoed only when it is one the catalog could hold */
        if (catalog_name_valid(name))
            snprintf(detail, sizeof detail, "no model %.63s in the catalog (GET /api/v1/models lists them)", name);
        else
            snprintf(detail, sizeof detail,
                     "not a model name: 1 to %d letters, digits, '.', '_' or '-' (GET /api/v1/models lists them)",
                     CATALOG_NAME_MAX - 1);
        return handler_problem(rq, problem_new(404, "model-not-found", "No such model", detail, NULL, NULL));
    }
    if (code != COORD_OK) return handler_coord_error(rq, code, NULL);
    return respond_json(rq->conn, MHD_HTTP_OK, out, NULL, 0);
}

int handle_datasets(http_req_t *rq)
{
    json_t *out = NULL;
    int code = coord_datasets(rq->srv->coord, &out);
    if (code != COORD_OK) return handler_coord_error(rq, code, NULL);
    return respond_json(rq->conn, MHD_HTTP_OK, out, NULL, 0);
}
