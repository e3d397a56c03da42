/* coordinator/run_elastic.c - see run_elastic.h. */
#include "run_elastic.h"

#include "coord_internal.h"
#include "jobstore.h"
#include "netprobe.h"
#include "run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clog.h"
#include "ckptdir.h"
#include "hosts.h"
#include "launcher.h"
#include "modelstore.h"
#include "notice.h"
#include "policy.h"
#include "record_fields.h"
#include "stall.h"
#include "supervise.h"
#include "tickconn.h"

/* Names of the cluster's hosts that are not usable, with their state ("pw3 down"). */
void unusable_hosts(const hosts_state_t *hs, char *out, size_t len)
{
    size_t used = 0;
    out[0] = 0;
    for (int i = 0; i < hs->n && used < len; i++) {
        const host_t *h = &hs->list[i];
        if (h->state != HOST_DOWN && h->state != HOST_FAILING) continue;
        int k = snprintf(out + used, len - used, "%s%s %s", used ? ", " : "", h->name, host_state_name(h->state));
        if (k < 0) break;
        used += (size_t)k;
    }
}

/* A change of r's world, from -> to (r->hosts are the new attempt's): the job's record,
 * an event, the log. */
void record_resize(coordinator_t *c, coord_run_t *r, int from, int to, const char *reason, double now)
{
    json_t *e = json_pack("{s:i, s:i, s:s, s:o, s:f}", "from", from, "to", to, "reason", reason, "hosts",
                          run_hosts_json(r), "time", now);
    if (!e) return;
    /* a shrink for a preemption names the job it made room for (shrink_for) */
    if (r->shrinking) json_object_set_new(e, "preempted_by", json_string(r->preempted_by));
    r->resizes++;
    if (r->resize_log) {
        json_array_append(r->resize_log, e);
        while (json_array_size(r->resize_log) > RUN_RESIZES_KEPT) json_array_remove(r->resize_log, 0);
    }
    clog_printf("job %s: resize %d -> %d rank%s: %s", r->id, from, to, to == 1 ? "" : "s", reason);
    if (c->conn->rc) {
        json_t *ev = json_deep_copy(e);
        json_object_set_new(ev, "type", json_string("resize"));
        json_object_set_new(ev, "job", json_string(r->id));
        tickconn_check(c, jobstore_event(c->conn->rc, ev), "resize event");
        json_decref(ev);
    }
    json_decref(e);
    r->dirty = 1;
}

/* Node and staleness hashes of ranks [to, from) belong to no rank any more. */
void drop_rank_keys(coordinator_t *c, coord_run_t *r, int from, int to)
{
    for (int k = to; c->conn->rc && k < from; k++) {
        char a[160], b[160];
        snprintf(a, sizeof a, KEY_JOB_NODE, r->id, k);
        snprintf(b, sizeof b, KEY_JOB_STALENESS, r->id, k);
        redisReply *x = redisCommand(c->conn->rc, "DEL %s %s", a, b);
        if (!x) tickconn_broken(c, "resize");
        else freeReplyObject(x);
    }
}

/* Whether an attempt that ended so may have lost a host: only failures, and only where
 * hosts other than this machine run ranks (not a simulation: its hosts are simulated). */
int should_probe(const coordinator_t *c, const coord_run_t *r, sv_outcome_t oc, int code)
{
    if (r->simulated || launcher_kind(c->launcher) == LAUNCHER_LOCAL) return 0;
    switch (oc) {
    case SV_EXITED: return code != 0 && code != 2;
    case SV_SIGNALLED:
    case SV_LOST:
    case SV_UNFINISHED:
    case SV_STALE:
    case SV_STALLED: return 1;
    case SV_CANCELLED: return 0;
    }
    return 0;
}

/* Whether the network probe can run here: a launcher that reaches other hosts through
 * mpirun's own channels (hostfile), a worker that has --netprobe. Slurm's nodes keep
 * their slurmd probes: a probe there is a batch job that may wait in the queue. */
static int netprobe_applies(const coordinator_t *c)
{
    return c->worker_caps.netprobe && launcher_kind(c->launcher) == LAUNCHER_HOSTFILE;
}

static int benched(const coord_run_t *r, const char *host)
{
    for (int i = 0; i < r->nbenched; i++)
        if (strcmp(r->benched[i], host) == 0) return 1;
    return 0;
}

/* The hosts r may use now (names: room for c->hosts->n): the usable ones less those it
 * leaves out for going silent, unless that leaves none (then every usable one: its own
 * rule never keeps a job from running; *kept_all says so). Returns the count, their
 * slots in *slots. */
