/* coordinator/launch_local.c - the local and hostfile launchers: mpirun under the shell
 * wrapper of launch.h, in a session of its own on this machine. They differ only in
 * their hosts (this machine, or a hostfile's, passed to mpirun with --hostfile). The
 * session is the job: every process mpirun starts here belongs to it. Remote ranks are
 * mpirun's to stop, but they can outlive it by a moment: the drain at the end of this file
 * waits for them, and kills them, through the remote shell (launcher.h). */
#include "launcher_impl.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clog.h"
#include "launch.h"
#include "launcher.h" /* the calls this file defines */
#include "notice.h"

static int local_open(launcher_t *l, const launcher_config_t *cfg, char *err, size_t errlen)
{
    (void)l, (void)cfg, (void)err, (void)errlen;
    return 0;
}

static int local_discover(launcher_t *l, launch_host_t *hosts, int *n, int *slots, char *err, size_t errlen)
{
    if (l->kind == LAUNCHER_HOSTFILE) return launch_hostfile_parse(l->hostfile, hosts, n, slots, err, errlen);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    memset(&hosts[0], 0, sizeof hosts[0]);
    snprintf(hosts[0].name, sizeof hosts[0].name, "%s", l->hostname);
    snprintf(hosts[0].addr, sizeof hosts[0].addr, "%s", l->hostname);
    hosts[0].slots = cpus > 0 ? (int)cpus : 1;
    *n = 1;
    *slots = hosts[0].slots;
    return 0;
}

/* The remote shell Open MPI starts its daemons with: the first alternative of
 * plm_rsh_agent ("ssh : rsh" style), split on blanks, into argv (at most max - 3 words,
 * room left for ssh's options, the host and the command). Returns the word count. */
static int rsh_agent(char *buf, size_t len, const char **argv, int max)
{
    const char *env = getenv("OMPI_MCA_plm_rsh_agent");
    snprintf(buf, len, "%s", env && *env ? env : "ssh");
    char *colon = strchr(buf, ':');
    if (colon) *colon = 0;
    int n = 0;
    for (char *save = NULL, *t = strtok_r(buf, " \t", &save); t && n < max - 8; t = strtok_r(NULL, " \t", &save))
        argv[n++] = t;
    if (n == 0) argv[n++] = "ssh";
    const char *base = strrchr(argv[0], '/');
    base = base ? base + 1 : argv[0];
    if (strcmp(base, "ssh") == 0) {
        /* Never a password prompt, and a dead host answers within the probe's time. */
        argv[n++] = "-o";
        argv[n++] = "BatchMode=yes";
        argv[n++] = "-o";
        argv[n++] = "ConnectTimeout=5";
    }
    return n;
}

/* This machine (the local launcher's only host, or a hostfile's localhost): mpirun starts
 * ranks here without a remote shell, in the attempt's session. */
static int this_machine(const launcher_t *l, const char *name)
{
    return l->kind != LAUNCHER_HOSTFILE || strcmp(name, "localhost") == 0 || strcmp(name, "127.0.0.1") == 0 ||
           strcmp(name, l->hostname) == 0;
}

/* Runs `CMD [ARG]` on host through the remote shell, as Open MPI would start its daemon
 * there: the agent joins the words with blanks and the remote shell parses them (arg comes
 * quoted for it). */
static int rsh_spawn(const char *host, const char *cmd, const char *arg, pid_t *pid, char *err, size_t errlen)
{
    char buf[1024];
    const char *argv[40];
    int n = rsh_agent(buf, sizeof buf, argv, 40);
    argv[n++] = host;
    argv[n++] = cmd;
    if (arg) argv[n++] = arg;
    argv[n] = NULL;
    return launch_spawn(argv, NULL, pid, err, errlen);
}

static void local_probe_start(launcher_t *l, const launch_host_t *h, double now, launch_probe_t *p)
{
    (void)now;
    if (this_machine(l, h->name)) {
        p->result = 1;
        return;
    }
    char err[256];
    if (rsh_spawn(h->name, "true", NULL, &p->pid, err, sizeof err) != 0) {
        p->pid = 0;
        p->result = 0;
        snprintf(p->why, sizeof p->why, "%.190s", err);
    }
}

