/* coordinator/launcher.c - see launcher.h: picks the kind, dispatches, and keeps the handle
 * file and the by-slot placement guess. What the kinds call back for (the log's lines, the
 * MCA defaults, a host by name) is launcher_impl.c's, so that no kind calls up into here. */
#include "launcher.h"
#include "launcher_impl.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "clog.h"
#include "fs.h"
#include "launch.h"

static const struct {
    const char *name;
    launcher_kind_t kind;
    const launcher_ops_t *ops;
} KINDS[] = {
    {"local", LAUNCHER_LOCAL, &LAUNCH_LOCAL_OPS},
    {"hostfile", LAUNCHER_HOSTFILE, &LAUNCH_LOCAL_OPS},
    {"slurm", LAUNCHER_SLURM, &LAUNCH_SLURM_OPS},
    {"sim", LAUNCHER_SIM, &LAUNCH_SIM_OPS},
};
#define NKINDS (sizeof KINDS / sizeof KINDS[0])

int launcher_open(const launcher_config_t *cfg, launcher_t **out, char *err, size_t errlen)
{
    const char *kind = cfg->kind && *cfg->kind ? cfg->kind : cfg->hostfile && *cfg->hostfile ? "hostfile" : "local";
    size_t k = 0;
    while (k < NKINDS && strcmp(KINDS[k].name, kind) != 0) k++;
    if (k == NKINDS) {
        snprintf(err, errlen, "--launcher %.64s: unknown (local, hostfile or slurm)", kind);
        return -1;
    }
    if (KINDS[k].kind == LAUNCHER_HOSTFILE && !(cfg->hostfile && *cfg->hostfile)) {
        snprintf(err, errlen, "--launcher hostfile needs --hostfile FILE");
        return -1;
    }
    if (KINDS[k].kind != LAUNCHER_HOSTFILE && cfg->hostfile && *cfg->hostfile) {
        snprintf(err, errlen, "--hostfile is for --launcher hostfile, not %s", kind);
        return -1;
    }
    launcher_t *l = calloc(1, sizeof *l);
    if (!l) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    l->kind = KINDS[k].kind;
    l->ops = KINDS[k].ops;
    snprintf(l->hostname, sizeof l->hostname, "%s", cfg->hostname && *cfg->hostname ? cfg->hostname : "localhost");
    snprintf(l->mpirun, sizeof l->mpirun, "%s", cfg->mpirun && *cfg->mpirun ? cfg->mpirun : "mpirun");
    if (cfg->hostfile && snprintf(l->hostfile, sizeof l->hostfile, "%s", cfg->hostfile) >= (int)sizeof l->hostfile) {
        snprintf(err, errlen, "--hostfile: path too long");
        free(l);
        return -1;
    }
    if (l->ops->open(l, cfg, err, errlen) != 0 ||
        l->ops->discover(l, l->hosts, &l->nhosts, &l->slots, err, errlen) != 0) {
        free(l);
        return -1;
    }
    *out = l;
    return 0;
}

int launcher_reload(launcher_t *l, char *err, size_t errlen)
{
    launch_host_t *hosts = calloc(LAUNCH_MAX_HOSTS, sizeof *hosts);
    int n = 0, slots = 0;
    if (!hosts) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc = l->ops->discover(l, hosts, &n, &slots, err, errlen);
    if (rc == 0) {
        memcpy(l->hosts, hosts, (size_t)n * sizeof *hosts);
        l->nhosts = n;
        l->slots = slots;
    }
    free(hosts);
    return rc;
}

void launcher_probe_start(launcher_t *l, const char *host, double now, launch_probe_t *p)
{
    memset(p, 0, sizeof *p);
    p->fd = -1;
    p->result = -1;
    p->deadline = now + LAUNCH_PROBE_TIMEOUT_S;
    const launch_host_t *h = launcher_host(l, host);
    if (!h) {
        p->result = 0;
        snprintf(p->why, sizeof p->why, "not in the launcher's host list");
        return;
    }
    l->ops->probe_start(l, h, now, p);
}

int launcher_probe_poll(launcher_t *l, launch_probe_t *p, double now)
{
    if (p->result >= 0) return p->result;
    l->ops->probe_poll(l, p);
    if (p->result < 0 && now >= p->deadline) {
        launcher_probe_cancel(l, p);
        p->result = 0;
        snprintf(p->why, sizeof p->why, "no answer within %.0f s", LAUNCH_PROBE_TIMEOUT_S);
    }
    return p->result;
}

void launcher_probe_cancel(launcher_t *l, launch_probe_t *p)
{
    (void)l;
    if (p->pid > 0) {
        session_signal(p->pid, SIGKILL);
        waitpid(p->pid, NULL, 0);
        p->pid = 0;
    }
    if (p->fd >= 0) {
        close(p->fd);
        p->fd = -1;
    }
}

int launcher_host_schedulable(launcher_t *l, const char *host)
{
    return l->ops->schedulable ? l->ops->schedulable(l, host) : 1;
}

void launcher_close(launcher_t *l) { free(l); }

launcher_kind_t launcher_kind(const launcher_t *l) { return l->kind; }

const char *launcher_name(const launcher_t *l)
{
    for (size_t k = 0; k < NKINDS; k++)
        if (KINDS[k].kind == l->kind) return KINDS[k].name;
    return "?";
}

