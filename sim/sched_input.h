/* sim/sched_input.h - the scheduler simulator's inputs (docs/ARCHITECTURE.md "Scheduler
 * simulator"): the cluster file (host classes and each job type's speed per class) and the
 * job trace (JSON lines). Outside input: every size is bounded, and a refusal is one line
 * naming the file, the line (the trace's; the cluster file's for a text that does not
 * decode) and the field. Pure parsers of texts, so that fuzz/fuzz_sched.c drives them. */
#ifndef PACER_SCHED_INPUT_H
#define PACER_SCHED_INPUT_H

#include <stddef.h>

#include "policy.h"

#define SCHED_NAME_MAX 32    /* a class, type or user name: 1..31 bytes */
#define SCHED_ID_MAX 64      /* a job id: 1..63 bytes */
#define SCHED_TYPES_MAX 64   /* job types in a cluster file */
#define SCHED_HOSTS_MAX 4096 /* hosts per class */
#define SCHED_SLOTS_MAX 64   /* slots per host */
#define SCHED_JOBS_MAX 10000 /* jobs in a trace */
#define SCHED_LINE_MAX 4096  /* bytes of a trace line */
#define SCHED_FILE_MAX (64L << 20)

typedef struct {
    char name[SCHED_NAME_MAX];
    int hosts, slots;
} sched_class_t;

typedef struct {
    sched_class_t classes[POLICY_CLASSES_MAX];
    int nclasses;
    char types[SCHED_TYPES_MAX][SCHED_NAME_MAX];
    int ntypes;
    /* [type * POLICY_CLASSES_MAX + class]: samples/s per slot; 0 = not given (estimated,
       policy_speed) */
    double speed[SCHED_TYPES_MAX * POLICY_CLASSES_MAX];
} sched_cluster_t;

typedef struct {
    char id[SCHED_ID_MAX];
    char user[SCHED_NAME_MAX];
    double arrival_s, samples;
    int type, workers, priority, elastic;
    int max_workers; /* the most an elastic job may grow to (workers..slots); 0: not given */
    int line;        /* in the trace file */
} sched_job_t;

/* Parses the cluster file's text (file: its name, for messages). Returns 0, or -1 with err
 * "FILE: classes[1].hosts: ..." (or "FILE:LINE: ..." when the text is not JSON). */
int sched_cluster_parse(const char *text, size_t len, const char *file, sched_cluster_t *out, char *err, size_t errlen);

/* Parses a trace's text against a cluster (types must be the cluster's, workers fit its
 * slots): one JSON object a line, blank lines skipped. *jobs is malloc'ed (the caller
 * frees it), sorted by arrival (stable). Returns 0, or -1 with err "FILE:LINE: field: ...". */
int sched_trace_parse(const char *text, size_t len, const char *file, const sched_cluster_t *c, sched_job_t **jobs,
                      int *njobs, char *err, size_t errlen);

#endif