static void local_probe_poll(launcher_t *l, launch_probe_t *p)
{
    (void)l;
    int st;
    pid_t k = waitpid(p->pid, &st, WNOHANG);
    if (k == 0) return;
    p->pid = 0;
    if (k < 0) {
        p->result = 0;
        snprintf(p->why, sizeof p->why, "the remote shell vanished: %s", strerror(errno));
        return;
    }
    p->result = WIFEXITED(st) && WEXITSTATUS(st) == 0;
    if (!p->result) {
        if (WIFEXITED(st))
            snprintf(p->why, sizeof p->why, "the remote shell could not run a command there (exit %d)", WEXITSTATUS(st));
        else snprintf(p->why, sizeof p->why, "the remote shell was killed by signal %d", WTERMSIG(st));
    }
}

static int local_start(launcher_t *l, const launch_req_t *req, launch_handle_t *h, char *err, size_t errlen)
{
    size_t n = 0;
    while (req->argv[n]) n++;
    const char **argv = calloc(n + 16 + LAUNCH_MCA_WORDS, sizeof *argv);
    char np[16], tag[64];
    if (!argv) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    snprintf(np, sizeof np, "%d", req->world);
    snprintf(tag, sizeof tag, "pacer-job-%s", req->id);
    int a = 0;
    argv[a++] = l->mpirun;
    argv[a++] = "--oversubscribe";
    argv[a++] = "--allow-run-as-root";
    /* Open MPI binds a job of 1 or 2 ranks to cores from the first: every job the
     * coordinator starts on a host began at core 0, so concurrent single-rank trials shared
     * one core (measured: two trials both Cpus_allowed_list 0 on 2 cores). The kernel
     * places unbound ranks on idle cores; a user's own policy is kept. */
    if (!getenv("OMPI_MCA_hwloc_base_binding_policy")) {
        argv[a++] = "--bind-to";
        argv[a++] = "none";
    }
    argv[a++] = "-np";
    argv[a++] = np;
    a = launcher_mca_defaults(argv, a, 0);
    char hf[PATH_MAX + 32];
    if (l->kind == LAUNCHER_HOSTFILE) {
        argv[a++] = "--hostfile";
        argv[a++] = l->hostfile;
        if (req->hosts) {
            /* Some hosts only: a hostfile of this attempt's own. */
            int rc = snprintf(hf, sizeof hf, "%s/hostfile", req->dir) >= (int)sizeof hf ? -1 : 0;
            if (rc != 0) snprintf(err, errlen, "job directory path too long");
            else rc = launch_hostfile_write(l, hf, req->hosts, req->nhosts, err, errlen);
            if (rc != 0) {
                free(argv);
                return -1;
            }
            argv[a - 1] = hf;
        }
    }
    if (req->per_host) {
        argv[a++] = "--map-by";
        argv[a++] = "node";
    }
    for (size_t i = 0; i < n; i++) argv[a++] = req->argv[i];
    argv[a] = NULL;
    launcher_log_header(req->log_path, req->id, req->attempt, argv);
    pid_t pid;
    int rc = launch_job(tag, argv, req->log_path, req->exit_code_path, &pid, err, errlen);
    free(argv);
    if (rc != 0) return -1;
    h->pid = pid;
    h->is_child = 1;
    if (proc_stat(pid, &h->pstart, NULL) != 0) h->pstart = 0;
    return 0;
}

/* For a child, waitpid; for an adopted attempt, the exit-code file, then liveness of the
 * recorded pid. */
