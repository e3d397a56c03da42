/* http/handlers_history.c - GET /api/v1/jobs/{id}/history: the job's metric history,
 * downsampled (coordinator/jobhistory.h builds it). ?points=N, HISTORY_POINTS_MIN..
 * HISTORY_POINTS_MAX per series (default HISTORY_POINTS_DEFAULT); anything else is a 400
 * naming the parameter. */
#include "handlers.h"

#include <stdio.h>
#include <string.h>

#include "http_internal.h"
#include "jobhistory.h"
#include "query.h"
#include "respond.h"

int handle_job_history(http_req_t *rq)
{
    long points = HISTORY_POINTS_DEFAULT;
    char err[256];
    if (query_long(&rq->query, "points", HISTORY_POINTS_MIN, HISTORY_POINTS_MAX, 0, &points, err, sizeof err) < 0) {
        return handler_bad_parameter(rq, err);
    }
    json_t *out = NULL;
    int code = coord_history(rq->srv->coord, rq->match.params[0], points, &out);
    if (code != COORD_OK) return handler_coord_error(rq, code, NULL);
    return respond_json(rq->conn, MHD_HTTP_OK, out, NULL, 0);
}
