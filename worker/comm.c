/* worker/comm.c - see comm.h. */
#include "comm.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "adaptive.h"
#include "comm_mpi.h"
#include "fs.h"
#include "hash.h"
#include "hostname.h"
#include "planner.h"
#include "sim.h"
#include "step.h"
#include "trace.h"

int comm_check_world(const job_spec_t *s, int world, int expect, char *err, size_t errlen)
{
    int async = spec_is_async(s);
    /* what the spec asks, the fewest it may shrink to, the most it may grow to (processes) */
    int need, least, most;
    spec_worlds(s, &need, &least, &most);
    char var[32];
    int launched = comm_launcher_world(var, sizeof var);
    /* N singletons: every process of a launch that did not connect them (srun without
     * an MPI plugin Open MPI can use, a missing PMIx) is rank 0 of a world of 1. Each
     * would train a model of its own and write the same checkpoint: stop instead. */
    if (world == 1 && (expect > 1 || launched > 1)) {
        char how[96];
        if (launched > 1) snprintf(how, sizeof how, "%s=%d", var, launched);
        else snprintf(how, sizeof how, "--world %d", expect);
        snprintf(err, errlen,
                 "this process is alone in its MPI world, but it was started as one of %d processes (%s): the "
                 "launcher did not connect the ranks (srun without --mpi=pmix, or a PMIx/PMI that Open MPI "
                 "cannot use?); stopping instead of training %d separate models",
                 launched > 1 ? launched : expect, how, launched > 1 ? launched : expect);
        return -1;
    }
    if (expect > 0 && world != expect) {
        snprintf(err, errlen, "the coordinator expects %d processes (--world %d), but MPI started %d", expect, expect,
                 world);
        return -1;
    }
    /* An elastic restart: the coordinator relaunched the job on fewer ranks than the
     * spec asks (hosts were lost), or grew it past them up to max_workers onto idle slots
     * (the parameter-server family never grows: common/spec.c); they share its global
     * batch. */
    if (expect > 0 && world == expect && world < need && world < least) {
        snprintf(err, errlen,
                 "min_workers: the spec lets the job shrink to %d workers (workers %d), but --world %d gives it %d",
                 least - (async ? 1 : 0), s->workers, world, world - (async ? 1 : 0));
        return -1;
    }
    if (expect > 0 && world == expect && world < need && world >= least) return 0;
    if (expect > 0 && world == expect && world > need && world <= most) return 0;
    if (world > need && most > need) {
        if (world > most)
            snprintf(err, errlen,
                     "max_workers: the spec lets the job grow to %d workers (workers %d), but mpirun started %d "
                     "processes",
                     most, s->workers, world);
        else
            snprintf(err, errlen,
                     "workers: the spec asks for %d workers; %d processes (up to max_workers %d) need --world %d, "
                     "the coordinator's word that the job grows",
                     s->workers, world, most, world);
        return -1;
    }
    if (world != need) {
        if (world == 1 && launched == 0)
            snprintf(err, errlen,
                     "workers: the spec asks for %d workers; algorithm %s runs as %d processes: "
                     "start it with mpirun -np %d",
                     s->workers, s->algorithm.name, need, need);
        else
            snprintf(err, errlen,
                     "workers: the spec asks for %d workers, so algorithm %s needs %d processes, "
                     "but mpirun started %d",
                     s->workers, s->algorithm.name, need, world);
        return -1;
    }
    return 0;
}

void comm_broadcast_model(worker_t *w, MPI_Comm comm)
{
    if (!w->use_mpi) return;
    model_t *m = w->model;
    worker_model_to_host(w); /* GPU ranks: see worker.h for who owns what when */
    waitmark_enter(&w->wait, WAIT_BROADCAST, -1);
    MPI_CHECK(MPI_Bcast(m->params, (int)m->nparams, MPI_FLOAT, 0, comm));
    if (m->nbuffers) MPI_CHECK(MPI_Bcast(m->buffers, (int)m->nbuffers, MPI_FLOAT, 0, comm));
    waitmark_leave(&w->wait);
    worker_buffers_to_device(w);
}

