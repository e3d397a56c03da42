/* coordinator/launch_slurm.c - the slurm launcher: each attempt is one Slurm batch job.
 *
 *   sbatch --parsable --job-name=pacer-ID --ntasks=W --no-requeue --open-mode=append
 *          --output=LOG --chdir=JOBDIR [--partition=P] [--slurm-args...]
 *          JOBDIR/slurm-batch.sh EXIT_CODE_FILE CMD...
 *
 * where the batch script is launch.h's wrapper (it records CMD's exit status in the
 * exit-code file, on the shared state dir) and CMD starts the ranks inside the allocation:
 *
 *   srun --mpi=pmix --kill-on-bad-exit=1 pacer-worker ...   Slurm's PMIx plugin serves
 *        the ranks' PMIx (Debian's Open MPI 4.1 uses PMIx 4 through its ext3x component)
 *   mpirun --allow-run-as-root -np W pacer-worker ...      Open MPI reads the allocation
 *        (ras/slurm) and starts its daemons on the other nodes with srun (plm/slurm)
 *
 * --no-requeue: a failed attempt comes back to the coordinator, whose restart policy
 * (supervise.h) decides, instead of Slurm requeueing it behind the coordinator's back.
 *
 * Following without a database: sacct needs slurmdbd (or a jobcomp plugin), which a
 * cluster may not run, so the launcher asks `scontrol show job -o ID`, which slurmctld
 * answers from memory while the job runs and for MinJobAge seconds after (300 by
 * default), and reads the exit-code file in between (the batch script wrote it). A job
 * slurmctld no longer knows ended with the status in that file, or was lost.
 *
 * Ranks report their host as SLURMD_NODENAME (common/hostname.h): node profiles are keyed
 * by Slurm node names, the names sinfo gives the coordinator here.
 */
#include "launcher_impl.h"

#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clog.h"
#include "fs.h"
#include "launch.h"
#include "launcher.h" /* the calls this file defines */

#define SLURM_TIMEOUT_S 5.0 /* one client command */
#define SLURM_SUBMIT_TIMEOUT_S 20.0
#define SLURM_POLL_S 1.0 /* scontrol at most this often per attempt */
#define OUT_MAX 16384

/* Runs a Slurm client command; out gets its output. Returns its exit status or -1. */
static int slurm_cmd(const char *const *argv, char *out, size_t len, double timeout_s)
{
    return launch_capture(argv, out, len, timeout_s);
}

/* The first line of out, for error messages. */
static const char *first_line(char *out)
{
    char *nl = strchr(out, '\n');
    if (nl) *nl = 0;
    return out[0] ? out : "(no output)";
}