int run_usable(const hosts_state_t *hs, const coord_run_t *r, const char **names, int *slots, int *kept_all)
{
    int n = hosts_usable(hs, names, hs->n, slots), k = 0, s = 0;
    for (int i = 0; i < n; i++) {
        if (benched(r, names[i])) continue;
        const host_t *h = hosts_find(hs, names[i]);
        s += h ? h->slots : 0;
        names[k++] = names[i];
    }
    if (kept_all) *kept_all = k == 0 && n > 0;
    if (k == 0) return hosts_usable(hs, names, hs->n, slots);
    *slots = s;
    return k;
}

/* How an attempt ended, for the silent-host rule (supervise_note_silent): host went
 * silent in it ("" or NULL: none did). A host silent twice in a row joins r->benched. */
void note_silent(coord_run_t *r, const char *host)
{
    if (!supervise_note_silent(&r->silent, host) || benched(r, host)) return;
    char **b = realloc(r->benched, sizeof *b * (size_t)(r->nbenched + 1));
    char *h = strdup(host);
    if (!b || !h) {
        free(h);
        if (b) r->benched = b;
        return;
    }
    r->benched = b;
    r->benched[r->nbenched++] = h;
    clog_printf("job %s: %s went silent in %d attempts in a row: its later attempts leave it out", r->id, host,
                r->silent.times);
}

/* The attempt failed: its processes are reaped and its hosts probed before the restart
 * policy decides (run_step's PH_PROBING). lost: hosts the launcher already knows are gone
 * (Slurm's NODE_FAIL), blank-separated. */
