/* coordinator/run_launch.c - see run_launch.h. */
#include "run_launch.h"

#include "coord_internal.h"
#include "hostmem.h"
#include "jobstore.h"
#include "preflight.h"
#include "run.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clog.h"
#include "ckptdir.h"
#include "dataroots.h"
#include "dynbatch.h"
#include "fs.h"
#include "hosts.h"
#include "launcher.h"
#include "modelstore.h"
#include "policy.h"
#include "record_fields.h"
#include "simjob.h"
#include "stall.h"
#include "supervise.h"
#include "tickconn.h"
#include "run_elastic.h"

/* The worker's argv: a bounded table, each option added with an explicit check (a full
 * table is an error that names it, never a write past the end). */
#define LAUNCH_ARGV_MAX (32 + 2 * COORD_DATA_ROOTS_MAX)
typedef struct {
    const char *v[LAUNCH_ARGV_MAX + 1]; /* NULL-terminated */
    int n, full;
} launch_argv_t;

/* Appends opt and, unless NULL, its value. */
static void argv_add(launch_argv_t *av, const char *opt, const char *value)
{
    int need = value ? 2 : 1;
    if (av->n + need > LAUNCH_ARGV_MAX) {
        av->full = 1;
        return;
    }
    av->v[av->n++] = opt;
    if (value) av->v[av->n++] = value;
    av->v[av->n] = NULL;
}

/* One attempt's launch: the paths, the rewritten spec, the hosts and world, the argv and
 * the buffers its option values live in; launch_free releases what it owns. */
typedef struct {
    char dir[RUN_JPATH], ckdir[RUN_JPATH], specp[RUN_JPATH], summary[RUN_JPATH];
    char log[RUN_JPATH], ecp[RUN_JPATH], pidp[RUN_JPATH], onnx[RUN_JPATH], st[RUN_JPATH], adopt[RUN_JPATH];
    char err[512];
    long long fence;
    job_spec_t *sp;
    char *text;
    const char **names, **rank_host;
    int world, nn, placed;
    int reordered; /* names are not in the launcher's order (shard_host_order) */
    launch_argv_t argv;
    char before[24], scale[32], wtext[16], ftext[24], models_dir[PATH_MAX + 16];
} launch_t;

static void launch_free(launch_t *L)
{
    free(L->sp);
    free(L->text);
    free(L->names);
    free(L->rank_host);
}

/* What a launch phase returns. */
enum { LAUNCH_GO_ON = 0, LAUNCH_FAIL = -1, LAUNCH_WAIT = 1 /* no host: backing off */ };

static int launch_paths(coordinator_t *c, coord_run_t *r, launch_t *L, double now)
{
    (void)now;
    coord_job_path(c, r->id, NULL, L->dir, sizeof L->dir);
    coord_job_path(c, r->id, "checkpoints", L->ckdir, sizeof L->ckdir);
    coord_job_path(c, r->id, "spec.json", L->specp, sizeof L->specp);
    coord_job_path(c, r->id, "summary.json", L->summary, sizeof L->summary);
    coord_job_path(c, r->id, "log", L->log, sizeof L->log);
    coord_job_path(c, r->id, "exit_code", L->ecp, sizeof L->ecp);
    coord_job_path(c, r->id, "pid", L->pidp, sizeof L->pidp);
    if (r->first_launch && !r->requeued && move_aside(c, r, L->dir, L->err, sizeof L->err) != 0) return LAUNCH_FAIL;
    if (fs_mkdir_p(L->ckdir, 0755) != 0) {
        snprintf(L->err, sizeof L->err, "%.300s: %s", L->ckdir, strerror(errno));
        return LAUNCH_FAIL;
    }
    /* The checkpoint fence generation this attempt runs under (raised past it when it is
     * over: attempt_drained). */
    if (c->worker_caps.fence && !r->simulated &&
        ckptdir_fence_read(L->ckdir, r->spec->name, &L->fence, L->err, sizeof L->err) != 0)
        return LAUNCH_FAIL;
    return LAUNCH_GO_ON;
}

/* The spec the worker reads: checkpoints where the coordinator can find them, often
 * enough to resume. */
