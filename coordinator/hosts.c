/* coordinator/hosts.c - see hosts.h. */
#include "hosts.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "clog.h"
#include "coord_internal.h"
#include "jobstore.h"
#include "launcher.h"
#include "netprobe.h"
#include "tickconn.h"

const char *host_state_name(host_state_t s)
{
    switch (s) {
    case HOST_UP: return "up";
    case HOST_SLOW: return "slow";
    case HOST_FAILING: return "failing";
    case HOST_DOWN: return "down";
    }
    return "?";
}

/* A drained host (drain.h) takes no new ranks, whatever its state. */
static int usable(const host_t *h) { return (h->state == HOST_UP || h->state == HOST_SLOW) && !h->drained; }

void hosts_recount(hosts_state_t *hs)
{
    hs->slots_total = hs->slots_usable = hs->slots_max = 0;
    for (int i = 0; i < hs->n; i++) {
        hs->slots_total += hs->list[i].slots;
        if (hs->list[i].slots > hs->slots_max) hs->slots_max = hs->list[i].slots;
        if (usable(&hs->list[i])) hs->slots_usable += hs->list[i].slots;
    }
}

host_t *hosts_find(const hosts_state_t *hs, const char *name)
{
    for (int i = 0; i < hs->n; i++)
        if (strcmp(hs->list[i].name, name) == 0) return &hs->list[i];
    return NULL;
}

static void append_name(char *buf, size_t len, const char *name)
{
    if (!buf || !len) return;
    size_t used = strlen(buf);
    snprintf(buf + used, len - used, "%s%s", used ? " " : "", name);
}

int hosts_sync(coordinator_t *c, double now, char *added, size_t addlen, char *removed, size_t remlen)
{
    const launch_host_t *lh;
    int n = launcher_hosts(c->launcher, &lh);
    host_t *next = calloc((size_t)(n > 0 ? n : 1), sizeof *next);
    int *fresh = calloc((size_t)(n > 0 ? n : 1), sizeof *fresh);
    if (!next || !fresh) {
        free(next);
        free(fresh);
        return -1;
    }
    if (added && addlen) added[0] = 0;
    if (removed && remlen) removed[0] = 0;
    for (int i = 0; i < n; i++) {
        host_t *old = hosts_find(c->hosts, lh[i].name);
        if (old) {
            next[i] = *old;
            old->probing = 0; /* the probes (if any) moved with it */
            memset(&old->np, 0, sizeof old->np);
        } else {
            snprintf(next[i].name, sizeof next[i].name, "%.255s", lh[i].name);
            next[i].state = HOST_UP;
            next[i].since = now;
            next[i].probe.fd = -1;
            fresh[i] = 1;
            append_name(added, addlen, lh[i].name);
        }
        next[i].slots = lh[i].slots;
    }
    for (int i = 0; i < c->hosts->n; i++) {
        int kept = 0;
        for (int k = 0; k < n; k++) kept |= strcmp(c->hosts->list[i].name, lh[k].name) == 0;
        if (kept) continue;
        if (c->hosts->list[i].probing) launcher_probe_cancel(c->launcher, &c->hosts->list[i].probe);
        netprobe_stop(c, &c->hosts->list[i].np);
        append_name(removed, remlen, c->hosts->list[i].name);
    }
    free(c->hosts->list);
    c->hosts->list = next;
    c->hosts->n = n;
    hosts_recount(c->hosts);
    /* New hosts are up until shown otherwise; a probe shows it soon. */
    for (int i = 0; i < n; i++)
        if (fresh[i]) hosts_probe(c, c->hosts->list[i].name, now);
    free(fresh);
    return 0;
}

void hosts_free(coordinator_t *c)
{
    for (int i = 0; i < c->hosts->n; i++) {
        if (c->hosts->list[i].probing && c->launcher) launcher_probe_cancel(c->launcher, &c->hosts->list[i].probe);
        if (c->launcher) netprobe_stop(c, &c->hosts->list[i].np);
    }
    free(c->hosts->list);
    c->hosts->list = NULL;
    c->hosts->n = 0;
}

