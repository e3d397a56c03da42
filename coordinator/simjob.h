/* coordinator/simjob.h - what the coordinator knows about simulated jobs (a spec with
 * simulate.enabled, run by the sim launcher, coordinator/launch_sim.c): which platform
 * files a job may name, and what the daemon tells clients about its simulator.
 *
 * Platform files are read on this machine by pacer-sim, so a job may name only files
 * under the coordinator's platform directory (--sim-platforms; default sim/platforms of
 * the installation). A name without '/' is a file of that directory; a relative path is
 * taken from the coordinator's working directory; either way the real path (symbolic
 * links and ".." resolved) must lie inside the directory. A refusal names the field and
 * the directory, and says the same whether the file is missing or elsewhere, so the
 * answer tells nothing about files outside it. */
#ifndef PACER_SIMJOB_H
#define PACER_SIMJOB_H

#include <stddef.h>

#include <jansson.h>

#include "spec.h"

/* Checks simulate.platform and simulate.hostfile of s against dir (a real path; "" = no
 * directory: only generated platforms) and replaces each with its real path. Returns 0,
 * or -1 with err "simulate.platform: ..." (a COORD_EINVAL message: the HTTP layer names
 * the field). */
int simjob_resolve(const char *dir, job_spec_t *s, char *err, size_t errlen);

/* The platform files of dir (*.xml, sorted; at most 256) as a JSON array of names. */
json_t *simjob_platforms(const char *dir);

#endif