void begin_probing(coordinator_t *c, coord_run_t *r, sv_outcome_t oc, int code, const char *lost, double now)
{
    launcher_reap(r->launcher, &r->h);
    char buf[512];
    snprintf(buf, sizeof buf, "%s", lost ? lost : "");
    for (char *save = NULL, *t = strtok_r(buf, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
        host_t *h = hosts_find(c->hosts, t);
        if (h) hosts_set_state(c, h, HOST_DOWN, "Slurm: the node failed under a job (NODE_FAIL)", now);
    }
    for (int i = 0; i < r->nhosts; i++) hosts_probe(c, r->hosts[i], now);
    r->probe_oc = oc;
    r->probe_code = code;
    r->probe_deadline = now + LAUNCH_PROBE_TIMEOUT_S + 2;
    r->phase = PH_PROBING;
    r->kill_reason = KILL_NONE;
    run_stop_probes(c, r);
    clear_stall(r);
    char what[48];
    if (oc == SV_STALLED) snprintf(what, sizeof what, "stalled");
    else
        snprintf(what, sizeof what, "%s %d",
                 oc == SV_EXITED       ? "exit"
                 : oc == SV_SIGNALLED  ? "signal"
                 : oc == SV_STALE      ? "stale rank"
                 : oc == SV_UNFINISHED ? "no summary, exit"
                                       : "lost",
                 code);
    clog_printf("job %s: attempt %d ended (%s); probing its host%s", r->id, r->attempts, what,
                r->nhosts == 1 ? "" : "s");
}

/* Relaunch at once on the hosts usable now, without using a restart. */
void relaunch_soon(coordinator_t *c, coord_run_t *r, sv_outcome_t oc, int code, const char *reason, double now)
{
    launcher_reap(r->launcher, &r->h);
    run_stop_probes(c, r);
    clear_stall(r);
    r->exit_code = oc == SV_EXITED ? code : -1;
    r->kill_reason = KILL_NONE;
    r->phase = PH_BACKOFF;
    r->next_launch = now;
    if (reason != r->resize_reason) snprintf(r->resize_reason, sizeof r->resize_reason, "%s", reason);
    char why[sizeof r->reason];
    snprintf(why, sizeof why, "%s: relaunching on the hosts there are", reason);
    clog_printf("job %s: RESTARTING: %s", r->id, why);
    run_set_state(c, r, JOB_RESTARTING, why);
}

/* PH_PROBING: once the probes of the attempt's hosts answered, a lost host means an
 * elastic relaunch; none means the attempt failed on its own (the restart policy). */
/* The network probe of the attempt's hosts, once the remote-shell probes found none
 * down: 1 while it runs, 0 when it is over (its failing hosts marked) or not wanted. */
static int probe_network(coordinator_t *c, coord_run_t *r, double now)
{
    if (r->np_state == 2) return 0;
    if (r->np_state == 0) {
        r->np_state = 2;
        if (!netprobe_applies(c) || r->nhosts < 1) return 0;
        for (int i = 0; i < r->nhosts; i++) {
            host_t *h = hosts_find(c->hosts, r->hosts[i]);
            if (!h || h->state == HOST_DOWN || h->state == HOST_FAILING) return 0; /* explained */
        }
        char err[256];
        if (netprobe_start(c, &r->np, &c->hosts->netprobe_seq, (const char *const *)r->hosts, r->nhosts, now, err,
                           sizeof err) != 0) {
            clog_printf("job %s: no network probe: %s", r->id, err);
            return 0;
        }
        r->np_state = 1;
        clog_printf("job %s: probing the job's network between its host%s", r->id, r->nhosts == 1 ? "" : "s");
        return 1;
    }
    if (!netprobe_poll(c, &r->np, now)) return 1;
    int bad = 0;
    for (int i = 0; i < r->np.n; i++) {
        const netprobe_host_t *p = &r->np.hosts[i];
        host_t *h = hosts_find(c->hosts, p->host);
        if (!h || !p->failing) continue;
        bad++;
        if (h->state != HOST_DOWN) {
            hosts_set_state(c, h, HOST_FAILING, p->why, now);
            h->net_failing = 1;
            h->next_probe = now + c->cfg.host_probe_s;
        }
    }
    if (!bad) clog_printf("job %s: the job's network carries messages between its hosts", r->id);
    netprobe_stop(c, &r->np);
    r->np_state = 2;
    return 0;
}

void after_probing(coordinator_t *c, coord_run_t *r, double now)
{
    int waiting = 0;
    for (int i = 0; i < r->nhosts; i++) waiting |= hosts_probing(c->hosts, r->hosts[i]);
    if (waiting && now < r->probe_deadline) return;
    if (probe_network(c, r, now)) return;
    char lost[1024] = "", why[256] = "";
    size_t used = 0;
    int n = 0;
    for (int i = 0; i < r->nhosts; i++) {
        host_t *h = hosts_find(c->hosts, r->hosts[i]);
        if (h && h->state != HOST_DOWN && h->state != HOST_FAILING) continue;
        int k = snprintf(lost + used, sizeof lost - used, "%s%s", used ? ", " : "", r->hosts[i]);
        if (k > 0 && (size_t)k < sizeof lost - used) used += (size_t)k;
        if (!n++) snprintf(why, sizeof why, "%s", h ? h->reason : "no longer in the host list");
    }
    if (!n) {
        /* Every host passed, but one keeps going silent: it is left out all the same,
         * without spending a restart on another attempt there. */
        const char **names = calloc((size_t)c->hosts->n + 1, sizeof *names);
        int slots = 0, kept_all = 1;
        if (names) run_usable(c->hosts, r, names, &slots, &kept_all);
        free(names);
        for (int i = 0; !kept_all && i < r->nhosts; i++) {
            if (!benched(r, r->hosts[i])) continue;
            char reason[sizeof r->resize_reason];
            snprintf(reason, sizeof reason, "left out %.100s: it went silent in %d attempts in a row", r->hosts[i],
                     r->silent.times);
            relaunch_soon(c, r, r->probe_oc, r->probe_code, reason, now);
            return;
        }
        finish_attempt(c, r, r->probe_oc, r->probe_code, now);
        return;
    }
    char reason[sizeof r->resize_reason];
    /* bounded parts: the reason is one line of a few hundred bytes; a long list is cut */
    snprintf(reason, sizeof reason, "lost host%s %.90s (%.200s)", n == 1 ? "" : "s", lost, why);
    relaunch_soon(c, r, r->probe_oc, r->probe_code, reason, now);
}

/* A placed job (--policy hetero|agnostic, set_place): the usable hosts in names[0..n)
 * narrowed to those of its placement, with their slots into *usable_slots and all its
 * placed hosts' slots into *all_slots (the cluster its world is fitted to). Returns the
 * new count; 0 when none of them is usable (then nothing is changed). */
int placed_only(const hosts_state_t *hs, const coord_run_t *r, const char **names, int n, int *usable_slots,
                int *all_slots)
{
    int k = 0, slots = 0, all = 0;
    for (int i = 0; i < r->nplace; i++) {
        const host_t *h = hosts_find(hs, r->place[i]);
        all += h ? h->slots : 1;
    }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < r->nplace; j++)
            if (strcmp(names[i], r->place[j]) == 0) {
                const host_t *h = hosts_find(hs, names[i]);
                slots += h ? h->slots : 1;
                names[k++] = names[i];
                break;
            }
    if (k == 0) return 0;
    *usable_slots = slots;
    *all_slots = all;
    return k;
}

