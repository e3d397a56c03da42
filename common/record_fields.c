/* common/record_fields.c - see record_fields.h. */
#include "record_fields.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "redis_keys.h"

#define AT(m) offsetof(rank_record_t, m)

/* Prometheus families read the API's rank object, where an unmeasured value is null and
 * exports no sample. */
const record_field_t RECORD_FIELDS[RF_N] = {
    [RF_RANK] = {"rank", RF_INT, RFG_ALWAYS, AT(rank), NULL, NULL, NULL},
    [RF_HOST] = {"host", RF_STR, RFG_ALWAYS, AT(host), NULL, NULL, NULL},
    [RF_PID] = {"pid", RF_INT, RFG_ALWAYS, AT(pid), NULL, NULL, NULL},
    [RF_HEARTBEAT] = {"heartbeat", RF_TIME, RFG_ALWAYS, AT(heartbeat), NULL, NULL, NULL},
    [RF_DEVICE] = {"device", RF_STR, RFG_STEP, AT(device), NULL, NULL, NULL},
    [RF_ROLE] = {"role", RF_STR, RFG_STEP, AT(role), NULL, NULL, NULL},
    [RF_SAMPLES_PER_S] = {"samples_per_s", RF_NUM, RFG_STEP, AT(samples_per_s), "pacer_rank_samples_per_second", "gauge",
                          "Training throughput of the rank (EWMA of samples/s; a language model's sample is a window "
                          "of block_size tokens: its tokens/s are this x block_size)."},
    [RF_COMPUTE_S] = {"compute_s", RF_NUM, RFG_STEP, AT(compute_s), NULL, NULL, NULL},
    [RF_COMM_S] = {"comm_s", RF_NUM, RFG_STEP, AT(comm_s), NULL, NULL, NULL},
    [RF_IDLE_S] = {"idle_s", RF_NUM, RFG_STEP, AT(idle_s), NULL, NULL, NULL},
    [RF_LAST_COMPUTE_S] = {"last_compute_s", RF_NUM, RFG_STEP, AT(last_compute_s), NULL, NULL, NULL},
    [RF_LAST_COMM_S] = {"last_comm_s", RF_NUM, RFG_STEP, AT(last_comm_s), NULL, NULL, NULL},
    [RF_LAST_IDLE_S] = {"last_idle_s", RF_NUM, RFG_STEP, AT(last_idle_s), NULL, NULL, NULL},
    /* The time breakdown, cumulative (Prometheus counters). */
    [RF_STEP_S] = {"step_s", RF_NUM, RFG_STEP, AT(step_s), "pacer_rank_step_seconds_total", "counter",
                   "Wall-clock seconds of the rank's training steps."},
    [RF_PHASE_S] = {"phase_%s_s", RF_PHASES, RFG_STEP, AT(phase_s), NULL, NULL, NULL},
    /* ssgd, local-sgd, hier-bsp (worker/compress.h); absent where not measured. */
    [RF_COMM_BYTES_PER_STEP] = {"comm_bytes_per_step", RF_NUM, RFG_COMM_BYTES, AT(comm_bytes_per_step),
                                "pacer_rank_comm_bytes_per_step", "gauge",
                                "Bytes the rank handed to MPI per training step (all-reduce and average payloads), "
                                "mean over its steps."},
    [RF_COMPRESSION_RATIO] = {"compression_ratio", RF_NUM, RFG_COMPRESSION, AT(compression_ratio),
                              "pacer_rank_compression_ratio", "gauge",
                              "Plain / compressed payload of the rank's collectives under algorithm.compression (1 "
                              "in warm-up)."},
    [RF_BATCH] = {"batch", RF_INT, RFG_BATCH, AT(batch), "pacer_rank_batch_size", "gauge",
                  "Batch size of the rank's latest step (samples; a language model's: windows of block_size tokens)."},
    [RF_LOSS] = {"loss", RF_NUM, RFG_STEP, AT(loss), "pacer_rank_loss", "gauge",
                 "Training loss of the rank's latest step (a language model's: nats per token)."},
    [RF_STEP] = {"step", RF_INT, RFG_STEP, AT(step), "pacer_rank_step", "gauge", "Steps the rank has done."},
    [RF_EPOCH] = {"epoch", RF_INT, RFG_STEP, AT(epoch), "pacer_rank_epoch", "gauge", "Epoch the rank is in."},
    [RF_SAMPLES] = {"samples", RF_INT, RFG_STEP, AT(samples), NULL, NULL, NULL},
    [RF_SLOWDOWN] = {"slowdown", RF_NUM, RFG_STEP, AT(slowdown), NULL, NULL, NULL},
    [RF_PLAN_VERSION] = {"plan_version", RF_INT, RFG_STEP, AT(plan_version), NULL, NULL, NULL},
    [RF_NOISE_SCALE] = {"noise_scale", RF_NUM, RFG_STEP, AT(noise_scale), "pacer_rank_noise_scale", "gauge",
                        "Gradient noise scale (samples) the rank measured, smoothed."},
    [RF_GLOBAL_BATCH] = {"global_batch", RF_NUM, RFG_STEP, AT(global_batch), "pacer_rank_global_batch", "gauge",
                         "Global batch of the rank's latest synchronous step."},
    [RF_EFFICIENCY] = {"efficiency", RF_NUM, RFG_PLANNED, AT(efficiency), "pacer_rank_statistical_efficiency", "gauge",
                       "Statistical efficiency E(B) of the plan in force (algorithm.goodput)."},
    [RF_LR_SCALE] = {"lr_scale", RF_NUM, RFG_PLANNED, AT(lr_scale), "pacer_rank_lr_scale", "gauge",
                     "Learning-rate scale (AdaScale's gain) of the plan in force (algorithm.goodput)."},
    [RF_GOODPUT] = {"goodput", RF_NUM, RFG_PLANNED, AT(goodput), "pacer_rank_goodput_samples_per_second", "gauge",
                    "Goodput of the latest step: global batch x statistical efficiency / step time "
                    "(algorithm.goodput)."},
    [RF_LEFT_OUT] = {"left_out", RF_INT, RFG_PLANNED, AT(left_out), "pacer_rank_left_out", "gauge",
                     "1 when the goodput planner leaves the rank out of the steps, else 0."},
    [RF_TEST_ACCURACY] = {"test_accuracy", RF_NUM, RFG_STEP, AT(test_accuracy), "pacer_rank_test_accuracy", "gauge",
                          "Latest test accuracy reported by the rank (a language model's: next-token accuracy on its "
                          "validation windows)."},
    [RF_TEST_LOSS] = {"test_loss", RF_NUM, RFG_STEP, AT(test_loss), NULL, NULL, NULL},
    [RF_UPDATED] = {"updated", RF_TIME, RFG_STEP, AT(updated), NULL, NULL, NULL},
    [RF_HEALTH] = {NODE_HEALTH, RF_STR, RFG_HEALTH, AT(health), NULL, NULL, NULL},
    [RF_WAITING] = {NODE_WAITING, RF_STR, RFG_WAITING, AT(waiting), NULL, NULL, NULL},
    [RF_WAITING_PEER] = {NODE_WAITING_PEER, RF_NUM, RFG_WAITING, AT(waiting_peer), NULL, NULL, NULL},
    [RF_WAITING_SINCE] = {NODE_WAITING_SINCE, RF_TIME, RFG_WAITING, AT(waiting_since), NULL, NULL, NULL},
    [RF_WAITING_LIMIT_S] = {NODE_WAITING_LIMIT_S, RF_NUM, RFG_WAITING, AT(waiting_limit_s), NULL, NULL, NULL},
    [RF_TOTAL_STEPS] = {"total_steps", RF_INT, RFG_TOTAL_STEPS, AT(total_steps), NULL, NULL, NULL},
    [RF_EMULATION_DEMAND_CORES] = {"emulation_demand_cores", RF_NUM, RFG_EMULATION, AT(emulation_demand_cores), NULL,
                                   NULL, NULL},
    [RF_EMULATION_CORES] = {"emulation_cores", RF_NUM, RFG_EMULATION, AT(emulation_cores), NULL, NULL, NULL},
    /* GPU ranks with NVML only (worker/nvml.h); other ranks export none. */
    [RF_GPU_UTIL_PCT] = {NODE_GPU_UTIL_PCT, RF_NUM, RFG_GPU, AT(gpu_util_pct), "pacer_rank_gpu_utilization_percent",
                         "gauge", "Percent of the time a kernel ran on the rank's GPU (NVML)."},
    [RF_GPU_MEM_USED] = {NODE_GPU_MEM_USED, RF_INT, RFG_GPU, AT(gpu_mem_used), "pacer_rank_gpu_memory_used_bytes",
                         "gauge", "Memory in use on the rank's GPU, by every process (NVML)."},
    [RF_GPU_MEM_TOTAL] = {NODE_GPU_MEM_TOTAL, RF_INT, RFG_GPU, AT(gpu_mem_total), "pacer_rank_gpu_memory_total_bytes",
                          "gauge", "Memory of the rank's GPU (NVML)."},
    /* algorithm.shard only (worker/shard.h): the rank's share of the fused buffer. */
    [RF_SHARD_PARAMS] = {"shard_params", RF_INT, RFG_SHARD, AT(shard_params), NULL, NULL, NULL},
    [RF_SHARD_STATE_BYTES] = {"shard_state_bytes", RF_INT, RFG_SHARD, AT(shard_state_bytes), NULL, NULL, NULL},
    [RF_SHARD_GRADIENT_BYTES] = {"shard_gradient_bytes", RF_INT, RFG_SHARD, AT(shard_gradient_bytes), NULL, NULL, NULL},
    [RF_HEARTBEAT_AGE_S] = {"heartbeat_age_s", RF_NUM, RFG_API, 0, "pacer_rank_heartbeat_age_seconds", "gauge",
                            "Seconds since the rank's last heartbeat."},
};