static void host_event(coordinator_t *c, const host_t *h, double now)
{
    if (!c->conn->rc) return; /* the state is in pacer:coordinator's hosts once Redis is back */
    json_t *ev = json_pack("{s:s, s:s, s:s, s:s, s:f}", "type", "host", "host", h->name, "state",
                           host_state_name(h->state), "reason", h->reason, "time", now);
    if (ev) tickconn_check(c, jobstore_event(c->conn->rc, ev), "host event");
    json_decref(ev);
}

void hosts_set_state(coordinator_t *c, host_t *h, host_state_t st, const char *reason, double now)
{
    if (h->state == st && strcmp(h->reason, reason ? reason : "") == 0) return;
    int changed = h->state != st;
    h->state = st;
    h->net_failing = 0;
    snprintf(h->reason, sizeof h->reason, "%s", reason ? reason : "");
    if (changed) h->since = now;
    if (st == HOST_DOWN && h->next_probe < now) h->next_probe = now + c->cfg.host_probe_s;
    hosts_recount(c->hosts);
    clog_printf("host %s: %s%s%s", h->name, host_state_name(st), h->reason[0] ? ": " : "", h->reason);
    host_event(c, h, now);
    /* At once, not at the next second: the caller may act on the new state (a resize
     * that names it) in this very tick, and a client that sees the action must find the
     * state in GET /api/v1/cluster. */
    if (c->conn->rc && c->hosts->changed) c->hosts->changed(c, now);
}

void hosts_probe(coordinator_t *c, const char *name, double now)
{
    host_t *h = hosts_find(c->hosts, name);
    if (!h || h->probing) return;
    launcher_probe_start(c->launcher, h->name, now, &h->probe);
    h->probing = 1;
}

int hosts_probing(const hosts_state_t *hs, const char *name)
{
    host_t *h = hosts_find(hs, name);
    return h && h->probing;
}

/* A host failing for the job's network: probed again with one usable host (alone when
 * none is), every --host-probe s; up when it exchanged messages with it. */
static void net_recheck(coordinator_t *c, host_t *h, double now)
{
    if (h->np.stage == NP_IDLE) {
        if (now < h->next_probe) return;
        const char *names[2] = {h->name, NULL};
        int n = 1;
        for (int k = 0; k < c->hosts->n && n < 2; k++)
            if (usable(&c->hosts->list[k])) names[n++] = c->hosts->list[k].name;
        char err[256];
        if (netprobe_start(c, &h->np, &c->hosts->netprobe_seq, names, n, now, err, sizeof err) != 0) {
            clog_printf("host %s: no network probe: %s", h->name, err);
            h->next_probe = now + c->cfg.host_probe_s;
        }
        return;
    }
    if (!netprobe_poll(c, &h->np, now)) return;
    int ok = h->np.n > 0 && h->np.hosts[0].ok;
    char why[200];
    snprintf(why, sizeof why, "%s", h->np.hosts[0].why);
    netprobe_stop(c, &h->np);
    h->checked = now;
    h->next_probe = now + c->cfg.host_probe_s;
    if (ok) hosts_set_state(c, h, HOST_UP, "", now);
    else if (why[0] && strcmp(why, h->reason) != 0) {
        hosts_set_state(c, h, HOST_FAILING, why, now);
        h->net_failing = 1;
    }
}

void hosts_tick(coordinator_t *c, double now)
{
    for (int i = 0; i < c->hosts->n; i++) {
        host_t *h = &c->hosts->list[i];
        if (h->net_failing && h->state == HOST_FAILING) net_recheck(c, h, now);
        if (!h->probing && h->state == HOST_DOWN && now >= h->next_probe) hosts_probe(c, h->name, now);
        if (!h->probing) continue;
        int up = launcher_probe_poll(c->launcher, &h->probe, now);
        if (up < 0) continue;
        h->probing = 0;
        h->checked = now;
        if (up) {
            if (h->state != HOST_DOWN) continue;
            /* slurmd may answer before slurmctld takes the node back. */
            if (!launcher_host_schedulable(c->launcher, h->name)) {
                h->next_probe = now + c->cfg.host_probe_s;
                continue;
            }
            hosts_set_state(c, h, HOST_UP, "", now);
        } else {
            h->next_probe = now + c->cfg.host_probe_s;
            if (h->state != HOST_DOWN) {
                char why[256];
                snprintf(why, sizeof why, "unreachable: %.200s", h->probe.why);
                hosts_set_state(c, h, HOST_DOWN, why, now);
            }
        }
    }
}

