/* coordinator/drain.c - see drain.h. */
#include "drain.h"

#include "coord_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clog.h"
#include "notice.h"
#include "tickconn.h"

#define JPATH_DRAIN (PATH_MAX + 160)

/* The worker's note of r's latest stop on notice, removed once read: 1 with n, else 0. */
static int drain_take_note(coordinator_t *c, const coord_run_t *r, notice_t *n)
{
    char dir[JPATH_DRAIN], path[JPATH_DRAIN + SPEC_NAME_MAX + 16], err[600];
    if (coord_job_path(c, r->id, "checkpoints", dir, sizeof dir) != 0 ||
        notice_path(path, sizeof path, dir, r->spec->name) != 0)
        return 0;
    int k = notice_read(path, n, err, sizeof err);
    if (k < 0) clog_printf("job %s: the worker's notice note is not usable: %s", r->id, err);
    else if (k == 0) clog_printf("job %s: stopped on notice, but the worker left no note at %s", r->id, path);
    unlink(path);
    return k == 1;
}

void drain_interruption(coordinator_t *c, coord_run_t *r, const char *why, double now)
{
    notice_t n;
    int have = drain_take_note(c, r, &n);
    long long lost = have && n.checkpoint_step >= 0 && n.at_step > n.checkpoint_step ? n.at_step - n.checkpoint_step : 0;
    json_t *e = json_pack("{s:s, s:o, s:o, s:o, s:o, s:f}", "reason", why, "host",
                          have && n.host[0] ? json_string(n.host) : json_null(), "at_step",
                          have ? json_integer(n.at_step) : json_null(), "checkpoint_step",
                          have && n.checkpoint_step >= 0 ? json_integer(n.checkpoint_step) : json_null(), "lost_steps",
                          have ? json_integer(lost) : json_null(), "at", now);
    if (!e) return;
    if (have) json_object_set_new(e, "rank", json_integer(n.rank));
    r->interruptions_total++;
    if (r->interruptions) {
        json_array_append(r->interruptions, e);
        while (json_array_size(r->interruptions) > RUN_INTERRUPTIONS_KEPT) json_array_remove(r->interruptions, 0);
    }
    if (have)
        clog_printf("job %s: interrupted (%s) on rank %d (%s) after step %lld; checkpoint of step %lld, %lld step%s lost",
                    r->id, why, n.rank, n.host[0] ? n.host : "host unknown", n.at_step, n.checkpoint_step, lost,
                    lost == 1 ? "" : "s");
    else clog_printf("job %s: interrupted (%s)", r->id, why);
    if (c->rc) {
        json_t *ev = json_deep_copy(e);
        json_object_set_new(ev, "type", json_string("interruption"));
        json_object_set_new(ev, "job", json_string(r->id));
        if (r->owner[0]) json_object_set_new(ev, "owner", json_string(r->owner));
        tickconn_check(c, jobstore_event(c->rc, ev), "interruption event");
        json_decref(ev);
    }
    json_decref(e);
    r->dirty = 1;
}

/* Whether r's ended attempt left a note (its ranks stopped on notice), and the note's path. */
static int drain_note_path(coordinator_t *c, const coord_run_t *r, char *path, size_t len)
{
    char dir[JPATH_DRAIN];
    return coord_job_path(c, r->id, "checkpoints", dir, sizeof dir) == 0 &&
           notice_path(path, len, dir, r->spec->name) == 0;
}

int drain_noticed(coordinator_t *c, coord_run_t *r, sv_outcome_t oc, int code)
{
    char path[JPATH_DRAIN + SPEC_NAME_MAX + 16];
    if (oc == SV_EXITED && code == NOTICE_EXIT_STATUS) return 1;
    if (oc == SV_EXITED && code == 0) return 0;
    return drain_note_path(c, r, path, sizeof path) && access(path, F_OK) == 0;
}

void drain_forget_note(coordinator_t *c, const coord_run_t *r)
{
    char path[JPATH_DRAIN + SPEC_NAME_MAX + 16];
    if (drain_note_path(c, r, path, sizeof path)) unlink(path);
}

void drain_adopt_interruptions(coord_run_t *r, const char *text, const char *total)
{
    json_t *l = text && *text ? json_loads(text, 0, NULL) : NULL;
    if (json_is_array(l) && json_array_size(l) <= RUN_INTERRUPTIONS_KEPT) {
        json_decref(r->interruptions);
        r->interruptions = l;
    } else {
        json_decref(l);
    }
    long t = total && *total ? strtol(total, NULL, 10) : 0;
    r->interruptions_total = t > 0 && t < 1000000000L ? (int)t : (int)json_array_size(r->interruptions);
}
