/* http/handlers_trace.c - GET /api/v1/jobs/{id}/trace: the job's recent steps as Chrome
 * trace event JSON (coordinator/jobtrace.h builds it). ?steps=N, 1..TRACE_STEPS_MAX per
 * rank (default TRACE_STEPS_DEFAULT); anything else is a 400 naming the parameter. */
#include "handlers.h"

#include <stdio.h>
#include <string.h>

#include "http_internal.h"
#include "jobtrace.h"
#include "query.h"
#include "respond.h"

int handle_job_trace(http_req_t *rq)
{
    long steps = TRACE_STEPS_DEFAULT;
    char err[256];
    if (query_long(&rq->query, "steps", 1, TRACE_STEPS_MAX, 0, &steps, err, sizeof err) < 0) {
        return handler_bad_parameter(rq, err);
    }
    json_t *out = NULL;
    int code = coord_trace(rq->srv->coord, rq->match.params[0], steps, &out);
    if (code != COORD_OK) return handler_coord_error(rq, code, NULL);
    return respond_json(rq->conn, MHD_HTTP_OK, out, NULL, 0);
}