static int slurm_open(launcher_t *l, const launcher_config_t *cfg, char *err, size_t errlen)
{
    char *out = malloc(OUT_MAX);
    int rc = -1;
    if (!out) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (cfg->slurm_partition && *cfg->slurm_partition) {
        if (strlen(cfg->slurm_partition) >= sizeof l->partition || strpbrk(cfg->slurm_partition, " \t\n")) {
            snprintf(err, errlen, "--slurm-partition %.64s: not a partition name", cfg->slurm_partition);
            goto out;
        }
        snprintf(l->partition, sizeof l->partition, "%s", cfg->slurm_partition);
    }
    if (cfg->slurm_args && *cfg->slurm_args) {
        if (strlen(cfg->slurm_args) >= sizeof l->args_buf) {
            snprintf(err, errlen, "--slurm-args: longer than %zu bytes", sizeof l->args_buf - 1);
            goto out;
        }
        snprintf(l->args_buf, sizeof l->args_buf, "%s", cfg->slurm_args);
        for (char *save = NULL, *t = strtok_r(l->args_buf, " \t\n", &save); t; t = strtok_r(NULL, " \t\n", &save)) {
            if (l->nargs == LAUNCH_SLURM_ARGS_MAX) {
                snprintf(err, errlen, "--slurm-args: more than %d options", LAUNCH_SLURM_ARGS_MAX);
                goto out;
            }
            if (t[0] != '-') {
                snprintf(err, errlen,
                         "--slurm-args: '%.64s' is not an sbatch option (options only: the "
                         "script is the coordinator's)",
                         t);
                goto out;
            }
            l->args[l->nargs++] = t;
            /* Ranks per node: the coordinator's slots follow it. */
            long k = 0;
            if (sscanf(t, "--ntasks-per-node=%ld", &k) == 1 && k > 0 && k <= LAUNCH_MAX_SLOTS)
                l->tasks_per_node = (int)k;
        }
    }

    /* SlurmdPort, for the probes (the default when scontrol does not say). */
    l->slurmd_port = 6818;
    const char *conf[] = {"scontrol", "show", "config", NULL};
    if (slurm_cmd(conf, out, OUT_MAX, SLURM_TIMEOUT_S) == 0) {
        char *p = strstr(out, "SlurmdPort");
        int port = 0;
        if (p && sscanf(p, "SlurmdPort = %d", &port) == 1 && port > 0 && port < 65536) l->slurmd_port = port;
    }
    int st;
    const char *mpi = cfg->slurm_mpi && *cfg->slurm_mpi ? cfg->slurm_mpi : "auto";
    if (strcmp(mpi, "pmix") == 0) {
        l->slurm_pmix = 1;
    } else if (strcmp(mpi, "mpirun") == 0) {
        l->slurm_pmix = 0;
    } else if (strcmp(mpi, "auto") == 0) {
        const char *list[] = {"srun", "--mpi=list", NULL};
        st = slurm_cmd(list, out, OUT_MAX, SLURM_TIMEOUT_S);
        l->slurm_pmix = st == 0 && strstr(out, "pmix") != NULL;
    } else {
        snprintf(err, errlen, "--slurm-mpi %.64s: pmix, mpirun or auto", mpi);
        goto out;
    }
    rc = 0;
out:
    free(out);
    return rc;
}

/* The nodes: "NAME CPUS ADDR" per line; a node in several partitions appears once each. */
static int slurm_discover(launcher_t *l, launch_host_t *hosts, int *nhosts, int *nslots, char *err, size_t errlen)
{
    char *out = malloc(OUT_MAX);
    int rc = -1, n = 0, total = 0;
    if (!out) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    const char *sinfo[] = {"sinfo", "--noheader", "--Node", "--format=%N %c %o", NULL, NULL};
    char part[160];
    if (l->partition[0]) {
        snprintf(part, sizeof part, "--partition=%s", l->partition);
        sinfo[4] = part;
    }
    int st = slurm_cmd(sinfo, out, OUT_MAX, SLURM_TIMEOUT_S);
    if (st != 0) {
        snprintf(err, errlen, "--launcher slurm: sinfo %s: %.300s",
                 st < 0 ? "did not run (is slurm-client installed?)" : "failed", first_line(out));
        goto out;
    }
    for (char *save = NULL, *line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char name[256], addr[256] = "";
        long cpus = 0;
        if (sscanf(line, "%255s %ld %255s", name, &cpus, addr) < 2) continue;
        if (cpus < 1) cpus = 1;
        if (cpus > LAUNCH_MAX_SLOTS) cpus = LAUNCH_MAX_SLOTS;
        if (l->tasks_per_node > 0 && cpus > l->tasks_per_node) cpus = l->tasks_per_node;
        int dup = 0;
        for (int i = 0; i < n; i++) dup |= strcmp(hosts[i].name, name) == 0;
        if (dup) continue;
        if (n == LAUNCH_MAX_HOSTS) {
            clog_printf("slurm: more than %d nodes; the coordinator counts the first %d", LAUNCH_MAX_HOSTS,
                        LAUNCH_MAX_HOSTS);
            break;
        }
        memset(&hosts[n], 0, sizeof hosts[n]);
        snprintf(hosts[n].name, sizeof hosts[0].name, "%s", name);
        snprintf(hosts[n].addr, sizeof hosts[0].addr, "%s", addr[0] && strcmp(addr, "(null)") ? addr : name);
        hosts[n].slots = (int)cpus;
        total += (int)cpus;
        n++;
    }
    if (n == 0) {
        snprintf(err, errlen, "--launcher slurm: sinfo lists no nodes%s%s", l->partition[0] ? " in partition " : "",
                 l->partition);
        goto out;
    }
    *nhosts = n;
    *nslots = total;
    rc = 0;
out:
    free(out);
    return rc;
}

