/* coordinator/netprobe.c - see netprobe.h. */
#include "netprobe.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
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
#include "launcher.h"
#include "supervise.h"

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
            snprintf(why[h], 200, "the job's network: no MPI message between %.40s and %.100s within %.0f s", names[h],
                     list, NETPROBE_WAIT_S);
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

/* ---- step 0: from here -------------------------------------------------------------- */

/* One connection to host's NETPROBE_REACH_PORT: 1 when it answered (accepted or
 * refused), else 0 with why. */
static int reach_one(const char *host, char *why, size_t len)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai = NULL;
    int rc = getaddrinfo(host, NETPROBE_REACH_PORT, &hints, &ai);
    if (rc != 0 || !ai) {
        snprintf(why, len, "the job's network: %.100s does not resolve: %s", host, gai_strerror(rc));
        if (ai) freeaddrinfo(ai);
        return 0;
    }
    char addr[INET6_ADDRSTRLEN] = "?";
    getnameinfo(ai->ai_addr, ai->ai_addrlen, addr, sizeof addr, NULL, 0, NI_NUMERICHOST);
    int ok = 0, err = ETIMEDOUT;
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) err = errno;
    else if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) ok = 1;
    else if (errno == ECONNREFUSED) ok = 1;
    else if (errno != EINPROGRESS) err = errno;
    else {
        struct pollfd p = {.fd = fd, .events = POLLOUT};
        int k = poll(&p, 1, (int)(NETPROBE_REACH_S * 1000));
        int soerr = 0;
        socklen_t sl = sizeof soerr;
        if (k == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0) {
            ok = soerr == 0 || soerr == ECONNREFUSED;
            err = soerr;
        }
    }
    if (fd >= 0) close(fd);
    freeaddrinfo(ai);
    if (!ok) {
        if (err == ETIMEDOUT)
            snprintf(why, len,
                     "the job's network: %.100s (%s) does not answer from the coordinator: timed out after %.0f s",
                     host, addr, NETPROBE_REACH_S);
        else
            snprintf(why, len, "the job's network: %.100s (%s) does not answer from the coordinator: %s", host, addr,
                     strerror(err));
    }
    return ok;
}

/* The thread of step 0: each host in turn; hosts[].reach and .why are its own until it
 * sets reach_done. */
static void *reach_main(void *arg)
{
    netprobe_t *np = arg;
    for (int i = 0; i < np->n; i++)
        np->hosts[i].reach = reach_one(np->hosts[i].host, np->hosts[i].why, sizeof np->hosts[i].why) ? 1 : -1;
    atomic_store(&np->reach_done, 1);
    return NULL;
}

/* ---- launches ---------------------------------------------------------------------------- */

/* STATE_DIR/netprobe/{n}[/{i}][/leaf] (i < 0: the group's files, in the probe's own dir). */
static void probe_path(const netprobe_t *np, int i, const char *leaf, char *out, size_t len)
{
    if (i < 0) snprintf(out, len, "%s%s%s", np->dir, leaf ? "/" : "", leaf ? leaf : "");
    else snprintf(out, len, "%s/%d%s%s", np->dir, i, leaf ? "/" : "", leaf ? leaf : "");
}

/* Starts one launch: i < 0 the group (np->grp), else host i alone. */
static int launch_one(coordinator_t *c, netprobe_t *np, int i, char *err, size_t errlen)
{
    char dir[NPATH], log[NPATH], ecp[NPATH], hp[NPATH], id[48], wait[16];
    probe_path(np, i, NULL, dir, sizeof dir);
    probe_path(np, i, "log", log, sizeof log);
    probe_path(np, i, "exit_code", ecp, sizeof ecp);
    probe_path(np, i, "handle", hp, sizeof hp);
    int fd = fs_mkdir_p(dir, 0755) == 0 ? open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644) : -1;
    if (fd < 0) {
        snprintf(err, errlen, "%.200s: %s", log, strerror(errno));
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
    int nn = 0;
    if (i < 0)
        for (int k = 0; k < np->ng; k++) names[nn++] = np->hosts[np->grp[k]].host;
    else names[nn++] = np->hosts[i].host;
    launch_req_t req = {.id = id,
                        .attempt = 1,
                        .world = nn,
                        .argv = argv,
                        .dir = dir,
                        .log_path = log,
                        .exit_code_path = ecp,
                        .handle_path = hp,
                        .hosts = names,
                        .nhosts = nn,
                        .per_host = 1};
    int rc = launcher_start(c->launcher, &req, &np->h[i < 0 ? 0 : i], err, errlen);
    free(names);
    if (rc == 0) np->running[i < 0 ? 0 : i] = 1;
    return rc;
}

static void free_probe(netprobe_t *np)
{
    free(np->hosts);
    free(np->h);
    free(np->running);
    free(np->grp);
    np->hosts = NULL;
    np->h = NULL;
    np->running = NULL;
    np->grp = NULL;
    np->n = np->ng = 0;
}

