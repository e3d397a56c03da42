/* http/prom.c - see prom.h. */
#include "prom.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "phases.h"
#include "query.h"
#include "redis_keys.h"
#include "textbuf.h"


int prom_escape_label(const char *s, char *out, size_t len)
{
    size_t o = 0;
    for (; s && *s; s++) {
        const char *rep = NULL;
        char one[2] = {*s, 0};
        if (*s == '\\') rep = "\\\\";
        else if (*s == '"') rep = "\\\"";
        else if (*s == '\n') rep = "\\n";
        else rep = one;
        size_t n = strlen(rep);
        if (o + n + 1 > len) return -1;
        memcpy(out + o, rep, n);
        o += n;
    }
    if (o + 1 > len) return -1;
    out[o] = 0;
    return 0;
}

/* A finite number as Prometheus wants it; integers without a fraction. */
static void sb_value(textbuf_t *b, double v)
{
    if (isnan(v)) textbuf_printf(b, "NaN\n");
    else if (isinf(v)) textbuf_printf(b, "%s\n", v > 0 ? "+Inf" : "-Inf");
    else if (v == floor(v) && fabs(v) < 1e15) textbuf_printf(b, "%.0f\n", v);
    else textbuf_printf(b, "%.9g\n", v);
}

typedef enum { RANK_FIELD, RANK_STALENESS } source_t;

typedef struct {
    const char *name;
    const char *type;
    const char *help;
    source_t source;
    const char *key; /* field of the rank object, or of its "staleness" object */
} rank_family_t;

/* One row per per-rank family: the text is a loop over this table. A value that is not a
 * number (null: not measured, or absent) exports no sample at all, never a 0 (issue 29). */
static const rank_family_t RANK_FAMILIES[] = {
    {"pacer_rank_samples_per_second", "gauge", "Training throughput of the rank (EWMA of samples/s).", RANK_FIELD,
     "samples_per_s"},
    {"pacer_rank_staleness_mean", "gauge", "Mean staleness of the updates the rank applied.", RANK_STALENESS, "mean"},
    {"pacer_rank_staleness_p95", "gauge", "95th percentile staleness of the rank's updates.", RANK_STALENESS, "p95"},
    {"pacer_rank_staleness_updates_total", "counter", "Updates counted in the rank's staleness statistics.",
     RANK_STALENESS, "count"},
    {"pacer_rank_loss", "gauge", "Training loss of the rank's latest step.", RANK_FIELD, "loss"},
    {"pacer_rank_batch_size", "gauge", "Batch size of the rank's latest step.", RANK_FIELD, "batch"},
    {"pacer_rank_step", "gauge", "Steps the rank has done.", RANK_FIELD, "step"},
    {"pacer_rank_epoch", "gauge", "Epoch the rank is in.", RANK_FIELD, "epoch"},
    {"pacer_rank_heartbeat_age_seconds", "gauge", "Seconds since the rank's last heartbeat.", RANK_FIELD,
     "heartbeat_age_s"},
    {"pacer_rank_test_accuracy", "gauge", "Latest test accuracy reported by the rank.", RANK_FIELD, "test_accuracy"},
    {"pacer_rank_noise_scale", "gauge", "Gradient noise scale (samples) the rank measured, smoothed.", RANK_FIELD,
     "noise_scale"},
    {"pacer_rank_global_batch", "gauge", "Global batch of the rank's latest synchronous step.", RANK_FIELD,
     "global_batch"},
    {"pacer_rank_goodput_samples_per_second", "gauge",
     "Goodput of the latest step: global batch x statistical efficiency / step time (algorithm.goodput).", RANK_FIELD,
     "goodput"},
    {"pacer_rank_statistical_efficiency", "gauge",
     "Statistical efficiency E(B) of the plan in force (algorithm.goodput).", RANK_FIELD, "efficiency"},
    {"pacer_rank_lr_scale", "gauge", "Learning-rate scale (AdaScale's gain) of the plan in force (algorithm.goodput).",
     RANK_FIELD, "lr_scale"},
    /* ssgd, local-sgd, hier-bsp (worker/compress.h); absent where not measured. */
    {"pacer_rank_comm_bytes_per_step", "gauge",
     "Bytes the rank handed to MPI per training step (all-reduce and average payloads), mean over its steps.",
     RANK_FIELD, "comm_bytes_per_step"},
    {"pacer_rank_compression_ratio", "gauge",
     "Plain / compressed payload of the rank's collectives under algorithm.compression (1 in warm-up).", RANK_FIELD,
     "compression_ratio"},
    {"pacer_rank_left_out", "gauge", "1 when the goodput planner leaves the rank out of the steps, else 0.", RANK_FIELD,
     "left_out"},
    /* GPU ranks with NVML only (worker/nvml.h); other ranks export none. */
    {"pacer_rank_gpu_utilization_percent", "gauge", "Percent of the time a kernel ran on the rank's GPU (NVML).",
     RANK_FIELD, NODE_GPU_UTIL_PCT},
    {"pacer_rank_gpu_memory_used_bytes", "gauge", "Memory in use on the rank's GPU, by every process (NVML).",
     RANK_FIELD, NODE_GPU_MEM_USED},
    {"pacer_rank_gpu_memory_total_bytes", "gauge", "Memory of the rank's GPU (NVML).", RANK_FIELD, NODE_GPU_MEM_TOTAL},
};
#define NRANK_FAMILIES (sizeof RANK_FAMILIES / sizeof RANK_FAMILIES[0])

