/* coordinator/netprobe.c - see netprobe.h. */
#include "netprobe.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "clog.h"
#include "coord_internal.h"
#include "fs.h"
#include "launch.h"

#define NPATH (PATH_MAX + 128) /* STATE_DIR/netprobe/{n}/{i}/{leaf} always fits */

/* ---- pure ------------------------------------------------------------------------------ */

/* Sets flags[row * n + p] for each rank p in arr (ranks out of [0, n) are ignored). */
static void mark_ranks(const json_t *arr, int n, int row, unsigned char *flags)
{
    size_t i;
    const json_t *e;
    if (!json_is_array(arr)) return;
    json_array_foreach(arr, i, e)
    {
        json_int_t p = json_is_integer(e) ? json_integer_value(e) : -1;
        if (p >= 0 && p < n) flags[(size_t)row * (size_t)n + (size_t)p] = 1;
    }
}

int netprobe_parse(const char *text, size_t len, int n, const char *const *names, int *lined, unsigned char *heard,
                   unsigned char *sent)
{
    static const char TAG[] = "{\"netprobe\":";
    int *host_of = calloc((size_t)(n > 0 ? n : 1), sizeof *host_of);
    int got = 0;
    memset(lined, 0, sizeof *lined * (size_t)n);
    memset(heard, 0, (size_t)n * (size_t)n);
    memset(sent, 0, (size_t)n * (size_t)n);
    if (!host_of) return 0;
    /* Which host each rank is on, from its own line when it names one of ours; else one
     * rank per host in order. Two passes: the lines' ranks are in the senders' numbering. */
    for (int r = 0; r < n; r++) host_of[r] = r;
    json_t **line = calloc((size_t)(n > 0 ? n : 1), sizeof *line);
    if (!line) {
        free(host_of);
        return 0;
    }
    for (size_t i = 0; i < len;) {
        const char *nl = memchr(text + i, '\n', len - i);
        size_t l = nl ? (size_t)(nl - (text + i)) : len - i;
        if (l >= sizeof TAG - 1 && l < 65536 && memcmp(text + i, TAG, sizeof TAG - 1) == 0) {
            json_t *root = json_loadb(text + i, l, JSON_REJECT_DUPLICATES, NULL);
            json_t *o = json_object_get(root, "netprobe");
            json_t *rk = json_object_get(o, "rank"), *rs = json_object_get(o, "ranks");
            json_int_t r = json_is_integer(rk) ? json_integer_value(rk) : -1;
            if (json_is_object(o) && json_is_integer(rs) && json_integer_value(rs) == n && r >= 0 && r < n) {
                json_decref(line[r]); /* a rank's last line counts */
                line[r] = json_incref(o);
                const char *h = json_string_value(json_object_get(o, "host"));
                for (int k = 0; h && k < n; k++)
                    if (strcmp(names[k], h) == 0) host_of[r] = k;
            }
            json_decref(root);
        }
        i += l + 1;
    }
    /* heard/sent are in ranks; the verdicts are in hosts: translated through host_of. */
    unsigned char *rh = calloc((size_t)n * (size_t)n + 1, 1), *rsn = calloc((size_t)n * (size_t)n + 1, 1);
    for (int r = 0; rh && rsn && r < n; r++) {
        if (!line[r]) continue;
        mark_ranks(json_object_get(line[r], "heard"), n, r, rh);
        mark_ranks(json_object_get(line[r], "sent"), n, r, rsn);
    }
    for (int r = 0; rh && rsn && r < n; r++) {
        if (!line[r]) continue;
        int h = host_of[r];
        if (!lined[h]) got++;
        lined[h] = 1;
        for (int p = 0; p < n; p++) {
            size_t hp = (size_t)h * (size_t)n + (size_t)host_of[p], rp = (size_t)r * (size_t)n + (size_t)p;
            heard[hp] |= rh[rp];
            sent[hp] |= rsn[rp];
        }
    }
    for (int r = 0; r < n; r++) json_decref(line[r]);
    free(line);
    free(rh);
    free(rsn);
    free(host_of);
    return got;
}

