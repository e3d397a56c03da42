/* worker/health.c - see health.h. */
#include "health.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void health_init(health_t *h, int classes)
{
    memset(h, 0, sizeof *h);
    h->classes = classes >= 2 ? classes : 2;
    h->level = log((double)h->classes);
    h->state = HEALTH_OK;
    h->band_since = h->grown_since = -1;
}

static int collapse(health_t *h, health_cause_t cause, long step, double value, double ref)
{
    h->state = HEALTH_COLLAPSED;
    h->cause = cause;
    h->at_step = step;
    h->since_step = h->best_step;
    h->value = value;
    h->ref = ref;
    return 1;
}

/* The first step of a stretch in which cond holds (-1 when it does not), and whether the
 * stretch has lasted HEALTH_STRETCH steps. */
static int stretch(long *since, int cond, long step)
{
    if (!cond) {
        *since = -1;
        return 0;
    }
    if (*since < 0) *since = step;
    return step - *since + 1 >= HEALTH_STRETCH;
}

int health_step(health_t *h, long step, double loss)
{
    if (h->state != HEALTH_OK) return 0;
    if (!isfinite(loss)) return collapse(h, HEALTH_CAUSE_NOT_FINITE, step, loss, 0);
    h->ewma = h->steps++ ? (1 - HEALTH_ALPHA) * h->ewma + HEALTH_ALPHA * loss : loss;
    if (h->steps == 1 || h->ewma < h->best) {
        h->best = h->ewma;
        h->best_step = step;
    }
    if (h->steps < HEALTH_WARMUP) return 0;
    if (fabs(h->ewma - h->level) > HEALTH_LEFT * h->level) h->left = 1;
    int level = h->ewma >= (1 - HEALTH_BAND_BELOW) * h->level && h->ewma <= (1 + HEALTH_BAND_ABOVE) * h->level;
    if (stretch(&h->band_since, h->left && level, step))
        return collapse(h, HEALTH_CAUSE_UNIFORM, step, h->ewma, h->level);
    if (stretch(&h->grown_since, h->best > 0 && h->ewma >= HEALTH_GROWTH * h->best, step))
        return collapse(h, HEALTH_CAUSE_GROWN, step, h->ewma, h->best);
    return 0;
}

int health_eval(health_t *h, long step, double accuracy)
{
    if (h->state != HEALTH_OK) return 0;
    if (!isfinite(accuracy)) return collapse(h, HEALTH_CAUSE_NOT_FINITE, step, accuracy, 0);
    if (h->steps >= HEALTH_STRETCH && accuracy <= HEALTH_CHANCE / h->classes)
        return collapse(h, HEALTH_CAUSE_CHANCE, step, accuracy, 1.0 / h->classes);
    return 0;
}

long health_good_step(const health_t *h, long step)
{
    /* Before the first step every weight is good; after it, the run has not improved
     * since best_step, so anything later may already be on the way down. */
    if (h->state == HEALTH_UNKNOWN || h->steps == 0) return step;
    return h->best_step;
}

const char *health_state_name(health_state_t s)
{
    switch (s) {
    case HEALTH_OK: return "ok";
    case HEALTH_COLLAPSED: return "collapsed";
    case HEALTH_UNKNOWN: break;
    }
    return "unknown";
}

int health_reason(const health_t *h, char *buf, size_t len)
{
    if (h->state != HEALTH_COLLAPSED) return snprintf(buf, len, "%s", "");
    switch (h->cause) {
    case HEALTH_CAUSE_NOT_FINITE:
        return snprintf(buf, len, "the training loss or the test accuracy is not finite (NaN or infinite) at step %ld",
                        h->at_step);
    case HEALTH_CAUSE_UNIFORM:
        return snprintf(buf, len,
                        "the training loss has stayed at the level of a uniform guess (%.4f%s, ln %d = %.4f) for %d "
                        "steps; it has not improved since step %ld",
                        h->value, h->lm ? " nats per token" : "", h->classes, h->ref, HEALTH_STRETCH, h->since_step);
    case HEALTH_CAUSE_CHANCE:
        return snprintf(buf, len, "%s %.4f is at chance (1/%d = %.4f) after %ld steps",
                        h->lm ? "next-token accuracy" : "test accuracy", h->value, h->classes, h->ref, h->at_step);
    case HEALTH_CAUSE_GROWN:
        return snprintf(buf, len,
                        "the training loss (%.4f, smoothed) has stayed at %g times its best (%.4f at step %ld) or more "
                        "for %d steps",
                        h->value, HEALTH_GROWTH, h->ref, h->since_step, HEALTH_STRETCH);
    case HEALTH_CAUSE_NONE: break;
    }
    return snprintf(buf, len, "%s", "collapsed");
}

int health_to_json(const health_t *h, char *buf, size_t len)
{
    int n;
    if (h->state != HEALTH_COLLAPSED) {
        n = snprintf(buf, len, "{\"state\":\"%s\"}", health_state_name(h->state));
    } else {
        /* The reason is pacer's own text: no quotes, backslashes or control characters. */
        char why[320];
        health_reason(h, why, sizeof why);
        n = snprintf(buf, len, "{\"state\":\"collapsed\",\"since_step\":%ld,\"at_step\":%ld,\"reason\":\"%s\"}",
                     h->since_step, h->at_step, why);
    }
    return n >= 0 && (size_t)n < len ? n : -1;
}
