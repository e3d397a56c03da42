/* coordinator/supervise.c - see supervise.h. */
#include "supervise.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "notice.h"

/* Exit 3: training collapsed and on_collapse said to stop (worker/health.h). */
static void collapsed(const sv_in_t *in, sv_out_t *out, const char *line)
{
    const char *why = in->collapse && *in->collapse ? in->collapse : line;
    int restart = in->on_collapse && strcmp(in->on_collapse, "restart") == 0;
    if (!restart) {
        out->state = JOB_FAILED;
        snprintf(out->reason, sizeof out->reason, "training collapsed (on_collapse fail): %s", why);
        return;
    }
    if (in->restarts >= in->max_restarts) {
        out->state = JOB_FAILED;
        snprintf(out->reason, sizeof out->reason, "training collapsed after %d restart%s: %s", in->restarts,
                 in->restarts == 1 ? "" : "s", why);
        return;
    }
    out->state = JOB_RESTARTING;
    out->restarts = in->restarts + 1;
    out->collapse_restart = 1;
    out->delay_s = in->backoff_base_s * ldexp(1.0, in->restarts);
    snprintf(out->reason, sizeof out->reason,
             "training collapsed: %s; restart %d of %d in %.3g s from the last checkpoint before the collapse, with "
             "the learning rate halved",
             why, out->restarts, in->max_restarts, out->delay_s);
}

void supervise_decide(const sv_in_t *in, sv_out_t *out)
{
    const char *line = in->last_line && *in->last_line ? in->last_line : "(no output)";
    char what[256];
    memset(out, 0, sizeof *out);
    out->restarts = in->restarts;
    switch (in->outcome) {
    case SV_CANCELLED:
        out->state = JOB_CANCELLED;
        snprintf(out->reason, sizeof out->reason, "cancelled by request");
        return;
    case SV_EXITED:
        if (in->code == 0) {
            out->state = JOB_SUCCEEDED;
            return;
        }
        if (in->code == 2) {
            out->state = JOB_FAILED;
            snprintf(out->reason, sizeof out->reason, "bad input (exit 2, not retried): %s", line);
            return;
        }
        if (in->code == 3) {
            collapsed(in, out, line);
            return;
        }
        if (in->code == NOTICE_EXIT_STATUS) {
            /* Not a failure: the work is in the checkpoint, and a spot host's or a
             * drain's notices must not use up the restarts meant for crashes. */
            out->state = JOB_RESTARTING;
            out->notice = 1;
            snprintf(out->reason, sizeof out->reason,
                     "interrupted with notice (exit %d): resuming from the checkpoint it wrote (no restart used): %s",
                     NOTICE_EXIT_STATUS, line);
            return;
        }
        snprintf(what, sizeof what, "mpirun exited %d", in->code);
        break;
    case SV_SIGNALLED: snprintf(what, sizeof what, "mpirun killed by signal %d", in->code); break;
    case SV_LOST: snprintf(what, sizeof what, "job process lost (no exit status)"); break;
    case SV_UNFINISHED:
        snprintf(what, sizeof what, "mpirun exited 0 but rank 0 wrote no summary (the run did not finish)");
        break;
    case SV_STALE:
        if (in->host && in->host[0])
            snprintf(what, sizeof what, "no heartbeat from rank %d (%.64s) for %.0f s", in->code, in->host, in->stale_s);
        else snprintf(what, sizeof what, "no heartbeat from rank %d for %.0f s", in->code, in->stale_s);
        break;
    case SV_STALLED: snprintf(what, sizeof what, "stalled: %.200s", in->stall ? in->stall : "(no report)"); break;
    }
    if (in->restarts >= in->max_restarts) {
        out->state = JOB_FAILED;
        snprintf(out->reason, sizeof out->reason, "%s after %d restart%s: %s", what, in->restarts,
                 in->restarts == 1 ? "" : "s", line);
        return;
    }
    out->state = JOB_RESTARTING;
    out->restarts = in->restarts + 1;
    out->delay_s = in->backoff_base_s * ldexp(1.0, in->restarts);
    snprintf(out->reason, sizeof out->reason, "%s; restart %d of %d in %.3g s: %s", what, out->restarts,
             in->max_restarts, out->delay_s, line);
}

int supervise_note_silent(sv_silent_t *s, const char *host)
{
    if (!host || !host[0]) {
        s->host[0] = 0;
        s->times = 0;
        return 0;
    }
    if (strcmp(s->host, host) == 0) s->times++;
    else {
        snprintf(s->host, sizeof s->host, "%s", host);
        s->times = 1;
    }
    return s->times >= SV_SILENT_LIMIT;
}
