/* coordinator/textgen.h - POST /api/v1/jobs/{id}/generate's coordinator half: the request's
 * fields, bounded and refused by name, and the pacer-generate process (generate/main.c,
 * a room of its own above the worker) that answers it. The coordinator never loads a model: the process has
 * its own bounded memory and CPU time, and prints one JSON line per token and a summary,
 * which the HTTP layer relays (a JSON answer or server-sent events). */
#ifndef PACER_COORD_TEXTGEN_H
#define PACER_COORD_TEXTGEN_H

#include <stddef.h>
#include <sys/types.h>

#include "coordinator.h"

#define GENREQ_PROMPT_MAX 32768 /* bytes; pacer-generate's own bound */
#define GENREQ_MAX_TOKENS 1024  /* model/generate.h's GEN_MAX_TOKENS */
#define GENREQ_TEMPERATURE_MAX 100.0
#define GENREQ_TOP_K_MAX 1048576
#define GENREQ_CHECKPOINT_MAX 128 /* a linked checkpoint name (common/ckptdir.h) */
#define GENREQ_BODY_MAX 65536
#define GENERATE_MEMORY_MB 4096 /* the process's address space */
#define GENERATE_SECONDS 120    /* and CPU time */
/* pacer-generate's exit statuses: the request's fault, and nothing to generate from */
#define GENERATE_EXIT_BAD 2
#define GENERATE_EXIT_CONFLICT 3

typedef struct {
    char *prompt; /* malloc'd, NUL-terminated; genreq_free */
    size_t prompt_len;
    int max_tokens;                         /* default 64 */
    double temperature;                     /* default 1.0; 0 = greedy */
    int top_k;                              /* default 0 = every token */
    long long seed;                         /* default 0 */
    char checkpoint[GENREQ_CHECKPOINT_MAX]; /* "latest" (default), "best" or a linked name */
    char precision[8];                      /* "fp32" | "bf16"; "" for the job's own */
} genreq_t;

/* The body {"prompt", "max_tokens", "temperature", "top_k", "seed", "checkpoint",
 * "precision"}: 0, or -1
 * with err naming the field that is missing, of the wrong type, out of range, or unknown. */
int genreq_parse(const char *body, size_t len, genreq_t *out, char *err, size_t errlen);
void genreq_free(genreq_t *r);

typedef struct {
    pid_t pid;
    int fd; /* its stdout */
} genproc_t;

/* Starts pacer-generate on job id's spec and checkpoints with r, the prompt written to its
 * stdin. COORD_OK; COORD_ESTATE with err for a job that has not started (no spec yet:
 * nothing to generate from); COORD_GENERATE_IMPORTED with err, before any process starts,
 * for a job whose model is an uploaded ONNX file trained on images (no language model);
 * COORD_EINTERNAL with err. */
#define COORD_GENERATE_IMPORTED 1
int coord_generate_start(coordinator_t *c, const char *id, const genreq_t *r, genproc_t *p, char *err, size_t errlen);
/* Closes its stdout and returns its exit status (-1: killed or unknown): ended 1 when its
 * output was read to the end (it is exiting: waited for; its CPU time is bounded), 0 to kill
 * it if still running (the client went away). */
int coord_generate_end(genproc_t *p, int ended);

#endif