/* sync_batchnorm's reduction (kernels/cpu/ops.h bn_sync_t): a batch norm's sums over every
 * rank of the job, in double so that the statistics keep the precision each rank's own
 * sums have. Its time is the step's wait for the other ranks' parts (bn_sync_s). */
static void bn_sync_reduce(double *v, int n, void *ctx)
{
    worker_t *w = ctx;
    const double t0 = clock_mono_s();
    waitmark_enter(&w->wait, WAIT_ALLREDUCE, -1);
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    waitmark_leave(&w->wait);
    w->stats.comm_bytes += (double)n * sizeof *v;
    w->bn_sync_s += clock_mono_s() - t0;
}

void comm_bn_sync_setup(worker_t *w)
{
    w->bn_sync.reduce = bn_sync_reduce;
    w->bn_sync.ctx = w;
    w->bn_sync_on = w->use_mpi && w->spec->sync_batchnorm;
}

void comm_replan(worker_t *w, MPI_Comm comm)
{
    const job_spec_t *s = w->spec;
    if (!w->use_mpi || !(s->algorithm.dynamic_batch || s->algorithm.goodput) || s->algorithm.replan_steps <= 0) return;
    if (w->global_step == 0 || w->global_step % s->algorithm.replan_steps != 0) return;
    if (s->algorithm.goodput) {
        adaptive_replan(w, comm);
        return;
    }
    int n = w->nworkers;
    double *speeds = w->plan_speeds;
    double mine = w->stats.ewma_sps;
    long before = w->plan_version;
    phase_enter(&w->phases, PHASE_COMM);
    waitmark_enter(&w->wait, WAIT_GATHER, -1);
    MPI_CHECK(MPI_Gather(&mine, 1, MPI_DOUBLE, speeds, 1, MPI_DOUBLE, 0, comm));
    waitmark_leave(&w->wait);
    phase_leave(&w->phases);
    if (w->rank == 0) worker_replan(w, speeds); /* the planner: the stage's own time (other) */
    phase_enter(&w->phases, PHASE_COMM);
    waitmark_enter(&w->wait, WAIT_BROADCAST, -1);
    MPI_CHECK(MPI_Bcast(w->batch_of, n, MPI_INT, 0, comm));
    MPI_CHECK(MPI_Bcast(&w->plan_version, 1, MPI_LONG, 0, comm));
    waitmark_leave(&w->wait);
    phase_leave(&w->phases);
    if (w->plan_version != before) phase_event(&w->phases, STEP_EV_PLAN);
}

int comm_replan_stage(worker_t *w, algo_step_t *s)
{
    comm_replan(w, MPI_COMM_WORLD);
    return 0;
}

json_t *comm_gather_ranks(worker_t *w, MPI_Comm comm)
{
    json_t *mine = worker_rank_json(w);
    char *text = json_dumps(mine, JSON_COMPACT);
    json_decref(mine);
    int len = text ? (int)strlen(text) + 1 : 1;
    int size;
    MPI_Comm_size(comm, &size);
    int *lens = NULL, *displs = NULL;
    char *all = NULL;
    if (w->rank == 0) {
        lens = calloc((size_t)size, sizeof *lens);
        displs = calloc((size_t)size, sizeof *displs);
    }
    MPI_CHECK(MPI_Gather(&len, 1, MPI_INT, lens, 1, MPI_INT, 0, comm));
    if (w->rank == 0) {
        int total = 0;
        for (int i = 0; i < size; i++) {
            displs[i] = total;
            total += lens[i];
        }
        all = malloc((size_t)total);
    }
    MPI_CHECK(MPI_Gatherv(text ? text : "", len, MPI_CHAR, all, lens, displs, MPI_CHAR, 0, comm));
    free(text);
    /* A rank's gather may end as soon as its small, eager sends leave: without this it could
     * unmap the data cache (worker_teardown) before rank 0 has read its own pages, which rank
     * 0 would then count unshared (data_cache's Pss). */
    MPI_CHECK(MPI_Barrier(comm));
    json_t *arr = NULL;
    if (w->rank == 0) {
        arr = json_array();
        for (int i = 0; i < size; i++) {
            json_t *r = json_loads(all + displs[i], 0, NULL);
            json_array_append_new(arr, r ? r : json_object());
        }
        free(all);
        free(lens);
        free(displs);
    }
    return arr;
}