static int launch_spec(coordinator_t *c, coord_run_t *r, launch_t *L, double now)
{
    (void)now;
    job_spec_t *sp = L->sp = malloc(sizeof *sp);
    if (!sp) {
        snprintf(L->err, sizeof L->err, "out of memory");
        return LAUNCH_FAIL;
    }
    *sp = *r->spec;
    if (strlen(L->ckdir) >= sizeof sp->checkpoint.dir) {
        snprintf(L->err, sizeof L->err, "checkpoint.dir: %.300s is longer than %zu bytes", L->ckdir,
                 sizeof sp->checkpoint.dir - 1);
        return LAUNCH_FAIL;
    }
    memcpy(sp->checkpoint.dir, L->ckdir, strlen(L->ckdir) + 1);
    if (sp->checkpoint.every_steps <= 0) sp->checkpoint.every_steps = c->cfg.default_checkpoint_steps;
    /* pacer-sim reads platform files on this machine: only from the platform directory,
     * checked again here (the submission was checked against the configuration of the
     * coordinator that took it), and given by real path. */
    if (r->simulated && simjob_resolve(c->sim_platforms, sp, L->err, sizeof L->err) != 0) return LAUNCH_FAIL;
    L->text = spec_to_json(sp);
    if (!L->text || fs_atomic_write_fixed(L->specp, L->text, strlen(L->text), 0644) != 0) {
        snprintf(L->err, sizeof L->err, "%.300s: cannot write the spec: %s", L->specp,
                 L->text ? strerror(errno) : "out of memory");
        return LAUNCH_FAIL;
    }
    /* A stale exit status, or summary, from the previous attempt must not be read as this
     * one's (attempt_over takes an exit 0 with no summary for a run that did not finish). */
    unlink(L->ecp);
    unlink(L->summary);
    return LAUNCH_GO_ON;
}

/* A sharded job with a list of weights on the hostfile launcher: its hosts in the order
 * that puts the large shares on the hosts with the memory for them (hostmem_order, the
 * order memory admission counted on: api.c), written into the attempt's hostfile, which
 * Open MPI fills slot by slot from rank 0. The launcher's order when that holds or a
 * host's memory is not known. */
static void shard_host_order(coordinator_t *c, coord_run_t *r, launch_t *L)
{
    const int n = L->nn;
    if (launcher_kind(c->launcher) != LAUNCHER_HOSTFILE || r->spec->algorithm.shard.stage <= 0 || n < 2) return;
    hostmem_host_t *h = calloc((size_t)n, sizeof *h);
    int *order = calloc((size_t)n, sizeof *order);
    const char **was = calloc((size_t)n, sizeof *was);
    if (h && order && was) {
        pthread_mutex_lock(&c->lock);
        for (int i = 0; i < n; i++)
            for (int k = 0; k < c->hosts->nadmit; k++)
                if (strcmp(c->hosts->admit[k].name, L->names[i]) == 0) h[i] = c->hosts->admit[k];
        pthread_mutex_unlock(&c->lock);
        if (hostmem_order(r->spec, L->world, h, n, order) == 2) {
            char text[512] = "";
            memcpy(was, L->names, (size_t)n * sizeof *was);
            for (int i = 0; i < n; i++) {
                L->names[i] = was[order[i]];
                size_t used = strlen(text);
                snprintf(text + used, sizeof text - used, "%s%s", i ? " " : "", L->names[i]);
            }
            L->reordered = 1;
            clog_printf("job %s: hosts in the order %s, so that its larger shards are on the hosts with the memory "
                        "for them",
                        r->id, text);
        }
    }
    free(h);
    free(order);
    free(was);
}

/* The hosts this attempt may use, and the world that fits them (elastic). A simulation
 * runs on simulated hosts, all inside one process here: the host table (the real
 * launcher's hosts) does not apply to it, and it runs the spec's world. */
