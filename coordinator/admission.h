/* coordinator/admission.h - the checks a submitted job passes before it is stored: a job
 * that could never run, or that names files a client may not make the workers read, is
 * refused now (400, 409 or 422 naming what is wrong), not queued to fail at its start.
 * The checks are a table (admission.c), run in its order; each is a named function. The
 * quotas are not among them: they are checked where the job is stored (quotas.h). */
#ifndef PACER_ADMISSION_H
#define PACER_ADMISSION_H

#include <stddef.h>

#include "coordinator.h"
#include "spec.h"

typedef struct {
    const job_spec_t *spec; /* as submitted */
    int again;              /* a retry: a built-in data set is placed anew */
    int world;              /* the ranks it runs, a parameter server's included */
    char oversub[128];      /* out: the warning of a job accepted with more ranks than slots, or "" */
    job_spec_t *placed;     /* out (the daemon's): the spec to store, the data set's place filled
                               in; NULL = store spec as it is. The caller frees it. */
    const char *refused_by; /* out: the name of the check that refused it, NULL when admitted */
} admission_t;

/* Runs the checks in order on a (spec, again and world set by the caller): COORD_OK, or the
 * first refusal's code (coordinator.h) with err saying why and a->refused_by its name. */
int admission_run(coordinator_t *c, admission_t *a, char *err, size_t errlen);

/* The checks' names in the order they run: i in [0, admission_count()). */
size_t admission_count(void);
const char *admission_name(size_t i);

#endif
