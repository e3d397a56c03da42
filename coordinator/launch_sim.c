/* coordinator/launch_sim.c - the sim launcher: a job whose spec says simulate.enabled runs
 * as build/pacer-sim on this machine, under the shell wrapper of launch.h in a session of
 * its own, like the local launcher's mpirun. pacer-sim writes the simulated platform,
 * runs the SMPI build of pacer-worker under smpirun (every rank inside one process) and
 * exits with the worker's status; SIGTERM to the session stops the simulation. The
 * worker's options (--resume, --redis, --job) go to every simulated rank after "--", so
 * its metrics, heartbeats (real time: the Redis sink's thread is not simulated) and
 * summary reach the coordinator as a real job's do. Polling, stopping and reaping are the
 * local launcher's.
 *
 * Its one host is this machine, so the elastic side of the interface is trivial: a reload
 * learns the same host again, a probe answers "up" at once, and the host is always
 * schedulable. The coordinator keeps simulated jobs out of its host table anyway (run.c):
 * their hosts are simulated, and a simulation is never resized. */
#include "launcher_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "launch.h"

static int sim_open(launcher_t *l, const launcher_config_t *cfg, char *err, size_t errlen)
{
    if (!cfg->sim || !*cfg->sim || snprintf(l->sim, sizeof l->sim, "%s", cfg->sim) >= (int)sizeof l->sim) {
        snprintf(err, errlen, "no pacer-sim path");
        return -1;
    }
    if (access(l->sim, X_OK) != 0) {
        snprintf(err, errlen, "%.300s: %s (make builds it; simulations also need make smpi and libsimgrid-dev)", l->sim,
                 strerror(errno));
        return -1;
    }
    l->sim_slots = cfg->sim_slots > 0 ? cfg->sim_slots : 1;
    return 0;
}

/* One "host", this machine; a simulation is one process whatever its simulated size. */
static int sim_discover(launcher_t *l, launch_host_t *hosts, int *n, int *slots, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    memset(&hosts[0], 0, sizeof hosts[0]);
    snprintf(hosts[0].name, sizeof hosts[0].name, "%s", l->hostname);
    snprintf(hosts[0].addr, sizeof hosts[0].addr, "%s", l->hostname);
    hosts[0].slots = l->sim_slots;
    *n = 1;
    *slots = hosts[0].slots;
    return 0;
}

/* This machine runs pacer-sim whenever the coordinator runs. */
static void sim_probe_start(launcher_t *l, const launch_host_t *h, double now, launch_probe_t *p)
{
    (void)l, (void)h, (void)now;
    p->result = 1;
}

static void sim_probe_poll(launcher_t *l, launch_probe_t *p) { (void)l, (void)p; /* answered at the start */ }

/* req->argv is pacer-worker's command: its --spec, --summary and --models-dir become
 * pacer-sim's own (pacer-sim reads the spec, an uploaded model's included, and passes
 * --models-dir on), the rest goes to every simulated rank. */
static int sim_own_option(const char *arg)
{
    return strcmp(arg, "--spec") == 0 || strcmp(arg, "--summary") == 0 || strcmp(arg, "--models-dir") == 0;
}

static int sim_start(launcher_t *l, const launch_req_t *req, launch_handle_t *h, char *err, size_t errlen)
{
    size_t n = 0;
    while (req->argv[n]) n++;
    const char **argv = calloc(n + 8, sizeof *argv);
    char tag[64];
    if (!argv) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int a = 0;
    argv[a++] = l->sim;
    for (size_t i = 1; i + 1 < n; i++) {
        if (sim_own_option(req->argv[i])) {
            argv[a++] = req->argv[i];
            argv[a++] = req->argv[i + 1];
            i++;
        }
    }
    argv[a++] = "--";
    for (size_t i = 1; i < n; i++) {
        if (sim_own_option(req->argv[i])) {
            i++;
            continue;
        }
        argv[a++] = req->argv[i];
    }
    argv[a] = NULL;
    snprintf(tag, sizeof tag, "pacer-job-%s", req->id);
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

const launcher_ops_t LAUNCH_SIM_OPS = {
    .name = "sim",
    .open = sim_open,
    .discover = sim_discover,
    .probe_start = sim_probe_start,
    .probe_poll = sim_probe_poll,
    .schedulable = NULL, /* always (launcher_host_schedulable) */
    .start = sim_start,
    .poll = launch_local_poll,
    .stop = launch_local_stop,
    .reap = launch_local_reap,
    .predicts_placement = 0, /* ranks land on simulated hosts, not on this launcher's */
};