static int slurm_start(launcher_t *l, const launch_req_t *req, launch_handle_t *h, char *err, size_t errlen)
{
    char script[PATH_MAX + 64], np[16], ntasks[32], name[96], output[PATH_MAX + 16], chdir[PATH_MAX + 16];
    char part[160];
    const char **argv = NULL;
    char *out = NULL, *text = NULL, *excl = NULL;
    int rc = -1;
    size_t n = 0;
    while (req->argv[n]) n++;
    snprintf(np, sizeof np, "%d", req->world);
    snprintf(ntasks, sizeof ntasks, "--ntasks=%d", req->world);
    snprintf(name, sizeof name, "--job-name=pacer-%s", req->id);
    if (snprintf(script, sizeof script, "%s/slurm-batch.sh", req->dir) >= (int)sizeof script ||
        snprintf(output, sizeof output, "--output=%s", req->log_path) >= (int)sizeof output ||
        snprintf(chdir, sizeof chdir, "--chdir=%s", req->dir) >= (int)sizeof chdir) {
        snprintf(err, errlen, "job directory path too long");
        goto out;
    }
    /* sbatch copies the script at submission: rewriting it for the next attempt is safe. */
    const char *wrapper = launch_wrapper_script();
    size_t tl = strlen(wrapper) + 128;
    text = malloc(tl);
    if (!text) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    int tn = snprintf(text, tl,
                      "#!/bin/sh\n# pacer-coordinator's batch script: $1 = exit-code file, then the command\n%s",
                      wrapper);
    if (fs_atomic_write_fixed(script, text, (size_t)tn, 0644) != 0) {
        snprintf(err, errlen, "%.300s: %s", script, strerror(errno));
        goto out;
    }
    argv = calloc(n + LAUNCH_SLURM_ARGS_MAX + 32 + LAUNCH_MCA_WORDS, sizeof *argv);
    out = malloc(OUT_MAX);
    if (!argv || !out) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    int a = 0;
    argv[a++] = "sbatch";
    argv[a++] = "--parsable";
    argv[a++] = name;
    argv[a++] = ntasks;
    argv[a++] = "--no-requeue";
    argv[a++] = "--open-mode=append";
    argv[a++] = output;
    argv[a++] = chdir;
    if (l->partition[0]) {
        snprintf(part, sizeof part, "--partition=%s", l->partition);
        argv[a++] = part;
    }
    for (int i = 0; i < l->nargs; i++) argv[a++] = l->args[i];
    /* After --slurm-args, so that it wins over theirs. */
    if (req->per_host) argv[a++] = "--ntasks-per-node=1";
    /* Some nodes only (an elastic restart, a benchmark): the others are excluded, so
     * Slurm still chooses among these. */
    if (req->hosts) {
        size_t cap = (size_t)l->nhosts * 260 + 16, used = 0;
        if (!(excl = malloc(cap))) {
            snprintf(err, errlen, "out of memory");
            goto out;
        }
        used = (size_t)snprintf(excl, cap, "--exclude=");
        size_t base = used;
        for (int i = 0; i < l->nhosts; i++) {
            int keep = 0;
            for (int k = 0; k < req->nhosts; k++) keep |= strcmp(req->hosts[k], l->hosts[i].name) == 0;
            if (!keep)
                used += (size_t)snprintf(excl + used, cap - used, "%s%s", used > base ? "," : "", l->hosts[i].name);
        }
        if (used > base) argv[a++] = excl;
    }
    argv[a++] = script;
    argv[a++] = req->exit_code_path;
    if (l->slurm_pmix) {
        argv[a++] = "srun";
        argv[a++] = "--mpi=pmix";
        argv[a++] = "--kill-on-bad-exit=1";
    } else {
        argv[a++] = l->mpirun;
        argv[a++] = "--allow-run-as-root";
        argv[a++] = "-np";
        argv[a++] = np;
    }
    a = launcher_mca_defaults(argv, a, l->slurm_pmix);
    for (size_t i = 0; i < n; i++) argv[a++] = req->argv[i];
    argv[a] = NULL;
    launcher_log_header(req->log_path, req->id, req->attempt, argv);
    int st = slurm_cmd(argv, out, OUT_MAX, SLURM_SUBMIT_TIMEOUT_S);
    /* --parsable: "JOBID" or "JOBID;CLUSTER". */
    char *end = NULL;
    long job = st == 0 ? strtol(out, &end, 10) : 0;
    if (st != 0 || job <= 0 || !end || (*end != ';' && *end != '\n' && *end != 0)) {
        snprintf(err, errlen, "sbatch %s: %.300s", st < 0 ? "did not run (is slurm-client installed?)" : "failed",
                 first_line(out));
        goto out;
    }
    h->slurm_job = job;
    rc = 0;
out:
    free(excl);
    free(argv);
    free(out);
    free(text);
    return rc;
}

