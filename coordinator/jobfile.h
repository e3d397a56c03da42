/* coordinator/jobfile.h - a job's model files, looked up for the API's downloads (http/)
 * and for admission (init.job): apart from api.c so that admission, which api.c calls, does
 * not call back into it. */
#ifndef PACER_JOBFILE_H
#define PACER_JOBFILE_H

#include <stddef.h>

#include "coordinator.h"

/* The job's trained model file (file: "model.onnx" or "model.safetensors", in
 * STATE_DIR/jobs/{id}/, which the worker rewrites with every checkpoint and at the end: the
 * latest weights, not the best) into path. COORD_OK; COORD_ENOTFOUND for an unknown job;
 * COORD_MODEL_NONE when the job is known but has no such file yet (before its first
 * checkpoint, a simulated job, or a worker too old to write safetensors). */
#define COORD_MODEL_NONE 1
int coord_model_file_path(coordinator_t *c, const char *id, const char *file, char *path, size_t len);

#endif
