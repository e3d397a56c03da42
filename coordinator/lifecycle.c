/* coordinator/lifecycle.c - what happens to a job after it has ended: coord_retry queues
 * it again with the same spec as a new job that records its parent (coordinator.h).
 * The job's log and summary stay in STATE_DIR/jobs/{id}/ after its processes are gone,
 * so coord_logs and coord_get keep answering for finished jobs; nothing here deletes. */
#include "coord_internal.h"
#include "jobstore.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "clog.h"
#include "errmsg.h"


int coord_retry(coordinator_t *c, const char *id, char *new_id, size_t idlen, char *err, size_t errlen)
{
    return coord_retry_by(c, id, NULL, new_id, idlen, err, errlen);
}

int coord_retry_by(coordinator_t *c, const char *id, const coord_caller_t *by, char *new_id, size_t idlen, char *err,
                   size_t errlen)
{
    if (err && errlen) err[0] = 0;
    if (!job_id_valid(id)) {
        errmsg(err, errlen, "no job %s", id ? id : "(null)");
        return COORD_ENOTFOUND;
    }
    char perr[256];
    redisContext *rc = jobstore_pool_get(c->pool, perr, sizeof perr);
    if (!rc) {
        errmsg(err, errlen, "Redis at %s is unreachable", c->redis_url_shown);
        return COORD_EUNAVAIL;
    }
    json_t *h = NULL;
    int js = jobstore_get(rc, id, &h);
    jobstore_pool_put(c->pool, rc, js == JS_EREDIS);
    int code = coord_js_to_coord(js);
    if (code != COORD_OK) {
        if (code == COORD_ENOTFOUND) errmsg(err, errlen, "no job %s", id);
        else errmsg(err, errlen, "retry failed: %s", coord_strerror(code));
        return code;
    }
    const char *state = json_string_value(json_object_get(h, "state"));
    const char *spec = json_string_value(json_object_get(h, "spec"));
    job_state_t st;
    if (!state || job_state_parse(state, &st) != 0 || !job_state_terminal(st)) {
        errmsg(err, errlen,
               "job %s is %s: only a finished job (SUCCEEDED, FAILED or CANCELLED) can be retried; "
               "cancel it first",
               id, state ? state : "in an unknown state");
        code = COORD_ESTATE;
    } else if (!spec || !*spec) {
        errmsg(err, errlen, "job %s has no stored spec", id);
        code = COORD_EINTERNAL;
    } else {
        /* The stored spec is the normalised one and is validated again: a spec that this
         * version no longer accepts is refused with the field, like a new submit. */
        code = coord_submit_as(c, spec, id, by, new_id, idlen, err, errlen);
    }
    json_decref(h);
    return code;
}