static int launch_place(coordinator_t *c, coord_run_t *r, launch_t *L, double now)
{
    L->world = r->full_world;
    if (r->simulated) return LAUNCH_GO_ON;
    L->names = calloc((size_t)c->hosts->n + 1, sizeof *L->names);
    if (!L->names) {
        snprintf(L->err, sizeof L->err, "out of memory");
        return LAUNCH_FAIL;
    }
    int usable_slots = 0, kept_all = 0;
    L->nn = run_usable(c->hosts, r, L->names, &usable_slots, &kept_all);
    if (kept_all) clog_printf("job %s: no usable host but those it left out for going silent: using them again", r->id);
    if (L->nn == 0) {
        /* Nowhere to run: wait for a host to come back (the probes run meanwhile). */
        r->phase = PH_BACKOFF;
        r->next_launch = now + c->cfg.host_probe_s;
        r->hplan = 0; /* it holds nothing while it waits: the policy's change is over */
        if (r->state != JOB_RESTARTING || !strstr(r->reason, "waiting for a host")) {
            char down[512];
            unusable_hosts(c->hosts, down, sizeof down);
            char why[sizeof r->reason];
            snprintf(why, sizeof why, "waiting for a host: none is usable (%s)", down);
            clog_printf("job %s: %s", r->id, why);
            run_set_state(c, r, JOB_RESTARTING, why);
        }
        return LAUNCH_WAIT;
    }
    int all_slots = c->hosts->slots_total;
    int placed_n = r->nplace > 0 ? placed_only(c->hosts, r, L->names, L->nn, &usable_slots, &all_slots) : 0;
    if (placed_n > 0) L->nn = placed_n;
    else if (r->nplace > 0) clog_printf("job %s: none of the hosts it was placed on is usable: any usable host", r->id);
    L->world = hosts_elastic_world(r->full_world, r->min_world, all_slots, usable_slots);
    if (r->world_cap > 0 && L->world > r->world_cap) L->world = r->world_cap;
    /* grown past its ask: one rank per lent slot that is still usable, at most the grow */
    if (r->world_grow > r->full_world && usable_slots > r->full_world)
        L->world = usable_slots < r->world_grow ? usable_slots : r->world_grow;
    shard_host_order(c, r, L);
    if (run_set_hosts(r, L->names, L->nn) != 0) {
        snprintf(L->err, sizeof L->err, "out of memory");
        return LAUNCH_FAIL;
    }
    L->rank_host = calloc((size_t)L->world, sizeof *L->rank_host);
    L->placed = L->rank_host &&
                launcher_rank_hosts(c->launcher, L->world, L->nn == c->hosts->n && !L->reordered ? NULL : L->names,
                                    L->nn, L->rank_host) == 0;
    return LAUNCH_GO_ON;
}

/* A world other than the last attempt's is a resize (recorded, with its reason); then
 * dynamic batches: re-planned for the new world, or the first plan from stored profiles. */
static int launch_world(coordinator_t *c, coord_run_t *r, launch_t *L, double now)
{
    int world = L->world;
    int from = r->first_launch ? r->full_world : r->world;
    if (world != from || r->hplan) {
        char reason[sizeof r->resize_reason + 600], down[512];
        unusable_hosts(c->hosts, down, sizeof down);
        if (r->resize_reason[0]) snprintf(reason, sizeof reason, "%s", r->resize_reason);
        else snprintf(reason, sizeof reason, "%s", world < from ? "fewer slots are usable" : "more slots are usable");
        if (down[0] && world < r->full_world)
            snprintf(reason + strlen(reason), sizeof reason - strlen(reason), "; not usable: %s", down);
        r->world = world;
        record_resize(c, r, from, world, reason, now);
        if (world < from) drop_rank_keys(c, r, from, world);
        if (!r->first_launch && r->spec->algorithm.dynamic_batch && c->worker_caps.redis && c->conn->rc) {
            int k = dynbatch_resize(c->conn->rc, r->id, r->spec, workers_of(r, world), L->placed ? L->rank_host : NULL);
            if (k == JS_EREDIS) tickconn_broken(c, "resize plan");
        }
    }
    r->world = world;
    r->resize_reason[0] = 0;
    r->grow_armed = 0;
    r->launch_progress = r->progress_step;
    r->shrinking = 0;
    r->hplan = 0;

    /* Only where placement is known before the start (not under Slurm). Simulated ranks
     * (never placed) plan their own batches: the coordinator's plans arrive in real time,
     * which would make a deterministic simulation depend on this machine's load. */
    if (r->first_launch && r->spec->algorithm.dynamic_batch && c->worker_caps.redis && c->conn->rc && L->placed) {
        int k = dynbatch_initial(c->conn->rc, r->id, r->spec, workers_of(r, world), L->rank_host);
        if (k == JS_EREDIS) tickconn_broken(c, "initial plan");
        else if (k == 1) clog_printf("job %s: initial batch plan from stored profiles", r->id);
    }
    r->first_launch = 0;
    return LAUNCH_GO_ON;
}

/* A PBT trial's job that continues from a better trial (coordinator/experiment.c): its
 * hash's "adopt_from" names the trial's previous job, whose exploit.ckpt the experiment
 * linked from that trial's checkpoint; the worker takes it while the job has no
 * checkpoint of its own. The path is derived from the id, never read from Redis. */