void netprobe_verdict(int n, const char *const *names, const int *lined, const unsigned char *heard,
                      const unsigned char *sent, int *ok, int *failing, char (*why)[200])
{
    int m = 0, nfail = 0;
    for (int h = 0; h < n; h++) m += lined[h] != 0;
    for (int h = 0; h < n; h++) {
        ok[h] = failing[h] = 0;
        why[h][0] = 0;
        if (!lined[h]) continue;
        int bad = 0;
        size_t used = 0;
        char list[160] = "";
        for (int p = 0; p < n; p++) {
            if (p == h || !lined[p]) continue;
            size_t hp = (size_t)h * (size_t)n + (size_t)p, ph = (size_t)p * (size_t)n + (size_t)h;
            /* A good pair: each heard the other, and each saw its own message taken. */
            if (heard[hp] && heard[ph] && sent[hp] && sent[ph]) continue;
            bad++;
            if (used < sizeof list - 1) {
                int k = snprintf(list + used, sizeof list - used, "%s%s", used ? ", " : "", names[p]);
                if (k > 0) used += (size_t)k;
                if (used >= sizeof list) used = sizeof list - 1;
            }
        }
        ok[h] = bad == 0;
        /* More than half of the others: the host, not one of its peers, is cut off. */
        failing[h] = m >= 2 && 2 * bad > m - 1;
        if (failing[h]) {
            nfail++;
            snprintf(why[h], 200, "the job's network: no MPI message between %.40s and %.100s within %.0f s",
                     names[h], list, NETPROBE_WAIT_S);
        }
    }
    /* All of them failing each other (two hosts, or a network that carries nothing): no
     * telling which is cut off. */
    if (nfail == m)
        for (int h = 0; h < n; h++) {
            failing[h] = 0;
            why[h][0] = 0;
        }
}

/* ---- launches ---------------------------------------------------------------------------- */

/* STATE_DIR/netprobe/{n}[/{i}][/leaf] (i < 0: the group's files, in the probe's own dir). */
static void probe_path(const netprobe_t *np, int i, const char *leaf, char *out, size_t len)
{
    if (i < 0) snprintf(out, len, "%s%s%s", np->dir, leaf ? "/" : "", leaf ? leaf : "");
    else snprintf(out, len, "%s/%d%s%s", np->dir, i, leaf ? "/" : "", leaf ? leaf : "");
}

/* Starts one launch: i < 0 the group over every host, else host i alone. */
static int launch_one(coordinator_t *c, netprobe_t *np, int i, double now, char *err, size_t errlen)
{
    char dir[NPATH], log[NPATH], ecp[NPATH], hp[NPATH], id[48], wait[16];
    probe_path(np, i, NULL, dir, sizeof dir);
    probe_path(np, i, "log", log, sizeof log);
    probe_path(np, i, "exit_code", ecp, sizeof ecp);
    probe_path(np, i, "handle", hp, sizeof hp);
    int fd = fs_mkdir_p(dir, 0755) == 0 ? open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644) : -1;
    if (fd < 0) {
        snprintf(err, errlen, "%.300s: %s", log, strerror(errno));
        return -1;
    }
    close(fd);
    snprintf(wait, sizeof wait, "%g", NETPROBE_WAIT_S);
    snprintf(id, sizeof id, "netprobe-%s", strrchr(np->dir, '/') + 1);
    const char *argv[] = {c->worker, "--netprobe", wait, NULL};
    const char **names = calloc((size_t)np->n, sizeof *names);
    if (!names) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (int k = 0; k < np->n; k++) names[k] = np->hosts[k].host;
    launch_req_t req = {.id = id,
                        .attempt = 1,
                        .world = i < 0 ? np->n : 1,
                        .argv = argv,
                        .dir = dir,
                        .log_path = log,
                        .exit_code_path = ecp,
                        .handle_path = hp,
                        .hosts = i < 0 ? names : names + i,
                        .nhosts = i < 0 ? np->n : 1,
                        .per_host = 1};
    int rc = launcher_start(c->launcher, &req, &np->h[i < 0 ? 0 : i], err, errlen);
    free(names);
    if (rc == 0) np->running[i < 0 ? 0 : i] = 1;
    (void)now;
    return rc;
}