/* One name and one formatted value; returns the arguments appended (0 when full). */
static int put(const char **argv, size_t *len, int at, int cap, const char *name, const char *value)
{
    if (at + 2 > cap) return 0;
    argv[at] = name;
    len[at] = strlen(name);
    argv[at + 1] = value;
    len[at + 1] = strlen(value);
    return 2;
}

int record_fields_hset(const rank_record_t *r, const char **argv, size_t *len, char (*store)[RECORD_VALUE_MAX], int cap)
{
    int n = 0;
    for (int f = 0; f < RF_N; f++) {
        const record_field_t *row = &RECORD_FIELDS[f];
        if (row->group == RFG_API || !(r->present & (1u << row->group))) continue;
        const char *base = (const char *)r + row->offset;
        if (row->type == RF_PHASES) {
            const double *v = (const double *)(const void *)base;
            /* Two stores per phase: the name, then the value. */
            for (int k = 0; k < PHASE_N && n + 2 <= cap; k++) {
                snprintf(store[n], RECORD_VALUE_MAX, row->name, PHASE_NAMES[k]);
                snprintf(store[n + 1], RECORD_VALUE_MAX, "%.9g", isfinite(v[k]) ? v[k] : 0.0);
                n += put(argv, len, n, cap, store[n], store[n + 1]);
            }
            continue;
        }
        const char *value = store[n + 1];
        if (n + 2 > cap) break;
        switch (row->type) {
        case RF_STR: value = *(const char *const *)(const void *)base; break;
        case RF_INT: snprintf(store[n + 1], RECORD_VALUE_MAX, "%lld", *(const long long *)(const void *)base); break;
        case RF_TIME: snprintf(store[n + 1], RECORD_VALUE_MAX, "%.3f", *(const double *)(const void *)base); break;
        case RF_NUM: {
            double d = *(const double *)(const void *)base;
            if (isfinite(d)) snprintf(store[n + 1], RECORD_VALUE_MAX, "%.9g", d);
            else store[n + 1][0] = 0;
            break;
        }
        case RF_PHASES: break;
        }
        n += put(argv, len, n, cap, row->name, value ? value : "");
    }
    return n;
}