static void launch_adopt(coordinator_t *c, coord_run_t *r, launch_t *L)
{
    if (!c->worker_caps.adopt || r->simulated || !c->conn->rc) return;
    redisReply *x = redisCommand(c->conn->rc, "HGET " KEY_JOB " adopt_from", r->id);
    const char *from = x ? reply_str(x) : NULL;
    struct stat st;
    if (from && job_id_valid(from) && coord_job_path(c, from, "exploit.ckpt", L->adopt, sizeof L->adopt) == 0 &&
        stat(L->adopt, &st) == 0)
        argv_add(&L->argv, "--adopt-checkpoint", L->adopt);
    if (x) freeReplyObject(x);
    else tickconn_broken(c, "adopt");
}

/* The worker's command; the launcher wraps it (mpirun, sbatch). */
static int launch_argv(coordinator_t *c, coord_run_t *r, launch_t *L, double now)
{
    (void)now;
    launch_argv_t *av = &L->argv;
    argv_add(av, c->worker, NULL);
    argv_add(av, "--spec", L->specp);
    argv_add(av, "--summary", L->summary);
    /* After a collapse: the checkpoint from before it (the worker saves it again as the
     * latest), and the halved learning rate from then on (run.h). */
    if (r->resume_before > 0 && c->worker_caps.collapse) {
        snprintf(L->before, sizeof L->before, "%ld", r->resume_before);
        argv_add(av, "--resume-before", L->before);
    } else {
        argv_add(av, "--resume", NULL);
    }
    launch_adopt(c, r, L);
    if (r->lr_scale < 1.0 && c->worker_caps.collapse) {
        snprintf(L->scale, sizeof L->scale, "%.17g", r->lr_scale);
        argv_add(av, "--lr-scale", L->scale);
    }
    if (c->worker_caps.world) {
        /* A rank that finds itself in another world (alone, when the launch did not
         * connect the ranks) stops instead of training on its own; fewer ranks than the
         * spec asks (an elastic restart) share its global batch. */
        snprintf(L->wtext, sizeof L->wtext, "%d", r->world);
        argv_add(av, "--world", L->wtext);
    }
    if (c->worker_caps.fence && !r->simulated) {
        snprintf(L->ftext, sizeof L->ftext, "%lld", L->fence);
        argv_add(av, "--fence", L->ftext);
    }
    /* An uploaded model: the worker reads its bytes from the state directory's models/
     * when it can, else from Redis (worker/modelfetch.h). */
    if (r->spec->model_sha256[0]) {
        modelstore_dir(c, L->models_dir, sizeof L->models_dir);
        argv_add(av, "--models-dir", L->models_dir);
    }
    if (c->worker_caps.data_cache && c->data_cache[0]) argv_add(av, "--data-cache", c->data_cache);
    /* The roots the spec's dataset.path was checked against: the worker reads nothing
     * that leaves them (a link swapped in after the check: common/dataroot.h). */
    const char *roots[COORD_DATA_ROOTS_MAX];
    int nroots = c->worker_caps.data_root ? coord_data_roots_get(c, roots) : 0;
    for (int i = 0; i < nroots; i++) argv_add(av, "--data-root", roots[i]);
    /* The trained model as ONNX beside the checkpoints, for GET /api/v1/jobs/{id}/model.onnx;
     * a simulation's ranks learn nothing worth exporting. */
    if (c->worker_caps.model_onnx && !r->simulated &&
        coord_job_path(c, r->id, "model.onnx", L->onnx, sizeof L->onnx) == 0)
        argv_add(av, "--model-onnx", L->onnx);
    /* and as safetensors, for GET /api/v1/jobs/{id}/model.safetensors */
    if (c->worker_caps.model_st && !r->simulated &&
        coord_job_path(c, r->id, "model.safetensors", L->st, sizeof L->st) == 0)
        argv_add(av, "--model-safetensors", L->st);
    if (c->worker_caps.redis) {
        argv_add(av, "--redis", c->worker_redis_url);
        argv_add(av, "--job", r->id);
        if (c->worker_password_file[0]) argv_add(av, "--redis-password-file", c->worker_password_file);
    }
    if (av->full) {
        snprintf(L->err, sizeof L->err, "the worker's command has more than %d arguments", LAUNCH_ARGV_MAX);
        return LAUNCH_FAIL;
    }
    return LAUNCH_GO_ON;
}

