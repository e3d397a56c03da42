/* coordinator/dynbatch.h - dynamic minibatch assignment and the persistent performance
 * profiles it starts from.
 *
 * Worker w of a job is MPI rank w, or w + 1 for asynchronous algorithms (rank 0 is the
 * parameter server). The assignment is pacer:job:{id}:assignment {version, batches (JSON
 * array, one entry per worker, sum = workers x batch_size), time, source}; the workers'
 * Redis sinks read it (redis_report_assignment). Plans come from common/planner.h's
 * dynamic-batching rule (planner_bounds, planner_replan), the one the workers use.
 *
 * Profiles: pacer:profile:{host}:{device}:{model} {samples_per_s (EWMA over jobs),
 * updated, jobs}. A rank's measured speed is multiplied by its emulated slowdown before it
 * is folded in (the profile describes the machine, not the emulation) and divided by the
 * spec's slowdown again when an initial plan is made from it.
 */
#ifndef PACER_DYNBATCH_H
#define PACER_DYNBATCH_H

#include <hiredis/hiredis.h>

#include "spec.h"

#define DYNBATCH_PROFILE_ALPHA 0.3 /* weight of a new job in a profile's EWMA */

/* n is the number of workers the job runs with now: the spec's, or fewer after an
 * elastic restart (coordinator/run_elastic.c). The global batch is the spec's workers x
 * batch_size either way; with fewer workers the upper bound is raised to what they need
 * to hold it. */

/* One planning round from the ranks' current EWMA speeds (node hashes). Returns 1 when a
 * new assignment was written, 0 when nothing changed or speeds are not all known yet,
 * JS_EREDIS when the connection broke. */
int dynbatch_replan(redisContext *c, const char *id, const job_spec_t *s, int n);

/* Before the first launch: when every worker's (host, device, model) has a profile,
 * writes an initial assignment (source "profile") and returns 1; 0 when a profile is
 * missing or an assignment already exists; JS_EREDIS. rank_host[r] is the host rank r
 * is expected to run on. */
int dynbatch_initial(redisContext *c, const char *id, const job_spec_t *s, int n, const char *const *rank_host);

/* An elastic restart with n workers: a new assignment (version + 1, source "resize")
 * from the profiles of the hosts the ranks will run on (rank_host; NULL when the
 * launcher cannot know, as under Slurm), else the even split. Returns 1, or JS_EREDIS. */
int dynbatch_resize(redisContext *c, const char *id, const job_spec_t *s, int n, const char *const *rank_host);

/* After a job ends: folds each (host, device)'s mean measured speed into its profile.
 * Returns the number of profiles updated, or JS_EREDIS. */
int dynbatch_fold_profiles(redisContext *c, const char *id, const job_spec_t *s, int world);

/* Parsers of the Redis replies above, pure (fuzzed by fuzz/fuzz_redis.c). */
/* HMGET assignment version batches: cur[0..n) = the stored plan's entries that are
 * integers in [1, INT_MAX] when it has exactly n of them, dflt otherwise; *version = the
 * stored version when positive, else 0. */
void dynbatch_parse_assignment(const redisReply *r, int n, int dflt, int *cur, long long *version);
/* A samples_per_s value (node or profile hash): positive and finite, else 0. */
double dynbatch_parse_speed(const redisReply *r);
/* HMGET node:{rank} host device samples_per_s slowdown role: 1 with the host, device (each
 * shorter than its buffer) and the speed with the emulated slowdown taken out, for a
 * worker rank that reported one; 0 for anything else (the PS, missing fields). */
int dynbatch_parse_node(const redisReply *rep, char *host, size_t hostlen, char *dev, size_t devlen, double *speed);

#endif