void record_fields_strings(const char **out)
{
    int n = 0;
    for (int f = 0; f < RF_N; f++)
        if (RECORD_FIELDS[f].type == RF_STR) out[n++] = RECORD_FIELDS[f].name;
    out[n] = NULL;
}

const record_field_t *record_field_find(const char *name)
{
    for (int f = 0; f < RF_N; f++) {
        const record_field_t *row = &RECORD_FIELDS[f];
        if (row->type != RF_PHASES) {
            if (strcmp(row->name, name) == 0) return row;
            continue;
        }
        char field[RECORD_VALUE_MAX];
        for (int k = 0; k < PHASE_N; k++) {
            snprintf(field, sizeof field, row->name, PHASE_NAMES[k]);
            if (strcmp(field, name) == 0) return row;
        }
    }
    return NULL;
}

const staleness_field_t RECORD_STALENESS_FIELDS[RECORD_STALENESS_SCALARS] = {
    {"count", offsetof(staleness_t, count)},       {"sum", offsetof(staleness_t, sum)},
    {"sumsq", offsetof(staleness_t, sumsq)},       {"max", offsetof(staleness_t, max)},
    {"p50", offsetof(staleness_t, p50)},           {"p95", offsetof(staleness_t, p95)},
    {"overflow", offsetof(staleness_t, overflow)},
};

int record_staleness_hset(const staleness_t *st, const char **argv, size_t *len, char (*store)[RECORD_VALUE_MAX],
                          int cap)
{
    int n = 0;
    for (int f = 0; f < RECORD_STALENESS_SCALARS + STALENESS_BUCKETS && n + 2 <= cap; f++) {
        long long v;
        if (f < RECORD_STALENESS_SCALARS) {
            v = (long long)*(const int64_t *)(const void *)((const char *)st + RECORD_STALENESS_FIELDS[f].offset);
            snprintf(store[n], RECORD_VALUE_MAX, "%s", RECORD_STALENESS_FIELDS[f].name);
        } else {
            v = (long long)st->hist[f - RECORD_STALENESS_SCALARS];
            snprintf(store[n], RECORD_VALUE_MAX, RECORD_STALENESS_HIST, f - RECORD_STALENESS_SCALARS);
        }
        snprintf(store[n + 1], RECORD_VALUE_MAX, "%lld", v);
        n += put(argv, len, n, cap, store[n], store[n + 1]);
    }
    return n;
}

int record_staleness_set(staleness_t *st, const char *name, long long v)
{
    for (int f = 0; f < RECORD_STALENESS_SCALARS; f++)
        if (strcmp(name, RECORD_STALENESS_FIELDS[f].name) == 0) {
            *(int64_t *)(void *)((char *)st + RECORD_STALENESS_FIELDS[f].offset) = v;
            return 0;
        }
    char field[RECORD_VALUE_MAX];
    for (int b = 0; b < STALENESS_BUCKETS; b++) {
        snprintf(field, sizeof field, RECORD_STALENESS_HIST, b);
        if (strcmp(name, field) == 0) {
            st->hist[b] = v;
            return 0;
        }
    }
    return -1;
}