/* The launcher starts the attempt; the run's per-attempt state starts afresh. */
static int launch_start(coordinator_t *c, coord_run_t *r, launch_t *L, double now)
{
    launch_req_t req = {
        .id = r->id,
        .attempt = r->attempts + 1,
        .world = r->world,
        .argv = L->argv.v,
        .dir = L->dir,
        .log_path = L->log,
        .exit_code_path = L->ecp,
        .handle_path = L->pidp,
        /* All hosts usable: the launcher's own list (the hostfile as given), unless the
         * hosts were reordered for a sharded job's shares (shard_host_order). */
        .hosts = L->names && (L->nn != c->hosts->n || L->reordered) ? L->names : NULL,
        .nhosts = L->nn,
    };
    if (launcher_start(r->launcher, &req, &r->h, L->err, sizeof L->err) != 0) return LAUNCH_FAIL;
    char what[64];
    r->attempts++;
    /* A new attempt: its health is unknown until its rank 0 reports (the previous
     * attempt's verdict leaves the node hash, so it is not taken for this one's). */
    r->resume_before = 0;
    r->health[0] = r->last_health_seen[0] = 0;
    r->collapse_announced = 0;
    if (c->conn->rc) {
        char nkey[160];
        snprintf(nkey, sizeof nkey, KEY_JOB_NODE, r->id, 0);
        redisReply *x = redisCommand(c->conn->rc, "HDEL %s %s", nkey, NODE_HEALTH);
        if (!x) tickconn_broken(c, "health");
        else freeReplyObject(x);
    }
    r->launched_at = now;
    r->phase = PH_ACTIVE;
    r->kill_reason = KILL_NONE;
    r->sigkilled = 0;
    r->fence = L->fence;
    /* What the last attempt's stop named belongs to it. */
    r->stale_rank = -1;
    r->stale_host[0] = r->stall_text[0] = r->silent_host[0] = 0;
    clear_stall(r);
    if (r->started <= 0) r->started = now;
    clog_printf("job %s: attempt %d started (%s, %d rank%s)", r->id, r->attempts,
                launcher_describe(&r->h, what, sizeof what), r->world, r->world == 1 ? "" : "s");
    run_set_state(c, r, JOB_RUNNING, r->state == JOB_RESTARTING ? r->reason : "");
    return LAUNCH_GO_ON;
}

/* A phase that fails: the job's log and the coordinator's say why, and the attempt ends
 * lost (finish_attempt decides whether it is tried again). */
static void launch_failed(coordinator_t *c, coord_run_t *r, const launch_t *L, double now)
{
    FILE *lf = fopen(L->log, "a");
    if (lf) {
        fprintf(lf, "pacer-coordinator: cannot start the job: %s\n", L->err);
        fclose(lf);
    }
    clog_printf("job %s: cannot start: %s", r->id, L->err);
    memset(&r->h, 0, sizeof r->h);
    r->attempts++;
    finish_attempt(c, r, SV_LOST, 0, now);
}

static const struct {
    const char *name;
    int (*fn)(coordinator_t *c, coord_run_t *r, launch_t *L, double now);
} LAUNCH_PHASES[] = {
    {"paths", launch_paths}, {"spec", launch_spec}, {"place", launch_place},
    {"world", launch_world}, {"argv", launch_argv}, {"start", launch_start},
};

void run_launch(coordinator_t *c, coord_run_t *r, double now)
{
    launch_t L = {.fence = 0}; /* on the stack, as its paths were before */
    int rc = LAUNCH_GO_ON;
    for (size_t i = 0; rc == LAUNCH_GO_ON && i < sizeof LAUNCH_PHASES / sizeof LAUNCH_PHASES[0]; i++)
        rc = LAUNCH_PHASES[i].fn(c, r, &L, now);
    /* the one cleanup, whichever phase ended it */
    launch_free(&L);
    if (rc == LAUNCH_FAIL) launch_failed(c, r, &L, now);
}

/* The first launch, after the pre-flight benchmark of the hosts when one is due
 * (preflight.h): the job waits in PH_PREFLIGHT while a round runs, so that its first
 * batch plan and its hosts' states come from the measured speeds. */
void run_first_launch(coordinator_t *c, coord_run_t *r, double now)
{
    if (r->first_launch && !r->simulated && !r->preflight_done) {
        int k = preflight_for_job(c, r->spec, r->id, now);
        if (k == 1) r->preflight_done = 1;
        if (k != 0) {
            if (r->phase != PH_PREFLIGHT) {
                r->phase = PH_PREFLIGHT;
                clog_printf("job %s: waiting for the pre-flight benchmark of the hosts", r->id);
                run_set_state(c, r, JOB_RUNNING, "pre-flight: benchmarking the hosts");
            }
            return;
        }
    }
    run_launch(c, r, now);
}