int hosts_usable(const hosts_state_t *hs, const char **names, int max, int *slots)
{
    int n = 0, s = 0;
    for (int i = 0; i < hs->n; i++) {
        if (!usable(&hs->list[i])) continue;
        if (n < max) names[n] = hs->list[i].name;
        n++;
        s += hs->list[i].slots;
    }
    if (slots) *slots = s;
    return n < max ? n : max;
}

/* A host's last benchmark, with only what it measured: one under way has no
 * figures yet, a failed one its error and no speed, and the ratio comes once its round has
 * ended (the API showed 0 for each of them). */
static json_t *bench_json(const host_bench_t *b)
{
    json_t *o = json_pack("{s:b, s:s}", "running", b->running, "model", b->model);
    if (!o || b->running) return o;
    json_object_set_new(o, "time", json_real(b->time));
    if (b->device[0]) json_object_set_new(o, "device", json_string(b->device));
    if (b->error[0]) {
        json_object_set_new(o, "error", json_string(b->error));
        return o;
    }
    if (b->samples_per_s > 0) json_object_set_new(o, "samples_per_s", json_real(b->samples_per_s));
    if (b->ratio > 0) json_object_set_new(o, "ratio", json_real(b->ratio));
    return o;
}

json_t *hosts_json(const hosts_state_t *hs)
{
    json_t *arr = json_array();
    for (int i = 0; arr && i < hs->n; i++) {
        const host_t *h = &hs->list[i];
        json_t *b = json_null();
        if (h->bench.time > 0 || h->bench.running) b = bench_json(&h->bench);
        json_t *o = json_pack("{s:s, s:i, s:s, s:s, s:f, s:f, s:o, s:b}", "name", h->name, "slots", h->slots, "state",
                              host_state_name(h->state), "reason", h->reason, "since", h->since, "checked", h->checked,
                              "benchmark", b ? b : json_null(), "draining", h->drained);
        if (o && h->drained) {
            json_object_set_new(o, "drain_deadline", json_real(h->drain_deadline));
            json_object_set_new(o, "drain_reason", json_string(h->drain_reason));
        }
        json_array_append_new(arr, o);
    }
    return arr;
}

/* ---- policy ----------------------------------------------------------------------------- */

int hosts_elastic_world(int full, int min, int total_slots, int usable_slots)
{
    if (usable_slots <= 0 || full <= 0) return 0;
    if (min < 1) min = 1;
    if (total_slots < usable_slots) total_slots = usable_slots;
    int w = full;
    if (full > usable_slots) {
        /* ceil(full x usable / total): a job that oversubscribed the whole cluster keeps
         * doing so in the same proportion; one that fitted gets one rank per slot. */
        long long k = ((long long)full * usable_slots + total_slots - 1) / total_slots;
        w = (int)(k > usable_slots ? k : usable_slots);
        if (w > full) w = full;
    }
    return w < min ? min : w;
}

static int hosts_cmp_speed(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void hosts_classify(const double *speed, int n, double *ratio, int *slow)
{
    double *ok = malloc(sizeof *ok * (size_t)(n > 0 ? n : 1));
    int k = 0;
    for (int i = 0; ok && i < n; i++)
        if (speed[i] > 0 && isfinite(speed[i])) ok[k++] = speed[i];
    double median = 0;
    if (k > 0) {
        qsort(ok, (size_t)k, sizeof *ok, hosts_cmp_speed);
        median = k % 2 ? ok[k / 2] : 0.5 * (ok[k / 2 - 1] + ok[k / 2]);
    }
    for (int i = 0; i < n; i++) {
        int good = speed[i] > 0 && isfinite(speed[i]) && median > 0;
        ratio[i] = good ? speed[i] / median : 0;
        slow[i] = good && ratio[i] < HOSTS_SLOW_RATIO;
    }
    free(ok);
}
