/* cli/progress.h - the live view of `pacer watch`: one line per rank, fed by the job's
 * event stream (state, metrics and plan events, docs/openapi.json) and seeded from the
 * job and its nodes, so a watch that starts late shows every rank at once.
 *
 * Two ways to show it: line by line (a log, for pipes: a header once, then a line per rank
 * per epoch, optionally its step records at most one per N seconds, and one per state or
 * plan change; never the same rank's line twice in a row), or as a frame redrawn in place
 * on a terminal (ANSI cursor-up and erase-line; lines cut to the terminal's width so none
 * wraps, ranks beyond its height summarised). Pure: it writes to the FILE it is given.
 */
#ifndef PACER_CLI_PROGRESS_H
#define PACER_CLI_PROGRESS_H

#include <stdio.h>

#include <jansson.h>

#define PROGRESS_RANKS_MAX 4096

typedef struct {
    int known; /* the rank has reported */
    char role[12], host[48];
    long long epoch, step, batch;
    double loss, samples_per_s, staleness, test_accuracy; /* NaN = not known */
    double time;                                          /* of the latest record (unix s); 0 = unknown */
    char kind[8]; /* of the latest record: "step", "epoch", "eval", "final"; "" = the node hash */
    /* line mode: the rank's last line and when it was printed (progress_print_due's clock) */
    char printed[160];
    double printed_at;
} progress_rank_t;

typedef struct {
    char job[32], name[64], state[16], reason[256];
    progress_rank_t *ranks;
    int nranks;
    long long plan_version;
    char plan[96]; /* the batches of the latest plan, "40,88" */
    int drawn;     /* lines of the previous frame (draw) */
    /* a language model's tokens per window (its speed shown in tokens/s, its accuracy as
     * the next token's); 0 = an image classifier, or a window not known (progress_job) */
    int block;
    int lm; /* the job trains a language model (its data set is text or token files) */
} progress_t;

enum { PROGRESS_NONE, PROGRESS_STATE, PROGRESS_RANK, PROGRESS_PLAN };

void progress_init(progress_t *p, const char *job);
void progress_free(progress_t *p);

/* A Job object (GET /api/v1/jobs/{id}): name, state, reason, the number of ranks, and
 * whether it is a language model (dataset.format text or tokens) and its window. */
void progress_job(progress_t *p, json_t *job);
/* A Nodes object (GET /api/v1/jobs/{id}/nodes): every rank that has reported. */
void progress_nodes(progress_t *p, json_t *nodes);
/* One event of the stream (its data, which carries "type"). Returns what it changed:
 * PROGRESS_STATE, PROGRESS_RANK (*rank = which), PROGRESS_PLAN or PROGRESS_NONE (an
 * event of another job, an unknown type, a rank out of range). */
int progress_event(progress_t *p, json_t *ev, int *rank);

/* Line mode. */
void progress_print_header(const progress_t *p, FILE *f);
void progress_print_rank(const progress_t *p, int rank, FILE *f);
/* Prints the rank's line when its latest record is due one, and says whether it did (1)
 * or not (0). Due: a record that ends an epoch, evaluates or ends the run ("epoch",
 * "eval", "final"), and the rank's node hash (what a watch starts from); a "step" record
 * only with every > 0, once every seconds of now (any clock, the same each call) have
 * passed since the rank's last line. A line equal to the rank's last one is never printed
 * again (the final record repeats the last epoch's; a step record's line is due only
 * after time has passed). So a pipe gets a line per rank per epoch, not one per step. */
int progress_print_due(progress_t *p, int rank, double now, double every, FILE *f);
void progress_print_state(const progress_t *p, FILE *f);
void progress_print_plan(const progress_t *p, FILE *f);

/* Terminal mode: replaces the previous frame (p->drawn lines above the cursor) with the
 * current one, cols x rows being the terminal's size (0 = unknown: 80 x 24). */
void progress_draw(progress_t *p, FILE *f, double now, int cols, int rows);

#endif