void launch_local_poll(launcher_t *l, launch_handle_t *h, const char *ecp, const char *log_path, double now,
                       launch_status_t *st)
{
    (void)l, (void)log_path, (void)now;
    int ec;
    st->ended = 1;
    if (h->pid <= 0) {
        st->outcome = SV_LOST;
        return;
    }
    if (h->is_child) {
        /* WNOWAIT: look, do not reap yet (reap does, after the session kill, so that the
         * zombie keeps the session id from being reused meanwhile). */
        siginfo_t si;
        memset(&si, 0, sizeof si);
        if (waitid(P_PID, (id_t)h->pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0) {
            if (si.si_pid != h->pid) {
                st->ended = 0;
                return;
            }
            if (si.si_code == CLD_EXITED) {
                st->outcome = SV_EXITED;
                st->code = si.si_status;
            } else if (exit_code_read(ecp, &ec) == 0) {
                st->outcome = SV_EXITED;
                st->code = ec;
            } else {
                st->outcome = SV_SIGNALLED;
                st->code = si.si_status;
            }
            return;
        }
        h->is_child = 0; /* ECHILD: not ours after all; fall back to polling */
    }
    if (exit_code_read(ecp, &ec) == 0) {
        st->outcome = SV_EXITED;
        st->code = ec;
        return;
    }
    if (proc_alive(h->pid, h->pstart)) {
        st->ended = 0;
        return;
    }
    if (exit_code_read(ecp, &ec) == 0) { /* written just before it exited */
        st->outcome = SV_EXITED;
        st->code = ec;
        return;
    }
    st->outcome = SV_LOST;
}

void launch_local_stop(launcher_t *l, launch_handle_t *h, int hard)
{
    (void)l;
    /* soft: mpirun alone (launch.h says why); the whole session when none runs yet */
    if (hard || session_signal_launchers(h->pid, SIGTERM) == 0) session_signal(h->pid, hard ? SIGKILL : SIGTERM);
}

void launch_local_notice(launcher_t *l, launch_handle_t *h)
{
    /* mpirun alone: it forwards this signal to every rank at once; a SIGTERM would start
     * its teardown, which SIGKILLs the ranks about 2 s later, step boundary or not */
    if (session_signal_launchers(h->pid, NOTICE_FORWARDED_SIGNAL) == 0) launch_local_stop(l, h, 0);
}

void launch_local_reap(launcher_t *l, launch_handle_t *h)
{
    (void)l;
    /* Stragglers (a rank whose mpirun died first) must not outlive the attempt. */
    session_signal(h->pid, SIGKILL);
    if (h->is_child && h->pid > 0) waitpid(h->pid, NULL, 0);
}

const launcher_ops_t LAUNCH_LOCAL_OPS = {
    .name = "local",
    .open = local_open,
    .discover = local_discover,
    .probe_start = local_probe_start,
    .probe_poll = local_probe_poll,
    .start = local_start,
    .poll = launch_local_poll,
    .stop = launch_local_stop,
    .notice = launch_local_notice,
    .reap = launch_local_reap,
    .predicts_placement = 1,
};

/* ---- the drain (launcher.h) ------------------------------------------------------------
 * Here because only the kinds whose attempt is a session on this machine have something
 * to drain: the session itself, and with a hostfile the ranks on the other hosts. */

/* pgrep's pattern for mark, quoted for the remote shell: mark's regex specials escaped,
 * and one plain character in brackets, so that the pattern never matches a command line
 * that holds the pattern itself (the remote shell running pgrep). 0, or -1 when it does
 * not fit. */
static int drain_pattern(const char *mark, char *out, size_t len)
{
    size_t o = 0;
    int bracketed = 0;
    if (len < 3) return -1;
    out[o++] = '\'';
    for (const char *p = mark; *p; p++) {
        char word[8];
        int plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '/';
        if (plain && !bracketed) {
            snprintf(word, sizeof word, "[%c]", *p);
            bracketed = 1;
        } else if (*p == '\'') {
            snprintf(word, sizeof word, "'\\''");
        } else if (strchr("\\.[](){}*+?|^$", *p)) {
            snprintf(word, sizeof word, "\\%c", *p);
        } else {
            snprintf(word, sizeof word, "%c", *p);
        }
        size_t k = strlen(word);
        if (o + k + 2 > len) return -1;
        memcpy(out + o, word, k);
        o += k;
    }
    out[o++] = '\'';
    out[o] = 0;
    return bracketed ? 0 : -1;
}

int launcher_drain_start(launcher_t *l, launch_handle_t *h, const char *id, const char *const *hosts, int nhosts,
                         const char *mark, double grace_s, double now, launch_drain_t *d)
{
    memset(d, 0, sizeof *d);
    snprintf(d->id, sizeof d->id, "%s", id);
    d->active = 1;
    d->kill_at = now + grace_s;
    d->give_up_at = now + 2 * grace_s;
    /* What is left here is killed at once, as launcher_reap always did. */
    if (l->kind != LAUNCHER_SLURM) session_signal(h->pid, SIGKILL);
    if (l->kind != LAUNCHER_HOSTFILE) return 0;
    if (drain_pattern(mark, d->pattern, sizeof d->pattern) != 0) {
        clog_printf("job %s: cannot tell its ranks on other hosts apart (%.200s): not waiting for them", id, mark);
        return 0;
    }
    int n = hosts && nhosts > 0 ? nhosts : l->nhosts;
    d->hosts = calloc((size_t)(n > 0 ? n : 1), sizeof *d->hosts);
    if (!d->hosts) {
        clog_printf("job %s: out of memory: not waiting for its ranks on other hosts", id);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        const char *name = hosts && nhosts > 0 ? hosts[i] : l->hosts[i].name;
        if (this_machine(l, name)) continue;
        snprintf(d->hosts[d->nhosts++].name, sizeof d->hosts[0].name, "%s", name);
    }
    return 0;
}

/* One host's remote shell has ended (st its wait status): what it says. */
static void drain_answer(launch_drain_t *d, launch_drain_host_t *x, int st)
{
    int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    int was_kill = x->killing;
    x->pid = 0;
    x->killing = 0;
    if (was_kill) return; /* the next check says whether it worked */
    if (code == 1) {
        x->done = 1; /* pgrep found no process of the attempt */
    } else if (code != 0) {
        x->done = 1;
        clog_printf("job %s: cannot check for its ranks on %s (the remote shell's `pgrep` exited %d): not waiting "
                    "for them there (the checkpoint fence refuses what they would write)",
                    d->id, x->name, code);
    }
}

static void drain_spawn(launch_drain_t *d, launch_drain_host_t *x, int kill)
{
    char err[256];
    if (rsh_spawn(x->name, kill ? "pkill -KILL -f" : "pgrep -f", d->pattern, &x->pid, err, sizeof err) != 0) {
        x->pid = 0;
        x->done = 1;
        clog_printf("job %s: cannot check for its ranks on %s: %s", d->id, x->name, err);
        return;
    }
    x->killing = kill;
}

int launcher_drain_poll(launcher_t *l, launch_handle_t *h, launch_drain_t *d, double now)
{
    if (!d->active) return 1;
    int left = 0, here = l->kind != LAUNCHER_SLURM && session_alive(h->pid);
    for (int i = 0; i < d->nhosts; i++) {
        launch_drain_host_t *x = &d->hosts[i];
        int st;
        if (x->pid > 0 && waitpid(x->pid, &st, WNOHANG) == x->pid) drain_answer(d, x, st);
        left += !x->done;
    }
    if (!left && !here) {
        launcher_drain_cancel(l, d);
        return 1;
    }
    if (now >= d->give_up_at) {
        char names[512] = "";
        size_t used = 0;
        for (int i = 0; i < d->nhosts; i++) {
            int k = d->hosts[i].done ? 0 : snprintf(names + used, sizeof names - used, " %s", d->hosts[i].name);
            if (k > 0 && (size_t)k < sizeof names - used) used += (size_t)k;
        }
        clog_printf("job %s: ranks of the attempt still there after the kill%s%s: going on without them (the "
                    "checkpoint fence refuses what they would write)",
                    d->id, names[0] ? " on" : " on this machine", names);
        launcher_drain_cancel(l, d);
        return 1;
    }
    int kill = now >= d->kill_at && !d->killed;
    if (kill) {
        d->killed = 1;
        if (here) session_signal(h->pid, SIGKILL);
    }
    if (!kill && now < d->next_round) return 0;
    d->next_round = now + LAUNCH_DRAIN_PERIOD_S;
    for (int i = 0; i < d->nhosts; i++) {
        launch_drain_host_t *x = &d->hosts[i];
        if (x->done) continue;
        if (kill) {
            if (x->pid > 0) {
                session_signal(x->pid, SIGKILL);
                waitpid(x->pid, NULL, 0);
                x->pid = 0;
            }
            clog_printf("job %s: a rank of the attempt is still running on %s after mpirun ended: killing it "
                        "through the remote shell",
                        d->id, x->name);
            drain_spawn(d, x, 1);
        } else if (x->pid == 0) {
            drain_spawn(d, x, 0);
        }
    }
    return 0;
}

void launcher_drain_cancel(launcher_t *l, launch_drain_t *d)
{
    (void)l;
    for (int i = 0; i < d->nhosts; i++) {
        launch_drain_host_t *x = &d->hosts[i];
        if (x->pid <= 0) continue;
        session_signal(x->pid, SIGKILL);
        waitpid(x->pid, NULL, 0);
        x->pid = 0;
    }
    free(d->hosts);
    d->hosts = NULL;
    d->nhosts = 0;
    d->active = 0;
}