int netprobe_start(coordinator_t *c, netprobe_t *np, long *seq, const char *const *names, int n, double now, char *err,
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
    np->grp = calloc((size_t)n, sizeof *np->grp);
    if (!np->hosts || !np->h || !np->running || !np->grp) {
        free_probe(np);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    np->n = n;
    for (int i = 0; i < n; i++) snprintf(np->hosts[i].host, sizeof np->hosts[i].host, "%s", names[i]);
    snprintf(np->dir, sizeof np->dir, "%s/netprobe/%ld", c->state_dir, ++*seq);
    fs_remove_tree(np->dir); /* a previous daemon's, with this number */
    atomic_store(&np->reach_done, 0);
    int rc = pthread_create(&np->reach_th, NULL, reach_main, np);
    if (rc != 0) {
        snprintf(err, errlen, "cannot start a thread: %s", strerror(rc));
        free_probe(np);
        return -1;
    }
    np->stage = NP_REACH;
    np->deadline = now;
    return 0;
}

/* Step 0 is over: the hosts that did not answer fail (unless none answered); the others
 * go on to the group, or alone when only one did. */
static void reach_done(coordinator_t *c, netprobe_t *np, double now)
{
    pthread_join(np->reach_th, NULL);
    int answered = 0;
    for (int i = 0; i < np->n; i++) answered += np->hosts[i].reach > 0;
    if (answered == 0) {
        clog_printf("network probe: none of %d host%s answered on port %s from here: no verdict from that (a "
                    "firewall is the likely cause): %s",
                    np->n, np->n == 1 ? "" : "s", NETPROBE_REACH_PORT, np->hosts[0].why);
        for (int i = 0; i < np->n; i++) np->hosts[i].why[0] = 0;
    }
    np->ng = 0;
    for (int i = 0; i < np->n; i++) {
        netprobe_host_t *h = &np->hosts[i];
        if (answered && h->reach < 0) h->failing = 1;
        else np->grp[np->ng++] = i;
    }
    np->deadline = now + NETPROBE_LAUNCH_S + NETPROBE_WAIT_S;
    char err[256];
    if (np->ng >= 2) {
        np->stage = NP_GROUP;
        if (launch_one(c, np, -1, err, sizeof err) == 0) return;
        clog_printf("network probe: cannot start it: %s", err);
    } else if (np->ng == 1) {
        /* Alone: only the launch path can be tested. */
        np->stage = NP_ALONE;
        int i = np->grp[0];
        if (launch_one(c, np, i, err, sizeof err) == 0) return;
        snprintf(np->hosts[i].why, sizeof np->hosts[i].why, "the job's network: cannot start a probe: %.150s", err);
    }
    np->stage = NP_ALONE; /* nothing runs: netprobe_poll concludes */
}

/* The group is over: verdicts for the hosts that printed; the others are probed alone. */
static void group_done(coordinator_t *c, netprobe_t *np, double now)
{
    int n = np->ng;
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
        for (int k = 0; k < n; k++) names[k] = np->hosts[np->grp[k]].host;
        netprobe_parse(text, len, n, names, lined, heard, sent);
        netprobe_verdict(n, names, lined, heard, sent, ok, failing, why);
        for (int k = 0; k < n; k++) {
            netprobe_host_t *h = &np->hosts[np->grp[k]];
            h->lined = lined[k];
            h->ok = ok[k];
            h->failing = failing[k];
            snprintf(h->why, sizeof h->why, "%s", why[k]);
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
    /* Hosts of the group that did not print at all: alone, each. */
    np->stage = NP_ALONE;
    np->deadline = now + NETPROBE_LAUNCH_S + NETPROBE_WAIT_S;
    for (int k = 0; k < n; k++) {
        char err[256];
        int i = np->grp[k];
        if (np->hosts[i].lined) continue;
        if (launch_one(c, np, i, err, sizeof err) != 0)
            snprintf(np->hosts[i].why, sizeof np->hosts[i].why, "the job's network: cannot start a probe: %.150s", err);
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
            snprintf(h->why, sizeof h->why,
                     "the job's network: mpirun could not start a rank there: timed out after %.0f s",
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
    if (np->stage == NP_IDLE || np->stage == NP_DONE) return 1;
    if (np->stage == NP_REACH) {
        if (!atomic_load(&np->reach_done)) return 0;
        reach_done(c, np, now);
    }
    int running = 0;
    for (int i = 0; i < np->n; i++) {
        if (!np->running[i]) continue;
        char log[NPATH], ecp[NPATH];
        int who = np->stage == NP_GROUP ? -1 : i;
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
        if (np->stage == NP_ALONE) alone_done(np, i, &st, late);
    }
    if (running) return 0;
    if (np->stage == NP_GROUP) {
        group_done(c, np, now);
        for (int i = 0; i < np->n; i++) running += np->running[i];
        if (running) return 0;
    }
    /* Failing alone on every host: the worker or the launcher, not the hosts. */
    int failed = 0;
    for (int i = 0; i < np->n; i++) failed += np->hosts[i].failing && !np->hosts[i].lined && np->hosts[i].reach >= 0;
    if (failed == np->n && np->n > 0) {
        clog_printf("network probe: no rank started on any of %d host%s: host states unchanged (the worker or the "
                    "launcher, not a host, is the likely cause): %s",
                    np->n, np->n == 1 ? "" : "s", np->hosts[0].why);
        for (int i = 0; i < np->n; i++) np->hosts[i].failing = 0;
    }
    np->stage = NP_DONE;
    fs_remove_tree(np->dir);
    return 1;
}

void netprobe_stop(coordinator_t *c, netprobe_t *np)
{
    /* Step 0's thread ends within its timeouts: joined, never left to write freed memory. */
    if (np->stage == NP_REACH) pthread_join(np->reach_th, NULL);
    for (int i = 0; np->running && i < np->n; i++) {
        if (!np->running[i]) continue;
        launcher_stop(c->launcher, &np->h[i], 1);
        launcher_reap(c->launcher, &np->h[i]);
    }
    if (np->stage != NP_IDLE && np->dir[0]) fs_remove_tree(np->dir);
    free_probe(np);
    memset(np, 0, sizeof *np);
}
