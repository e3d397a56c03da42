/* coordinator/launch_local.c - the local and hostfile launchers: mpirun under the shell
 * wrapper of launch.h, in a session of its own on this machine. They differ only in
 * their hosts (this machine, or a hostfile's, passed to mpirun with --hostfile). The
 * session is the job: every process mpirun starts here belongs to it (remote ranks are
 * mpirun's to stop: it kills them when it gets SIGTERM). */
#include "launcher_impl.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "launch.h"

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

static void local_probe_start(launcher_t *l, const launch_host_t *h, double now, launch_probe_t *p)
{
    (void)now;
    /* This machine (the local launcher's only host, or a hostfile's localhost): mpirun
     * starts ranks here without a remote shell. */
    if (l->kind == LAUNCHER_LOCAL || strcmp(h->name, "localhost") == 0 || strcmp(h->name, "127.0.0.1") == 0 ||
        strcmp(h->name, l->hostname) == 0) {
        p->result = 1;
        return;
    }
    char buf[1024], err[256];
    const char *argv[40];
    int n = rsh_agent(buf, sizeof buf, argv, 40);
    argv[n++] = h->name;
    argv[n++] = "true";
    argv[n] = NULL;
    if (launch_spawn(argv, NULL, &p->pid, err, sizeof err) != 0) {
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
    session_signal(h->pid, hard ? SIGKILL : SIGTERM);
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
    .reap = launch_local_reap,
    .predicts_placement = 1,
};
