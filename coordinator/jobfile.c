/* coordinator/jobfile.c - see jobfile.h. */
#include "jobfile.h"

#include <stdio.h>
#include <sys/stat.h>

#include "coord_internal.h"
#include "jobstore.h"

int coord_model_file_path(coordinator_t *c, const char *id, const char *file, char *path, size_t len)
{
    if (!job_id_valid(id)) return COORD_ENOTFOUND;
    char err[256];
    redisContext *rc = jobstore_pool_get(c->pool, err, sizeof err);
    if (!rc) return COORD_EUNAVAIL;
    json_t *h = NULL;
    const int js = jobstore_get(rc, id, &h);
    jobstore_pool_put(c->pool, rc, js == JS_EREDIS);
    json_decref(h);
    if (js != JS_OK) return coord_js_to_coord(js);
    struct stat st;
    return coord_job_path(c, id, file, path, len) == 0 && stat(path, &st) == 0 && S_ISREG(st.st_mode)
               ? COORD_OK
               : COORD_MODEL_NONE;
}