/* Value of KEY= in a one-line scontrol record (keys are preceded by a blank or start the
 * text); "" when absent. Values end at the next blank. */
static void field(const char *text, const char *key, char *val, size_t len)
{
    size_t kl = strlen(key);
    val[0] = 0;
    for (const char *p = text; (p = strstr(p, key)) != NULL; p += kl) {
        if (p != text && !isspace((unsigned char)p[-1])) continue;
        if (p[kl] != '=') continue;
        const char *v = p + kl + 1;
        size_t n = strcspn(v, " \t\n");
        if (n >= len) n = len - 1;
        memcpy(val, v, n);
        val[n] = 0;
        return;
    }
}

int launch_slurm_parse_job(const char *text, char *state, size_t statelen, int *exit_status, int *signal, char *nodes,
                           size_t nodeslen)
{
    char id[32], ec[32];
    field(text, "JobId", id, sizeof id);
    if (!id[0]) return -1;
    field(text, "JobState", state, statelen);
    field(text, "NodeList", nodes, nodeslen);
    if (strcmp(nodes, "(null)") == 0) nodes[0] = 0;
    field(text, "ExitCode", ec, sizeof ec);
    int s = 0, g = 0;
    if (sscanf(ec, "%d:%d", &s, &g) != 2) s = g = 0;
    *exit_status = s;
    *signal = g;
    return 0;
}

/* States in which the job has not ended yet (squeue's list; COMPLETING means the batch
 * script ended and Slurm is cleaning up: the exit-code file says how it ended). */
static int state_active(const char *s)
{
    static const char *const ACTIVE[] = {"PENDING",   "CONFIGURING",  "RUNNING",     "SUSPENDED",     "COMPLETING",
                                         "RESIZING",  "REQUEUED",     "REQUEUE_FED", "REQUEUE_HOLD",  "SIGNALING",
                                         "STAGE_OUT", "SPECIAL_EXIT", "STOPPED",     "RESV_DEL_HOLD", NULL};
    for (const char *const *a = ACTIVE; *a; a++)
        if (strcmp(s, *a) == 0) return 1;
    return 0;
}

/* NODE_FAIL: which of the job's nodes are down or not responding now. */
static void lost_nodes(const char *nodes, char *lost, size_t len)
{
    char arg[600];
    char *out = malloc(OUT_MAX);
    lost[0] = 0;
    if (!out || !nodes[0] || snprintf(arg, sizeof arg, "--nodes=%s", nodes) >= (int)sizeof arg) {
        free(out);
        return;
    }
    /* %t: the compact state; a trailing '*' means not responding. */
    const char *argv[] = {"sinfo", "--noheader", "--Node", "--format=%N %t", arg, NULL};
    if (slurm_cmd(argv, out, OUT_MAX, SLURM_TIMEOUT_S) == 0) {
        size_t used = 0;
        for (char *save = NULL, *line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
            char name[256], st[32];
            if (sscanf(line, "%255s %31s", name, st) != 2) continue;
            if (!strstr(st, "down") && !strstr(st, "fail") && !strchr(st, '*')) continue;
            int dup = 0; /* a node in two partitions is listed twice */
            for (const char *q = lost; (q = strstr(q, name)) != NULL; q++)
                dup |= (q == lost || q[-1] == ' ') && (q[strlen(name)] == ' ' || q[strlen(name)] == 0);
            if (dup) continue;
            int w = snprintf(lost + used, len - used, "%s%s", used ? " " : "", name);
            if (w < 0 || (size_t)w >= len - used) break;
            used += (size_t)w;
        }
    }
    free(out);
}