/* PH_ACTIVE, once a second: a job on fewer ranks than its spec asks grows when more
 * slots are usable again. Where the launcher has a notice (launcher_has_notice), with one,
 * once the slots are still usable a check later: its ranks checkpoint at their next step
 * and nothing is lost, however far off its next periodic checkpoint is (a job whose
 * period outlasts its run would otherwise never grow back). Elsewhere (the simulator),
 * right after its next checkpoint: a plain stop loses the work since. */
void grow_check(coordinator_t *c, coord_run_t *r, double now)
{
    if (now - r->last_grow_check < 1.0) return;
    r->last_grow_check = now;
    int slots = c->hosts->slots_usable, total = c->hosts->slots_total, placed = 0;
    if (r->nbenched || r->nplace > 0) {
        const char **names = calloc((size_t)c->hosts->n + 1, sizeof *names);
        if (!names) return;
        int n = run_usable(c->hosts, r, names, &slots, NULL);
        /* a placed job grows back only onto its own hosts (launch uses no other) */
        if (r->nplace > 0 && !(placed = placed_only(c->hosts, r, names, n, &slots, &total))) slots = 0;
        free(names);
    }
    /* Over the slots other jobs leave it (a job shrunk for another grows back once that
     * one has ended); alone, over all of them, as oversubscribed as it was. */
    int others = r->simulated || placed ? 0 : run_slots_used(c) - r->world;
    if (others > 0) slots -= others;
    int w = r->world < r->full_world && slots > 0 ? hosts_elastic_world(r->full_world, r->min_world, total, slots) : 0;
    /* a placed job's cap is the class-aware policy's (hplan_apply): it lifts it, not this */
    if (placed && r->world_cap > 0 && w > r->world_cap) w = r->world_cap;
    if (w <= r->world) {
        if (r->grow_armed)
            clog_printf("job %s: no longer grows (the slots are gone again, or other jobs hold them)", r->id);
        r->grow_armed = 0;
        return;
    }
    long long id[3];
    ckpt_ident(c, r, id);
    /* The notice only once this attempt has trained past where the last one was seen
     * (a training rank's reported step): a rank acts on a notice during its start-up
     * only at its first step anyway, and a relaunch stopped before it has done anything
     * pays its start-up again. Without the ranks' reports, the checkpoint decides. */
    int notice = launcher_has_notice(r->launcher) && c->worker_caps.redis;
    if (notice && r->progress_step <= r->launch_progress) {
        if (!r->grow_armed)
            clog_printf("job %s: %d usable slot%s now: grows from %d to %d ranks once this attempt has trained", r->id,
                        slots, slots == 1 ? "" : "s", r->world, w);
        r->grow_armed = 1;
        memcpy(r->grow_ckpt, id, sizeof r->grow_ckpt);
        return;
    }
    if (!r->grow_armed) {
        r->grow_armed = 1;
        memcpy(r->grow_ckpt, id, sizeof r->grow_ckpt);
        clog_printf("job %s: %d usable slot%s now: grows from %d to %d ranks at its next %s", r->id, slots,
                    slots == 1 ? "" : "s", r->world, w,
                    notice ? "step (a notice: its ranks checkpoint there)" : "checkpoint");
        return;
    }
    if (!notice && memcmp(id, r->grow_ckpt, sizeof id) == 0) return;
    /* Which hosts it gains, for the reason. */
    char back[512] = "";
    size_t used = 0;
    for (int i = 0; i < c->hosts->n; i++) {
        const host_t *h = &c->hosts->list[i];
        if ((h->state != HOST_UP && h->state != HOST_SLOW) || benched(r, h->name)) continue;
        int had = 0;
        for (int k = 0; k < r->nhosts; k++) had |= strcmp(r->hosts[k], h->name) == 0;
        if (had) continue;
        int k = snprintf(back + used, sizeof back - used, "%s%s", used ? ", " : "", h->name);
        if (k > 0 && (size_t)k < sizeof back - used) used += (size_t)k;
    }
    snprintf(r->resize_reason, sizeof r->resize_reason, "grow at the checkpoint: %.250s%s",
             back[0]        ? back
             : r->world_cap ? "the slots it gave up are free again"
                            : "more slots",
             back[0]        ? (strchr(back, ',') ? " are usable again" : " is usable again")
             : r->world_cap ? ""
                            : " are usable");
    r->grow_armed = 0;
    r->world_cap = w < r->full_world ? w : 0;
    r->stop_notice = notice;
    run_kill(c, r, KILL_RESIZE, now);
}