static void family_head(textbuf_t *b, const char *name, const char *type, const char *help)
{
    textbuf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* The time breakdown (common/phases.h) as counters: the seconds of each rank's steps,
 * per phase, from the node hash's cumulative phase_<name>_s (worker/redis_report.c), and
 * the steps' wall time, which the phases add up to. */
static void phase_families(textbuf_t *b, const prom_input_t *in)
{
    char job[256], lab[64], key[32];
    family_head(
        b, "pacer_rank_phase_seconds_total", "counter",
        "Seconds of the rank's training steps spent in each phase (they add up to pacer_rank_step_seconds_total).");
    for (size_t j = 0; j < in->nnodes; j++) {
        if (prom_escape_label(json_string_value(json_object_get(in->nodes[j], "job")), job, sizeof job) != 0) continue;
        size_t i;
        json_t *rank;
        json_array_foreach(json_object_get(in->nodes[j], "ranks"), i, rank)
        {
            snprintf(lab, sizeof lab, "%lld", (long long)json_integer_value(json_object_get(rank, "rank")));
            for (int ph = 0; ph < PHASE_N; ph++) {
                snprintf(key, sizeof key, "phase_%s_s", PHASE_NAMES[ph]);
                json_t *v = json_object_get(rank, key);
                if (!json_is_number(v)) continue;
                textbuf_printf(b, "pacer_rank_phase_seconds_total{job=\"%s\",rank=\"%s\",phase=\"%s\"} ", job, lab,
                               PHASE_NAMES[ph]);
                sb_value(b, json_number_value(v));
            }
        }
    }
    family_head(b, "pacer_rank_step_seconds_total", "counter", "Wall-clock seconds of the rank's training steps.");
    for (size_t j = 0; j < in->nnodes; j++) {
        if (prom_escape_label(json_string_value(json_object_get(in->nodes[j], "job")), job, sizeof job) != 0) continue;
        size_t i;
        json_t *rank;
        json_array_foreach(json_object_get(in->nodes[j], "ranks"), i, rank)
        {
            json_t *v = json_object_get(rank, "step_s");
            if (!json_is_number(v)) continue;
            snprintf(lab, sizeof lab, "%lld", (long long)json_integer_value(json_object_get(rank, "rank")));
            textbuf_printf(b, "pacer_rank_step_seconds_total{job=\"%s\",rank=\"%s\"} ", job, lab);
            sb_value(b, json_number_value(v));
        }
    }
}

char *prom_render(const prom_input_t *in, size_t *len)
{
    textbuf_t b = {0};
    char job[256], lab[64];

    family_head(&b, "pacer_redis_up", "gauge", "Whether the job store (Redis) answered this scrape.");
    textbuf_printf(&b, "pacer_redis_up %d\n", in->redis_up ? 1 : 0);
    family_head(&b, "pacer_sse_streams", "gauge", "Server-Sent Events streams open now.");
    textbuf_printf(&b, "pacer_sse_streams %ld\n", in->sse_streams);
    if (in->redis_up) {
        family_head(&b, "pacer_jobs", "gauge", "Jobs by state.");
        for (int s = 0; QUERY_STATES[s]; s++)
            textbuf_printf(&b, "pacer_jobs{state=\"%s\"} %ld\n", QUERY_STATES[s], in->states[s]);
    }
    if (in->nnodes > 0 && in->restarts) {
        family_head(&b, "pacer_job_restarts", "gauge", "Restarts of the running job so far.");
        for (size_t j = 0; j < in->nnodes; j++) {
            if (prom_escape_label(json_string_value(json_object_get(in->nodes[j], "job")), job, sizeof job) != 0)
                continue;
            textbuf_printf(&b, "pacer_job_restarts{job=\"%s\"} %ld\n", job, in->restarts[j]);
        }
    }
    for (size_t f = 0; f < NRANK_FAMILIES && in->nnodes > 0; f++) {
        const rank_family_t *fam = &RANK_FAMILIES[f];
        family_head(&b, fam->name, fam->type, fam->help);
        for (size_t j = 0; j < in->nnodes; j++) {
            if (prom_escape_label(json_string_value(json_object_get(in->nodes[j], "job")), job, sizeof job) != 0)
                continue;
            size_t i;
            json_t *rank;
            json_array_foreach(json_object_get(in->nodes[j], "ranks"), i, rank)
            {
                json_t *src = fam->source == RANK_FIELD ? rank : json_object_get(rank, "staleness");
                json_t *v = json_object_get(src, fam->key);
                if (!json_is_number(v)) continue;
                /* A statistic of the rank's updates (all but their count) is absent until it
                 * has applied one, even where a worker from before issue 29 wrote 0 for the
                 * mean of none. */
                if (fam->source == RANK_STALENESS && strcmp(fam->key, "count") != 0 &&
                    !(json_number_value(json_object_get(src, "count")) > 0))
                    continue;
                snprintf(lab, sizeof lab, "%lld", (long long)json_integer_value(json_object_get(rank, "rank")));
                textbuf_printf(&b, "%s{job=\"%s\",rank=\"%s\"} ", fam->name, job, lab);
                sb_value(&b, json_number_value(v));
            }
        }
    }
    if (in->nnodes > 0) phase_families(&b, in);
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    if (!b.p) textbuf_printf(&b, "%s", "");
    *len = b.len;
    return b.p;
}
