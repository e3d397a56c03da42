/* coordinator/init_source.c - see init_source.h. */
#include "init_source.h"

#include <stdio.h>
#include <string.h>

#include "dataroots.h"
#include "errmsg.h"
#include "jobfile.h"

/* init.job's file (path, as code found it) into s->init.safetensors. */
static int place_job(job_spec_t *s, int code, const char *path, char *err, size_t errlen)
{
    if (code == COORD_ENOTFOUND) {
        errmsg(err, errlen, "init.job: no job %s", s->init.job);
        return COORD_EINVAL;
    }
    if (code == COORD_MODEL_NONE) {
        errmsg(err, errlen,
               "init.job: job %s has no model.safetensors yet (its worker writes one with each checkpoint and at "
               "the end)",
               s->init.job);
        return COORD_EINVAL;
    }
    if (code != COORD_OK) return code;
    /* a retry's stored spec names the file already; anything else is a second source */
    if (s->init.safetensors[0] && strcmp(s->init.safetensors, path) != 0) {
        errmsg(err, errlen, "init: give one of checkpoint, safetensors and job, not both job and safetensors");
        return COORD_EINVAL;
    }
    if (strlen(path) >= sizeof s->init.safetensors) {
        errmsg(err, errlen, "init.job: the path of job %s's weights is too long", s->init.job);
        return COORD_EINVAL;
    }
    snprintf(s->init.safetensors, sizeof s->init.safetensors, "%s", path);
    return COORD_OK;
}

int coord_init_place(const coordinator_t *c, job_spec_t *s, int job_code, const char *job_path, char *err, size_t errlen)
{
    if (s->init.job[0]) {
        if (s->init.checkpoint[0]) {
            errmsg(err, errlen, "init: give one of checkpoint, safetensors and job, not both job and checkpoint");
            return COORD_EINVAL;
        }
        return place_job(s, job_code, job_path, err, errlen);
    }
    if (s->init.checkpoint[0] && s->init.safetensors[0]) {
        errmsg(err, errlen, "init: give one of checkpoint, safetensors and job, not both checkpoint and safetensors");
        return COORD_EINVAL;
    }
    if (s->init.checkpoint[0] && coord_data_path_allowed(c, "init.checkpoint", s->init.checkpoint, err, errlen) != 0)
        return COORD_EINVAL;
    if (s->init.safetensors[0] && coord_data_path_allowed(c, "init.safetensors", s->init.safetensors, err, errlen) != 0)
        return COORD_EINVAL;
    return COORD_OK;
}