static void slurm_poll(launcher_t *l, launch_handle_t *h, const char *ecp, const char *log_path, double now,
                       launch_status_t *st)
{
    (void)l;
    int ec;
    if (h->slurm_job <= 0) {
        st->ended = 1;
        st->outcome = SV_LOST;
        return;
    }
    /* The batch script wrote how its command ended: done, whatever Slurm still does. */
    if (exit_code_read(ecp, &ec) == 0) {
        st->ended = 1;
        st->outcome = SV_EXITED;
        st->code = ec;
        h->slurm_done = 1;
        return;
    }
    st->pending = h->slurm_pending;
    if (now < h->next_poll) return;
    h->next_poll = now + SLURM_POLL_S;

    char id[32], state[64], nodes[512];
    char *out = malloc(OUT_MAX);
    if (!out) return; /* unknown: try again next time */
    snprintf(id, sizeof id, "%ld", h->slurm_job);
    const char *argv[] = {"scontrol", "--oneliner", "show", "job", id, NULL};
    int rc = slurm_cmd(argv, out, OUT_MAX, SLURM_TIMEOUT_S);
    int status = 0, sig = 0;
    if (rc == 0 && launch_slurm_parse_job(out, state, sizeof state, &status, &sig, nodes, sizeof nodes) == 0) {
        h->unreachable = 0;
        int pending = strcmp(state, "PENDING") == 0 || strcmp(state, "CONFIGURING") == 0;
        if (pending != h->slurm_pending || !h->slurm_seen) {
            char reason[128];
            field(out, "Reason", reason, sizeof reason);
            if (pending) clog_printf("slurm: job %ld %s (%s)", h->slurm_job, state, reason);
            else if (strcmp(state, "RUNNING") == 0) clog_printf("slurm: job %ld RUNNING on %s", h->slurm_job, nodes);
        }
        h->slurm_seen = 1;
        h->slurm_pending = pending;
        st->pending = h->slurm_pending;
        if (state_active(state)) goto out;
        /* Over. The exit-code file may have appeared since the first look. */
        st->ended = 1;
        h->slurm_done = 1;
        if (exit_code_read(ecp, &ec) == 0) {
            st->outcome = SV_EXITED;
            st->code = ec;
        } else if (strcmp(state, "COMPLETED") == 0 || strcmp(state, "FAILED") == 0) {
            st->outcome = sig ? SV_SIGNALLED : SV_EXITED;
            st->code = sig ? sig : status;
        } else {
            /* CANCELLED (by someone else: the coordinator's own cancels are its to name),
             * TIMEOUT, NODE_FAIL, PREEMPTED, BOOT_FAIL, DEADLINE, OUT_OF_MEMORY. */
            st->outcome = SV_LOST;
            if (strcmp(state, "NODE_FAIL") == 0) lost_nodes(nodes, st->lost_hosts, sizeof st->lost_hosts);
            launcher_log_note(log_path, "Slurm job %ld ended %s (nodes %s%s%s)", h->slurm_job, state,
                              nodes[0] ? nodes : "none", st->lost_hosts[0] ? "; lost " : "", st->lost_hosts);
        }
        goto out;
    }
    if (strstr(out, "Invalid job id")) {
        /* slurmctld forgot it (MinJobAge passed, or its state was lost). */
        st->ended = 1;
        h->slurm_done = 1;
        if (exit_code_read(ecp, &ec) == 0) {
            st->outcome = SV_EXITED;
            st->code = ec;
        } else {
            st->outcome = SV_LOST;
            launcher_log_note(log_path,
                              "Slurm job %ld: slurmctld no longer knows it, and its batch script left no "
                              "exit status",
                              h->slurm_job);
        }
        goto out;
    }
    /* No answer (slurmctld down, a timeout): unknown is not ended. */
    if (!h->unreachable)
        clog_printf("slurm: cannot ask about job %ld (%s); it counts as running until slurmctld answers", h->slurm_job,
                    rc < 0 ? "scontrol did not run" : first_line(out));
    h->unreachable = 1;
out:
    free(out);
}

