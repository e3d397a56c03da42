/* coordinator/init_source.h - a submitted spec's init (docs/JOB_SPEC.md, "Starting from
 * trained weights") checked and placed before the job is stored: at most one source; a
 * path (init.checkpoint, init.safetensors) under a data root, as dataset.path; a job
 * (init.job) one the caller may read (every user may read every job, as GET
 * /api/v1/jobs/{id}), resolved to its latest weights, JOBDIR/model.safetensors, which the
 * stored spec's init.safetensors then names beside init.job (a retry resolves it again).
 */
#ifndef PACER_INIT_SOURCE_H
#define PACER_INIT_SOURCE_H

#include <stddef.h>

#include "coordinator.h"
#include "spec.h"

/* s checked and placed; job_code and job_path: what coord_model_file_path answered for
 * init.job's model.safetensors (the caller looks it up: COORD_OK when init.job is empty).
 * COORD_OK, COORD_EINVAL with err naming the field, or job_code's other errors. */
int coord_init_place(const coordinator_t *c, job_spec_t *s, int job_code, const char *job_path, char *err,
                     size_t errlen);

#endif
