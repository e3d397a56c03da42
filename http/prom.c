/* http/prom.c - see prom.h. */
#include "prom.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "phases.h"
#include "query.h"
#include "record_fields.h"
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

/* The staleness families, from the rank object's "staleness" object (the API's summary
 * of the rank's staleness hash); the rank record's own families are the rows of
 * common/record_fields.h that name a metric. */
typedef struct {
    const char *name;
    const char *type;
    const char *help;
    const char *key; /* field of the rank's "staleness" object */
} stale_family_t;

static const stale_family_t STALE_FAMILIES[] = {
    {"pacer_rank_staleness_mean", "gauge", "Mean staleness of the updates the rank applied.", "mean"},
    {"pacer_rank_staleness_p95", "gauge", "95th percentile staleness of the rank's updates.", "p95"},
    {"pacer_rank_staleness_updates_total", "counter", "Updates counted in the rank's staleness statistics.", "count"},
};
#define NSTALE_FAMILIES (sizeof STALE_FAMILIES / sizeof STALE_FAMILIES[0])

static void family_head(textbuf_t *b, const char *name, const char *type, const char *help)
{
    textbuf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* The rank's label: its rank field (RF_RANK). */
static void rank_label(json_t *rank, char *lab, size_t len)
{
    snprintf(lab, len, "%lld", (long long)json_integer_value(json_object_get(rank, RECORD_FIELDS[RF_RANK].name)));
}

/* One family with labels job and rank: each rank's field key, of the rank object itself or
 * (stale) of its "staleness" object. A value that is not a number (null: not measured, or
 * absent) exports no sample at all, never a 0. */
static void rank_family(textbuf_t *b, const prom_input_t *in, const char *name, const char *type, const char *help,
                        int stale, const char *key)
{
    char job[256], lab[64];
    family_head(b, name, type, help);
    for (size_t j = 0; j < in->nnodes; j++) {
        if (prom_escape_label(json_string_value(json_object_get(in->nodes[j], "job")), job, sizeof job) != 0) continue;
        size_t i;
        json_t *rank;
        json_array_foreach(json_object_get(in->nodes[j], "ranks"), i, rank)
        {
            json_t *src = stale ? json_object_get(rank, "staleness") : rank;
            json_t *v = json_object_get(src, key);
            if (!json_is_number(v)) continue;
            /* A statistic of the rank's updates (all but their count) is absent until it
             * has applied one, even where an older worker wrote 0 for the
             * mean of none. */
            if (stale && strcmp(key, "count") != 0 && !(json_number_value(json_object_get(src, "count")) > 0)) continue;
            rank_label(rank, lab, sizeof lab);
            textbuf_printf(b, "%s{job=\"%s\",rank=\"%s\"} ", name, job, lab);
            sb_value(b, json_number_value(v));
        }
    }
}

/* The time breakdown (common/phases.h) as counters: the seconds of each rank's steps,
 * per phase, from the node hash's cumulative phase fields (the rank record's RF_PHASE_S);
 * the steps' wall time, which they add up to, is the record's step_s. */
static void phase_family(textbuf_t *b, const prom_input_t *in)
{
    char job[256], lab[64], key[RECORD_VALUE_MAX];
    family_head(
        b, "pacer_rank_phase_seconds_total", "counter",
        "Seconds of the rank's training steps spent in each phase (they add up to pacer_rank_step_seconds_total).");
    for (size_t j = 0; j < in->nnodes; j++) {
        if (prom_escape_label(json_string_value(json_object_get(in->nodes[j], "job")), job, sizeof job) != 0) continue;
        size_t i;
        json_t *rank;
        json_array_foreach(json_object_get(in->nodes[j], "ranks"), i, rank)
        {
            rank_label(rank, lab, sizeof lab);
            for (int ph = 0; ph < PHASE_N; ph++) {
                snprintf(key, sizeof key, RECORD_FIELDS[RF_PHASE_S].name, PHASE_NAMES[ph]);
                json_t *v = json_object_get(rank, key);
                if (!json_is_number(v)) continue;
                textbuf_printf(b, "pacer_rank_phase_seconds_total{job=\"%s\",rank=\"%s\",phase=\"%s\"} ", job, lab,
                               PHASE_NAMES[ph]);
                sb_value(b, json_number_value(v));
            }
        }
    }
}

char *prom_render(const prom_input_t *in, size_t *len)
{
    textbuf_t b = {0};
    char job[256];

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
    if (in->nnodes > 0) {
        for (int f = 0; f < RF_N; f++) {
            const record_field_t *row = &RECORD_FIELDS[f];
            if (row->prom) rank_family(&b, in, row->prom, row->prom_type, row->prom_help, 0, row->name);
        }
        for (size_t f = 0; f < NSTALE_FAMILIES; f++) {
            const stale_family_t *fam = &STALE_FAMILIES[f];
            rank_family(&b, in, fam->name, fam->type, fam->help, 1, fam->key);
        }
        phase_family(&b, in);
    }
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    if (!b.p) textbuf_printf(&b, "%s", "");
    *len = b.len;
    return b.p;
}
