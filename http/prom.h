/* http/prom.h - GET /metrics: the Prometheus text exposition format 0.0.4.
 *
 * prom_render is pure: it turns what the coordinator API returned (job counts by state,
 * and coord_nodes() of each RUNNING job) into the text. handle_prometheus (handlers.c)
 * gathers that input with a few Redis round trips (prom_build) and caches the text for
 * PROM_CACHE_S, so a scraper hammering the endpoint costs Redis nothing more.
 *
 * Families: pacer_redis_up, pacer_jobs{state}, pacer_sse_streams, pacer_job_restarts{job},
 * and per rank of running jobs {job, rank}: pacer_rank_samples_per_second,
 * pacer_rank_staleness_mean, pacer_rank_staleness_p95, pacer_rank_staleness_updates_total,
 * pacer_rank_loss, pacer_rank_batch_size, pacer_rank_step, pacer_rank_epoch,
 * pacer_rank_heartbeat_age_seconds, pacer_rank_test_accuracy, and the time breakdown:
 * pacer_rank_phase_seconds_total{job, rank, phase} (common/phases.h names the phases) and
 * pacer_rank_step_seconds_total{job, rank}. A value a rank has not
 * reported yet is left out rather than exported as 0.
 */
#ifndef PACER_HTTP_PROM_H
#define PACER_HTTP_PROM_H

#include <stddef.h>

#include <jansson.h>

#define PROM_CACHE_S 1.0
#define PROM_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

typedef struct {
    int redis_up;
    long states[6];       /* counts in QUERY_STATES order */
    json_t *const *nodes; /* coord_nodes() of the running jobs (borrowed) */
    const long *restarts; /* restarts of those jobs, same order; may be NULL */
    size_t nnodes;
    long sse_streams;
} prom_input_t;

/* The exposition text (malloc'ed, NUL-terminated) and its length; NULL on out-of-memory. */
char *prom_render(const prom_input_t *in, size_t *len);

/* Escapes a label value (\\, \" and \n) into out; -1 when it does not fit. */
int prom_escape_label(const char *s, char *out, size_t len);

#endif