void comm_evaluate_root(worker_t *w)
{
    if (!w->use_mpi) {
        worker_evaluate(w, &w->test_loss, &w->test_accuracy);
        return;
    }
    float r[2] = {0, 0};
    if (w->rank == 0) worker_evaluate(w, &r[0], &r[1]);
    /* The others wait here while rank 0 evaluates: a long wait, but rank 0 is busy and
     * beating, so the coordinator sees no stall (coordinator/stall.h). */
    waitmark_enter(&w->wait, WAIT_BROADCAST, 0);
    MPI_CHECK(MPI_Bcast(r, 2, MPI_FLOAT, 0, MPI_COMM_WORLD));
    waitmark_leave(&w->wait);
    w->test_loss = r[0];
    w->test_accuracy = r[1];
}

int comm_write_trace(worker_t *w, const char *path, char *err, size_t errlen)
{
    /* One time origin for every track: the earliest slice kept by any rank. */
    double first = trace_ring_first_wall(w->trace), origin = first;
    if (w->use_mpi) MPI_CHECK(MPI_Allreduce(&first, &origin, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD));
    if (!isfinite(origin)) origin = clock_wall_s();
    char label[160];
    snprintf(label, sizeof label, "rank %d (%s, %s)", w->rank, w->record.host, w->role == ROLE_PS ? "ps" : "worker");
    char *text = trace_ring_events(w->trace, w->rank, label, origin);
    int len = text ? (int)strlen(text) + 1 : 1;
    int size = w->use_mpi ? w->world : 1;
    int *lens = NULL, *displs = NULL;
    char *all = NULL, **texts = NULL;
    int rc = 0;
    if (w->rank == 0) {
        lens = calloc((size_t)size, sizeof *lens);
        displs = calloc((size_t)size, sizeof *displs);
        texts = calloc((size_t)size, sizeof *texts);
    }
    if (w->use_mpi) {
        MPI_CHECK(MPI_Gather(&len, 1, MPI_INT, lens, 1, MPI_INT, 0, MPI_COMM_WORLD));
        if (w->rank == 0 && lens) {
            long total = 0;
            for (int i = 0; i < size; i++) {
                displs[i] = (int)total;
                total += lens[i];
            }
            all = total < 0x7fffffff ? malloc((size_t)total) : NULL;
        }
        /* A rank 0 out of memory still takes part (into nothing) and says so below. */
        MPI_CHECK(MPI_Gatherv(text ? text : "", len, MPI_CHAR, all, all ? lens : NULL, all ? displs : NULL, MPI_CHAR, 0,
                              MPI_COMM_WORLD));
    } else if (texts) {
        texts[0] = text;
    }
    if (w->rank == 0) {
        if (!texts || (w->use_mpi && !all)) {
            snprintf(err, errlen, "--trace %s: out of memory", path);
            rc = -1;
            goto out;
        }
        for (int i = 0; w->use_mpi && i < size; i++) texts[i] = all + displs[i];
        /* Rendered in memory, then written whole through fs_atomic_write: a reader sees
         * the old trace or the complete new one. */
        char *doc = NULL;
        size_t doclen = 0;
        FILE *f = open_memstream(&doc, &doclen);
        int bad = !f || trace_write_file(f, w->spec->name, texts, size) != 0;
        if (f && fclose(f) != 0) bad = 1;
        if (bad || fs_atomic_write(path, doc, doclen, 0644) != 0) {
            snprintf(err, errlen, "--trace %s: cannot write: %s", path, strerror(errno));
            rc = -1;
        }
        free(doc);
    }
out:
    free(text);
    free(all);
    free(lens);
    free(displs);
    free(texts);
    return rc;
}