int launcher_hosts(const launcher_t *l, const launch_host_t **hosts)
{
    *hosts = l->hosts;
    return l->nhosts;
}

int launcher_slots(const launcher_t *l) { return l->slots; }

int launcher_rank_hosts(const launcher_t *l, int world, const char *const *names, int nnames, const char **out)
{
    if (!l->ops->predicts_placement || l->nhosts == 0) return -1;
    /* The hosts in hostfile order (an attempt's own hostfile keeps that order). */
    const launch_host_t *use[LAUNCH_MAX_HOSTS];
    int n = 0;
    for (int i = 0; i < l->nhosts; i++) {
        int keep = !names;
        for (int k = 0; names && k < nnames; k++) keep |= strcmp(names[k], l->hosts[i].name) == 0;
        if (keep) use[n++] = &l->hosts[i];
    }
    if (n == 0) return -1;
    int h = 0, used = 0;
    for (int r = 0; r < world; r++) {
        while (use[h]->slots > 0 && used >= use[h]->slots) {
            h = (h + 1) % n;
            used = 0;
        }
        const char *name = use[h]->name;
        /* A hostfile may say localhost; the rank reports this machine's name. */
        if (strcmp(name, "localhost") == 0 || strcmp(name, "127.0.0.1") == 0) name = l->hostname;
        out[r] = name;
        used++;
    }
    return 0;
}

int launcher_start(launcher_t *l, const launch_req_t *req, launch_handle_t *h, char *err, size_t errlen)
{
    memset(h, 0, sizeof *h);
    if (l->ops->start(l, req, h, err, errlen) != 0) {
        memset(h, 0, sizeof *h);
        return -1;
    }
    /* The local record comes first: Redis may be down, and a coordinator restarted after
     * a crash must find the newest attempt, not an older one. A failure is logged, not
     * fatal: the attempt runs (a restarted coordinator would not find it). */
    char line[64];
    int n = l->kind == LAUNCHER_SLURM ? snprintf(line, sizeof line, "slurm %ld\n", h->slurm_job)
                                      : snprintf(line, sizeof line, "%d %llu\n", (int)h->pid, h->pstart);
    if (req->handle_path && fs_atomic_write_fixed(req->handle_path, line, (size_t)n, 0644) != 0)
        clog_printf("job %s: cannot write %s: %s", req->id, req->handle_path, strerror(errno));
    return 0;
}

void launcher_poll(launcher_t *l, launch_handle_t *h, const char *exit_code_path, const char *log_path, double now,
                   launch_status_t *st)
{
    memset(st, 0, sizeof *st);
    l->ops->poll(l, h, exit_code_path, log_path, now, st);
}

void launcher_stop(launcher_t *l, launch_handle_t *h, int hard) { l->ops->stop(l, h, hard); }

void launcher_notice(launcher_t *l, launch_handle_t *h)
{
    if (l->ops->notice) l->ops->notice(l, h);
    else l->ops->stop(l, h, 0);
}

int launcher_rm_drains(launcher_t *l, launch_rm_drain_t *out, int max)
{
    return l->ops->rm_drains ? l->ops->rm_drains(l, out, max) : 0;
}

int launcher_has_rm_drains(const launcher_t *l) { return l->ops->rm_drains != NULL; }

int launcher_has_notice(const launcher_t *l)
{
    return l->ops->notice != NULL && (l->kind != LAUNCHER_SLURM || l->slurm_pmix);
}

void launcher_reap(launcher_t *l, launch_handle_t *h)
{
    l->ops->reap(l, h);
    memset(h, 0, sizeof *h);
}

int launcher_adopt(launcher_t *l, const char *handle_path, launch_handle_t *h, char *what, size_t whatlen)
{
    memset(h, 0, sizeof *h);
    if (whatlen) what[0] = 0;
    FILE *f = fopen(handle_path, "r");
    if (!f) {
        snprintf(what, whatlen, "no record of its processes (%s: %s)", handle_path, strerror(errno));
        return 0;
    }
    char line[128] = "";
    if (!fgets(line, sizeof line, f)) line[0] = 0;
    fclose(f);
    long job = 0;
    int pid = 0;
    unsigned long long ps = 0;
    if (sscanf(line, "slurm %ld", &job) == 1 && job > 0) {
        if (l->kind != LAUNCHER_SLURM) {
            snprintf(what, whatlen, "it was started as Slurm job %ld, and this coordinator runs --launcher %s", job,
                     launcher_name(l));
            return 0;
        }
        h->slurm_job = job;
        return 1;
    }
    if (sscanf(line, "%d %llu", &pid, &ps) == 2 && pid > 0) {
        if (l->kind == LAUNCHER_SLURM) {
            snprintf(what, whatlen, "it was started by mpirun (session %d), and this coordinator runs --launcher slurm",
                     pid);
            return 0;
        }
        h->pid = pid;
        h->pstart = ps;
        return 1;
    }
    snprintf(what, whatlen, "%s does not name a process or a Slurm job", handle_path);
    return 0;
}

const char *launcher_describe(const launch_handle_t *h, char *buf, size_t len)
{
    if (h->slurm_job > 0) snprintf(buf, len, "Slurm job %ld", h->slurm_job);
    else snprintf(buf, len, "session %d", (int)h->pid);
    return buf;
}
