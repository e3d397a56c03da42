/* worker/health.h - whether a run is still learning: the collapse detector.
 *
 * A run has collapsed when it stopped learning in one of these ways (the constants below
 * are the documented stretches and factors; docs/JOB_SPEC.md, "Collapse"):
 *   not finite  a step's training loss is NaN or infinite;
 *   uniform     the smoothed training loss left the level of a uniform guess (ln C for C
 *               classes) by more than HEALTH_LEFT once, then came back to it and stayed
 *               there for HEALTH_STRETCH steps: between HEALTH_BAND_BELOW under and
 *               HEALTH_BAND_ABOVE over ln C. A network whose outputs no longer depend on
 *               its input (dead ReLUs, the biases alone) has a loss of at least about ln C
 *               on balanced classes (exactly ln C for a uniform output, more for any other
 *               constant one); a run that still learns, however slowly, sits below it, so
 *               the band reaches only a little below (measured: an asgd run that hovered
 *               1% under ln C for 60 updates after a blow-up recovered to 0.63 accuracy).
 *               A run still on its first plateau near ln C has not left it and is not
 *               judged by this rule (the next one covers a run that never learns);
 *   chance      an evaluation after at least HEALTH_STRETCH steps finds test accuracy at
 *               most HEALTH_CHANCE / C;
 *   grown       the smoothed training loss stayed at HEALTH_GROWTH times its best or more
 *               for HEALTH_STRETCH steps.
 * "Steps" are the loop's training steps, or the parameter server's applied updates (the
 * loss it sees is the one each push reports). The smoothed loss is an EWMA of the step
 * losses the loop has anyway; nothing is evaluated for the detector. A collapse is
 * dated from since_step: the last step at which the smoothed loss was at its lowest
 * (the run has not improved since). A checkpoint written at or before that step is
 * "good": on_collapse "restart" resumes from the newest one (docs/ARCHITECTURE.md).
 *
 * Pure and allocation-free: the training loop calls health_step once per step (a few
 * comparisons), so it is unit-tested without a model (tests/unit/test_health.c). */
#ifndef PACER_HEALTH_H
#define PACER_HEALTH_H

#include <stddef.h>

#define HEALTH_ALPHA 0.05       /* weight of a step's loss in the smoothed loss (span ~20 steps) */
#define HEALTH_WARMUP 20        /* steps before the loss rules look at the smoothed loss */
#define HEALTH_STRETCH 100      /* steps a condition must hold; steps before "chance" counts */
#define HEALTH_BAND_BELOW 0.005 /* "at the level of a uniform guess": from 0.5% under ln C ... */
#define HEALTH_BAND_ABOVE 0.02  /* ... to 2% over it */
#define HEALTH_LEFT 0.05        /* "left that level": more than 5% away from it, once */
#define HEALTH_GROWTH 2.0       /* "grown": at least twice the best smoothed loss */
#define HEALTH_CHANCE 1.2       /* "at chance": test accuracy at most 1.2 / C */

typedef enum { HEALTH_UNKNOWN = 0, HEALTH_OK = 1, HEALTH_COLLAPSED = 2 } health_state_t;
typedef enum {
    HEALTH_CAUSE_NONE = 0,
    HEALTH_CAUSE_NOT_FINITE,
    HEALTH_CAUSE_UNIFORM,
    HEALTH_CAUSE_CHANCE,
    HEALTH_CAUSE_GROWN,
} health_cause_t;

typedef struct {
    int classes;  /* C */
    double level; /* ln C: the loss of a uniform guess */
    health_state_t state;
    health_cause_t cause;
    long since_step;   /* collapsed: the last step of the best smoothed loss */
    long at_step;      /* collapsed: the step that decided it */
    double value, ref; /* the figure that decided, and what it was held against */
    long steps;        /* steps observed */
    double ewma;       /* smoothed loss */
    double best;       /* lowest smoothed loss so far */
    long best_step;    /* its step (0 before any) */
    int left;          /* the smoothed loss has been away from ln C by more than HEALTH_LEFT */
    long band_since;   /* first step of the current stretch near ln C; -1: not in one */
    long grown_since;  /* first step of the current stretch at HEALTH_GROWTH x best; -1 */
    int lm;            /* a language model: C is its vocabulary, its accuracy the next token's
                        * and its loss nats per token (the reasons say so); set after init */
} health_t;

/* A detector for a model of C classes (C >= 2). The state is HEALTH_OK from here on. */
void health_init(health_t *h, int classes);
/* One step's training loss, the step count after it (1 for the first). Returns 1 when it
 * makes the run collapsed (once: the state then stays HEALTH_COLLAPSED), else 0. */
int health_step(health_t *h, long step, double loss);
/* An evaluation at step: its test accuracy. Returns 1 when it makes the run collapsed. */
int health_eval(health_t *h, long step, double accuracy);
/* The last step whose weights count as good: a checkpoint written at or before it was
 * written before any collapse that can be declared later began. */
long health_good_step(const health_t *h, long step);

const char *health_state_name(health_state_t s);
/* Why the run collapsed, one line ("the training loss has stayed at the level of a uniform
 * guess ..."); "" unless collapsed. Returns the length like snprintf. */
int health_reason(const health_t *h, char *buf, size_t len);
/* {"state":"ok"} or {"state":"collapsed","since_step":S,"at_step":A,"reason":"..."} as
 * one line of JSON into buf (the Redis node hash, the job's record); -1 when it does not fit. */
int health_to_json(const health_t *h, char *buf, size_t len);

#endif
