/* worker/comm.c - see comm.h. */
#include "comm.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "planner.h"
#include "train.h"

int comm_launched_by_mpirun(void)
{
    return getenv("OMPI_COMM_WORLD_SIZE") != NULL || getenv("PMI_RANK") != NULL ||
           getenv("PMIX_RANK") != NULL;
}

/* The launchers' variables, in the order they are believed: Open MPI's mpirun, PMI-1/2
 * (MPICH's hydra, srun --mpi=pmi2), and any srun job step (with or without an MPI plugin;
 * sbatch and salloc shells have SLURM_NTASKS but no step, so they do not count). */
static const char *const WORLD_VARS[] = { "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS", NULL };

int comm_launcher_world(char *var, size_t varlen)
{
    if (varlen) var[0] = 0;
    for (const char *const *v = WORLD_VARS; *v; v++) {
        const char *s = getenv(*v);
        if (!s || !*s) continue;
        char *end;
        errno = 0;
        long n = strtol(s, &end, 10);
        if (errno || *end || n < 1 || n > 1000000) continue;   /* not a count: not believed */
        snprintf(var, varlen, "%s", *v);
        return (int)n;
    }
    return 0;
}

int comm_check_world(const job_spec_t *s, int world, int expect, char *err, size_t errlen)
{
    int async = spec_is_async(s);
    int need = async ? s->workers + 1 : s->workers;
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
     * spec asks (hosts were lost); they share its global batch. */
    if (expect > 0 && world == expect && world < need && world >= (async ? 2 : 1)) return 0;
    if (world != need) {
        if (world == 1 && launched == 0)
            snprintf(err, errlen, "workers: the spec asks for %d workers; algorithm %s runs as %d processes: "
                     "start it with mpirun -np %d", s->workers, s->algorithm.name, need, need);
        else
            snprintf(err, errlen, "workers: the spec asks for %d workers, so algorithm %s needs %d processes, "
                     "but mpirun started %d", s->workers, s->algorithm.name, need, world);
        return -1;
    }
    return 0;
}

void comm_broadcast_model(worker_t *w, MPI_Comm comm)
{
    model_t *m = w->model;
    worker_model_to_host(w);   /* GPU ranks: see worker.h for who owns what when */
    MPI_CHECK(MPI_Bcast(m->params, (int)m->nparams, MPI_FLOAT, 0, comm));
    if (m->nbuffers) MPI_CHECK(MPI_Bcast(m->buffers, (int)m->nbuffers, MPI_FLOAT, 0, comm));
    worker_buffers_to_device(w);
}

void comm_replan(worker_t *w, MPI_Comm comm)
{
    const job_spec_t *s = w->spec;
    if (!s->algorithm.dynamic_batch || s->algorithm.replan_steps <= 0) return;
    if (w->global_step == 0 || w->global_step % s->algorithm.replan_steps != 0) return;
    int n = w->nworkers;
    double *speeds = w->plan_speeds;
    double mine = w->stats.ewma_sps;
    MPI_CHECK(MPI_Gather(&mine, 1, MPI_DOUBLE, speeds, 1, MPI_DOUBLE, 0, comm));
    if (w->rank == 0) worker_replan(w, speeds);
    MPI_CHECK(MPI_Bcast(w->batch_of, n, MPI_INT, 0, comm));
    MPI_CHECK(MPI_Bcast(&w->plan_version, 1, MPI_LONG, 0, comm));
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
        for (int i = 0; i < size; i++) { displs[i] = total; total += lens[i]; }
        all = malloc((size_t)total);
    }
    MPI_CHECK(MPI_Gatherv(text ? text : "", len, MPI_CHAR, all, lens, displs, MPI_CHAR, 0, comm));
    free(text);
    json_t *arr = NULL;
    if (w->rank == 0) {
        arr = json_array();
        for (int i = 0; i < size; i++) {
            json_t *r = json_loads(all + displs[i], 0, NULL);
            json_array_append_new(arr, r ? r : json_object());
        }
        free(all); free(lens); free(displs);
    }
    return arr;
}

void comm_evaluate_root(worker_t *w)
{
    float r[2] = { 0, 0 };
    if (w->rank == 0) worker_evaluate(w, &r[0], &r[1]);
    MPI_CHECK(MPI_Bcast(r, 2, MPI_FLOAT, 0, MPI_COMM_WORLD));
    w->test_loss = r[0];
    w->test_accuracy = r[1];
}

void comm_wait_peers(worker_t *w, MPI_Comm comm)
{
    double t0 = clock_mono_s();
    MPI_CHECK(MPI_Barrier(comm));
    double dt = clock_mono_s() - t0;
    w->stats.step_idle_s += dt;
    w->stats.idle_s += dt;
}

int comm_agree(worker_t *w, int flag)
{
    (void)w;
    MPI_CHECK(MPI_Bcast(&flag, 1, MPI_INT, 0, MPI_COMM_WORLD));
    return flag;
}
