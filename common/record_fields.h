/* common/record_fields.h - the per-rank record (the node hash KEY_JOB_NODE, docs/REDIS.md
 * "node:{rank}") as one table: each field's name, its type (which says how the value is
 * formatted), when it is present, where the writer takes its value from (a member of
 * rank_record_t) and, where GET /metrics exports it, the metric's name, type and help.
 *
 * Who reads the table: the worker's sink (worker/redis_report.c) fills a rank_record_t off
 * the step path, on its own thread, and writes it with record_fields_hset; the API
 * (coordinator/api.c, coord_nodes) takes the names of the string fields and of the fields
 * it reads and derives; http/prom.c exports the rows that name a metric. A field is added
 * here once and all three follow; tests/unit/test_record_fields.c checks that every row
 * is written and documented, and that Prometheus reads only names from here.
 */
#ifndef PACER_RECORD_FIELDS_H
#define PACER_RECORD_FIELDS_H

#include <stddef.h>

#include "phases.h"
#include "staleness.h"

/* How a value is stored: RF_STR as is; RF_INT "%lld"; RF_NUM "%.9g", or "" when not a
 * finite number (unmeasured is missing, not 0); RF_TIME a unix time, "%.3f" (more digits
 * than %.9g keeps); RF_PHASES one field per phase (common/phases.h), named by the row's
 * name as a format taking the phase's name, "%.9g" with 0 for a value that is not finite. */
typedef enum { RF_STR, RF_INT, RF_NUM, RF_TIME, RF_PHASES } record_type_t;

/* When a field is present: a bit of rank_record_t.present each. RFG_API marks a field the
 * API derives (no writer writes it). */
typedef enum {
    RFG_ALWAYS = 0,
    RFG_STEP,        /* once the rank has reported a step */
    RFG_COMM_BYTES,  /* a step measured the bytes it handed to MPI */
    RFG_COMPRESSION, /* the latest step measured them under algorithm.compression */
    RFG_BATCH,       /* the rank computes batches (the parameter server does not) */
    RFG_PLANNED,     /* algorithm.goodput: a plan is in force (worker/adaptive.h) */
    RFG_HEALTH,      /* rank 0's collapse detector has a verdict (worker/health.h) */
    RFG_WAITING,     /* a wait in a collective has passed its limit (worker/waitmark.h) */
    RFG_TOTAL_STEPS, /* redis_report_total_steps was told the run's length */
    RFG_EMULATION,   /* the rank checked its emulation (worker/emulate.h) */
    RFG_GPU,         /* a GPU rank with NVML has a sample (worker/nvml.h) */
    RFG_SHARD,       /* algorithm.shard: the rank's range and what it keeps (worker/shard.h) */
    RFG_API,         /* derived by the API from the stored fields */
    RFG_N
} record_group_t;

/* The field ids, in the order the writer writes them. */
typedef enum {
    RF_RANK = 0,
    RF_HOST,
    RF_PID,
    RF_HEARTBEAT,
    RF_DEVICE,
    RF_ROLE,
    RF_SAMPLES_PER_S,
    RF_COMPUTE_S,
    RF_COMM_S,
    RF_IDLE_S,
    RF_LAST_COMPUTE_S,
    RF_LAST_COMM_S,
    RF_LAST_IDLE_S,
    RF_STEP_S,
    RF_PHASE_S,
    RF_COMM_BYTES_PER_STEP,
    RF_COMPRESSION_RATIO,
    RF_BATCH,
    RF_LOSS,
    RF_STEP,
    RF_EPOCH,
    RF_SAMPLES,
    RF_SLOWDOWN,
    RF_PLAN_VERSION,
    RF_NOISE_SCALE,
    RF_GLOBAL_BATCH,
    RF_EFFICIENCY,
    RF_LR_SCALE,
    RF_GOODPUT,
    RF_LEFT_OUT,
    RF_TEST_ACCURACY,
    RF_TEST_LOSS,
    RF_UPDATED,
    RF_HEALTH,
    RF_WAITING,
    RF_WAITING_PEER,
    RF_WAITING_SINCE,
    RF_WAITING_LIMIT_S,
    RF_TOTAL_STEPS,
    RF_EMULATION_DEMAND_CORES,
    RF_EMULATION_CORES,
    RF_GPU_UTIL_PCT,
    RF_GPU_MEM_USED,
    RF_GPU_MEM_TOTAL,
    RF_SHARD_PARAMS,
    RF_SHARD_STATE_BYTES,
    RF_SHARD_GRADIENT_BYTES,
    RF_HEARTBEAT_AGE_S,
    RF_N
} record_field_id_t;

