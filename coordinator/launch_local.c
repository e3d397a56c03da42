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
    (void)cfg;
    if (l->kind == LAUNCHER_HOSTFILE) return launch_hostfile_parse(l, l->hostfile, err, errlen);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    l->nhosts = 1;
    snprintf(l->hosts[0].name, sizeof l->hosts[0].name, "%s", l->hostname);
    l->hosts[0].slots = n > 0 ? (int)n : 1;
    l->slots = l->hosts[0].slots;
    return 0;
}

static int local_start(launcher_t *l, const launch_req_t *req, launch_handle_t *h, char *err, size_t errlen)
{
    size_t n = 0;
    while (req->argv[n]) n++;
    const char **argv = calloc(n + 16, sizeof *argv);
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
    if (l->kind == LAUNCHER_HOSTFILE) {
        argv[a++] = "--hostfile";
        argv[a++] = l->hostfile;
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
        h->is_child = 0;   /* ECHILD: not ours after all; fall back to polling */
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
    if (exit_code_read(ecp, &ec) == 0) {   /* written just before it exited */
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
    .start = local_start,
    .poll = launch_local_poll,
    .stop = launch_local_stop,
    .reap = launch_local_reap,
    .predicts_placement = 1,
};