static void free_probe(netprobe_t *np)
{
    free(np->hosts);
    free(np->h);
    free(np->running);
    np->hosts = NULL;
    np->h = NULL;
    np->running = NULL;
    np->n = 0;
}

int netprobe_start(coordinator_t *c, netprobe_t *np, const char *const *names, int n, double now, char *err,
                   size_t errlen)
{
    memset(np, 0, sizeof *np);
    if (n < 1) {
        snprintf(err, errlen, "no host to probe");
        return -1;
    }
    np->hosts = calloc((size_t)n, sizeof *np->hosts);
    np->h = calloc((size_t)n, sizeof *np->h);
    np->running = calloc((size_t)n, sizeof *np->running);
    if (!np->hosts || !np->h || !np->running) {
        free_probe(np);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    np->n = n;
    for (int i = 0; i < n; i++) snprintf(np->hosts[i].host, sizeof np->hosts[i].host, "%s", names[i]);
    snprintf(np->dir, sizeof np->dir, "%s/netprobe/%ld", c->state_dir, ++c->netprobe_seq);
    fs_remove_tree(np->dir); /* a previous daemon's, with this number */
    np->deadline = now + NETPROBE_LAUNCH_S + NETPROBE_WAIT_S;
    if (n == 1) {
        /* Alone: only the launch path can be tested. */
        np->stage = 2;
        if (launch_one(c, np, 0, now, err, errlen) == 0) return 0;
    } else {
        np->stage = 1;
        if (launch_one(c, np, -1, now, err, errlen) == 0) return 0;
    }
    fs_remove_tree(np->dir);
    free_probe(np);
    np->stage = 0;
    return -1;
}

/* The group is over: verdicts for the hosts that printed; the others are probed alone. */
static void group_done(coordinator_t *c, netprobe_t *np, double now)
{
    int n = np->n;
    char log[NPATH];
    probe_path(np, -1, "log", log, sizeof log);
    char *text = malloc(NETPROBE_LOG_MAX);
    const char **names = calloc((size_t)n, sizeof *names);
    int *lined = calloc((size_t)n, sizeof *lined), *ok = calloc((size_t)n, sizeof *ok),
        *failing = calloc((size_t)n, sizeof *failing);
    unsigned char *heard = calloc((size_t)n * (size_t)n, 1), *sent = calloc((size_t)n * (size_t)n, 1);
    char(*why)[200] = calloc((size_t)n, sizeof *why);
    if (text && names && lined && ok && failing && heard && sent && why) {
        size_t len = log_read_tail(log, text, NETPROBE_LOG_MAX);
        for (int i = 0; i < n; i++) names[i] = np->hosts[i].host;
        netprobe_parse(text, len, n, names, lined, heard, sent);
        netprobe_verdict(n, names, lined, heard, sent, ok, failing, why);
        for (int i = 0; i < n; i++) {
            netprobe_host_t *h = &np->hosts[i];
            h->lined = lined[i];
            h->ok = ok[i];
            h->failing = failing[i];
            snprintf(h->why, sizeof h->why, "%s", why[i]);
        }
    }
    free(text);
    free(names);
    free(lined);
    free(ok);
    free(failing);
    free(heard);
    free(sent);
    free(why);
    /* Hosts the group did not hear from at all: alone, each. */
    np->stage = 2;
    np->deadline = now + NETPROBE_LAUNCH_S + NETPROBE_WAIT_S;
    for (int i = 0; i < n; i++) {
        char err[256];
        if (np->hosts[i].lined) continue;
        if (launch_one(c, np, i, now, err, sizeof err) != 0)
            snprintf(np->hosts[i].why, sizeof np->hosts[i].why, "the job's network: cannot start a probe: %.150s",
                     err);
    }
}

/* Host i's probe alone has ended (timed_out: killed at the deadline). */
static void alone_done(netprobe_t *np, int i, const launch_status_t *st, int timed_out)
{
    netprobe_host_t *h = &np->hosts[i];
    char log[NPATH], said[160] = "";
    probe_path(np, i, "log", log, sizeof log);
    char *text = malloc(NETPROBE_LOG_MAX);
    size_t len = text ? log_read_tail(log, text, NETPROBE_LOG_MAX) : 0;
    int lined = 0;
    unsigned char heard = 0, sent = 0;
    const char *name = h->host;
    if (text && netprobe_parse(text, len, 1, &name, &lined, &heard, &sent) == 1) {
        h->lined = h->ok = 1;
    } else {
        log_last_line(log, said, sizeof said);
        if (timed_out)
            snprintf(h->why, sizeof h->why, "the job's network: mpirun could not start a rank there: timed out after %.0f s",
                     NETPROBE_LAUNCH_S + NETPROBE_WAIT_S);
        else
            snprintf(h->why, sizeof h->why, "the job's network: mpirun could not start a rank there: %s %d%s%.100s",
                     st->outcome == SV_EXITED ? "exit" : "signal", st->code, said[0] ? ": " : "", said);
        h->failing = 1;
    }
    free(text);
}

int netprobe_poll(coordinator_t *c, netprobe_t *np, double now)
{
    if (np->stage == 0 || np->stage == 3) return 1;
    int running = 0;
    for (int i = 0; i < np->n; i++) {
        if (!np->running[i]) continue;
        char log[NPATH], ecp[NPATH];
        int who = np->stage == 1 ? -1 : i;
        probe_path(np, who, "log", log, sizeof log);
        probe_path(np, who, "exit_code", ecp, sizeof ecp);
        launch_status_t st;
        launcher_poll(c->launcher, &np->h[i], ecp, log, now, &st);
        int late = !st.ended && now >= np->deadline;
        if (!st.ended && !late) {
            running++;
            continue;
        }
        if (late) launcher_stop(c->launcher, &np->h[i], 1);
        launcher_reap(c->launcher, &np->h[i]);
        np->running[i] = 0;
        if (np->stage == 2) alone_done(np, i, &st, late);
    }
    if (running) return 0;
    if (np->stage == 1) {
        group_done(c, np, now);
        for (int i = 0; i < np->n; i++) running += np->running[i];
        if (running) return 0;
    }
    /* Failing alone on every host: the worker or the launcher, not the hosts. */
    int failed = 0;
    for (int i = 0; i < np->n; i++) failed += np->hosts[i].failing && !np->hosts[i].lined;
    if (failed == np->n && np->n > 0) {
        clog_printf("network probe: no rank started on any of %d host%s: host states unchanged (the worker or the "
                    "launcher, not a host, is the likely cause): %s",
                    np->n, np->n == 1 ? "" : "s", np->hosts[0].why);
        for (int i = 0; i < np->n; i++) np->hosts[i].failing = 0;
    }
    np->stage = 3;
    fs_remove_tree(np->dir);
    return 1;
}

void netprobe_stop(coordinator_t *c, netprobe_t *np)
{
    for (int i = 0; np->running && i < np->n; i++) {
        if (!np->running[i]) continue;
        launcher_stop(c->launcher, &np->h[i], 1);
        launcher_reap(c->launcher, &np->h[i]);
    }
    if (np->stage != 0 && np->dir[0]) fs_remove_tree(np->dir);
    free_probe(np);
    memset(np, 0, sizeof *np);
}