/* The values of one record, as the writer has them: strings borrowed (they must outlive
 * record_fields_hset's use of its output), numbers NAN where not measured. present: a bit
 * (1u << group) for each record_group_t whose fields are there. */
typedef struct {
    unsigned present;
    const char *host, *device, *role, *health, *waiting;
    long long rank, pid, batch, step, epoch, samples, plan_version, left_out, total_steps, gpu_mem_used, gpu_mem_total;
    double heartbeat, samples_per_s, compute_s, comm_s, idle_s, last_compute_s, last_comm_s, last_idle_s, step_s;
    double phase_s[PHASE_N];
    double comm_bytes_per_step, compression_ratio, loss, slowdown, noise_scale, global_batch, efficiency, lr_scale,
        goodput, test_accuracy, test_loss, updated;
    /* waiting_peer: NAN for every rank of the collective (stored as "") */
    double waiting_peer, waiting_since, waiting_limit_s;
    double emulation_demand_cores, emulation_cores, gpu_util_pct;
    long long shard_params, shard_state_bytes, shard_gradient_bytes;
} rank_record_t;

typedef struct {
    const char *name; /* the hash field (RF_PHASES: a format taking the phase's name) */
    record_type_t type;
    record_group_t group;
    size_t offset; /* of the value in rank_record_t (not for RFG_API) */
    /* GET /metrics: the family's name, type and help, with labels job and rank; NULL: not
     * exported this way (the phases have their own family with a phase label) */
    const char *prom, *prom_type, *prom_help;
} record_field_t;

extern const record_field_t RECORD_FIELDS[RF_N];

/* The longest formatted value (a unix time, a %.9g number, a 64-bit integer). */
#define RECORD_VALUE_MAX 32
/* Arguments record_fields_hset may append: a name and a value per field. */
#define RECORD_ARGS_MAX (2 * (RF_N - 1 + PHASE_N))

/* Appends the present fields of r as name, value pairs to argv/len (for
 * redisAppendCommandArgv), formatting numbers into store; strings are borrowed from r and
 * from the table. No allocation and no I/O. Returns the number of arguments appended (at
 * most cap; fields that do not fit are left out, and cap >= RECORD_ARGS_MAX fits all). */
int record_fields_hset(const rank_record_t *r, const char **argv, size_t *len, char (*store)[RECORD_VALUE_MAX], int cap);

/* Fills out with the names of the fields of type RF_STR (a reader keeps them strings
 * whatever they hold), NULL-terminated; out has room for RF_N + 1. */
void record_fields_strings(const char **out);

/* The field called name, or NULL (a phase's field matches its RF_PHASES row). */
const record_field_t *record_field_find(const char *name);

/* The rank's staleness hash (KEY_JOB_STALENESS): the scalar fields of a staleness_t, each
 * an integer, then its histogram as h0 .. h<STALENESS_BUCKETS - 1>. The worker's sink
 * writes it with record_staleness_hset; the API reads it back with record_staleness_set. */
typedef struct {
    const char *name;
    size_t offset; /* of the int64_t in staleness_t */
} staleness_field_t;

#define RECORD_STALENESS_SCALARS 7
extern const staleness_field_t RECORD_STALENESS_FIELDS[RECORD_STALENESS_SCALARS];
#define RECORD_STALENESS_HIST "h%d" /* a histogram bucket's field: its index */
#define RECORD_STALENESS_ARGS_MAX (2 * (RECORD_STALENESS_SCALARS + STALENESS_BUCKETS))

/* As record_fields_hset, for the staleness hash: every field of st. */
int record_staleness_hset(const staleness_t *st, const char **argv, size_t *len, char (*store)[RECORD_VALUE_MAX],
                          int cap);

/* Sets the field called name of st to v: 0, or -1 when no field is called that. */
int record_staleness_set(staleness_t *st, const char *name, long long v);

#endif