static void slurm_cancel(long job, int hard)
{
    char id[32], out[512];
    snprintf(id, sizeof id, "%ld", job);
    if (hard) {
        const char *kill[] = {"scancel", "--signal=KILL", "--full", id, NULL};
        slurm_cmd(kill, out, sizeof out, SLURM_TIMEOUT_S);
    }
    /* Plain scancel: a pending job leaves the queue; a running one gets SIGTERM, then
     * SIGKILL after the cluster's KillWait. */
    const char *argv[] = {"scancel", id, NULL};
    if (slurm_cmd(argv, out, sizeof out, SLURM_TIMEOUT_S) != 0)
        clog_printf("slurm: scancel %s: %s", id, first_line(out));
}

static void slurm_stop(launcher_t *l, launch_handle_t *h, int hard)
{
    (void)l;
    if (h->slurm_job > 0) slurm_cancel(h->slurm_job, hard);
}

/* A notice to the attempt's ranks (a drain, a grow): SIGTERM to the job's steps alone, the
 * ranks srun started, which checkpoint at their next step and exit; nothing is killed
 * (the caller's hard stop, at its deadline, is the limit). Not with mpirun inside the
 * allocation: the steps there are Open MPI's daemons on the other nodes, which a SIGTERM
 * tears down with their ranks; that mode stops soft (scancel), as before. */
static void slurm_notice(launcher_t *l, launch_handle_t *h)
{
    if (h->slurm_job <= 0) return;
    if (!l->slurm_pmix) {
        slurm_cancel(h->slurm_job, 0);
        return;
    }
    char id[32], out[512];
    snprintf(id, sizeof id, "%ld", h->slurm_job);
    const char *argv[] = {"scancel", "--signal=TERM", id, NULL};
    if (slurm_cmd(argv, out, sizeof out, SLURM_TIMEOUT_S) != 0)
        clog_printf("slurm: scancel --signal=TERM %s: %s", id, first_line(out));
}

static void slurm_reap(launcher_t *l, launch_handle_t *h)
{
    (void)l;
    /* Ended without Slurm saying so (lost, stale heartbeats): make sure nothing is left. */
    if (h->slurm_job > 0 && !h->slurm_done) slurm_cancel(h->slurm_job, 1);
}

/* ---- probes: is the node's slurmd there? ---------------------------------------------- */

static void slurm_probe_start(launcher_t *l, const launch_host_t *h, double now, launch_probe_t *p)
{
    (void)now;
    char port[16];
    snprintf(port, sizeof port, "%d", l->slurmd_port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai = NULL;
    int e = getaddrinfo(h->addr, port, &hints, &ai);
    if (e != 0 || !ai) {
        p->result = 0;
        snprintf(p->why, sizeof p->why, "%.100s: %s", h->addr, gai_strerror(e));
        if (ai) freeaddrinfo(ai);
        return;
    }
    p->fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (p->fd < 0 || (connect(p->fd, ai->ai_addr, ai->ai_addrlen) != 0 && errno != EINPROGRESS)) {
        p->result = 0;
        snprintf(p->why, sizeof p->why, "slurmd at %.100s:%d: %s", h->addr, l->slurmd_port, strerror(errno));
        if (p->fd >= 0) close(p->fd);
        p->fd = -1;
    }
    /* What a failure will be prefixed with. */
    if (p->result != 0) snprintf(p->why, sizeof p->why, "slurmd at %.100s:%d", h->addr, l->slurmd_port);
    freeaddrinfo(ai);
}

static void slurm_probe_poll(launcher_t *l, launch_probe_t *p)
{
    (void)l;
    struct pollfd pf = {.fd = p->fd, .events = POLLOUT};
    if (poll(&pf, 1, 0) <= 0) return;
    int soerr = 0;
    socklen_t sl = sizeof soerr;
    if (getsockopt(p->fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) != 0) soerr = errno;
    close(p->fd);
    p->fd = -1;
    p->result = soerr == 0;
    if (soerr) {
        char what[sizeof p->why];
        snprintf(what, sizeof what, "%s", p->why);
        snprintf(p->why, sizeof p->why, "%.120s: %.60s", what, strerror(soerr));
    }
}

/* sinfo's compact state of one node: schedulable unless down, drained, failing or not
 * responding ('*'). No answer: not schedulable (asked again at the next probe). */
static int slurm_schedulable(launcher_t *l, const char *host)
{
    (void)l;
    char arg[300], out[512];
    if (snprintf(arg, sizeof arg, "--nodes=%s", host) >= (int)sizeof arg) return 0;
    const char *argv[] = {"sinfo", "--noheader", "--Node", "--format=%N %t", arg, NULL};
    if (slurm_cmd(argv, out, sizeof out, SLURM_TIMEOUT_S) != 0) return 0;
    char name[256], st[32];
    if (sscanf(out, "%255s %31s", name, st) != 2) return 0;
    return !strstr(st, "down") && !strstr(st, "drain") && !strstr(st, "fail") && !strchr(st, '*');
}

/* One line of sinfo's NAME|STATE|REASON: 1 with a drained or draining node in d, else 0. */
static int drain_line(const char *line, size_t n, launch_rm_drain_t *d)
{
    const char *bar1 = memchr(line, '|', n);
    const char *bar2 = bar1 ? memchr(bar1 + 1, '|', n - (size_t)(bar1 + 1 - line)) : NULL;
    if (!bar2) return 0;
    size_t nl = (size_t)(bar1 - line), sl = (size_t)(bar2 - bar1 - 1), rl = n - (size_t)(bar2 + 1 - line);
    char st[32];
    if (nl == 0 || nl >= sizeof d->name || sl == 0 || sl >= sizeof st) return 0;
    memcpy(st, bar1 + 1, sl);
    st[sl] = 0;
    if (!strstr(st, "drain") && !strstr(st, "drng")) return 0;
    memcpy(d->name, line, nl);
    d->name[nl] = 0;
    if (rl >= sizeof d->reason) rl = sizeof d->reason - 1;
    memcpy(d->reason, bar2 + 1, rl);
    d->reason[rl] = 0;
    if (strcmp(d->reason, "none") == 0) d->reason[0] = 0;
    for (char *q = d->reason; *q; q++)
        if ((unsigned char)*q < 0x20) *q = ' '; /* nothing that breaks a log line */
    return 1;
}

int launch_slurm_parse_drains(const char *text, launch_rm_drain_t *out, int max)
{
    int k = 0;
    for (const char *p = text; p && *p && k < max;) {
        const char *end = strchr(p, '\n');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (drain_line(p, n, &out[k])) {
            int dup = 0;
            for (int i = 0; i < k; i++) dup |= strcmp(out[i].name, out[k].name) == 0;
            if (!dup) k++;
        }
        p = end ? end + 1 : NULL;
    }
    return k;
}

/* The nodes slurmctld drains: an admin's `scontrol update state=drain` tells the jobs
 * running there nothing, so the coordinator asks (drain.c). */
static int slurm_rm_drains(launcher_t *l, launch_rm_drain_t *out, int max)
{
    char arg[160];
    char *text = malloc(OUT_MAX);
    if (!text) return -1;
    const char *argv[] = {"sinfo", "--noheader", "--Node", "--format=%N|%t|%E", NULL, NULL};
    if (l->partition[0]) {
        snprintf(arg, sizeof arg, "--partition=%s", l->partition);
        argv[4] = arg;
    }
    int k = slurm_cmd(argv, text, OUT_MAX, SLURM_TIMEOUT_S) == 0 ? launch_slurm_parse_drains(text, out, max) : -1;
    free(text);
    return k;
}

const launcher_ops_t LAUNCH_SLURM_OPS = {
    .name = "slurm",
    .open = slurm_open,
    .discover = slurm_discover,
    .probe_start = slurm_probe_start,
    .probe_poll = slurm_probe_poll,
    .schedulable = slurm_schedulable,
    .rm_drains = slurm_rm_drains,
    .start = slurm_start,
    .poll = slurm_poll,
    .stop = slurm_stop,
    .notice = slurm_notice,
    .reap = slurm_reap,
    .predicts_placement = 0,
};
