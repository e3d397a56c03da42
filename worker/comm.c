/* worker/comm.c - see comm.h. */
#include "comm.h"

#include <stdlib.h>
#include <string.h>

#include "planner.h"
#include "sim.h"
#include "train.h"

int comm_launched_by_mpirun(void)
{
    if (sim_active()) return 1; /* smpirun sets none of these */
    return getenv("OMPI_COMM_WORLD_SIZE") != NULL || getenv("PMI_RANK") != NULL ||
           getenv("PMIX_RANK") != NULL;
}

void comm_broadcast_model(worker_t *w, MPI_Comm comm)
{
    if (!w->use_mpi) return;
    model_t *m = w->model;
    worker_model_to_host(w);   /* GPU ranks: see worker.h for who owns what when */
    MPI_CHECK(MPI_Bcast(m->params, (int)m->nparams, MPI_FLOAT, 0, comm));
    if (m->nbuffers) MPI_CHECK(MPI_Bcast(m->buffers, (int)m->nbuffers, MPI_FLOAT, 0, comm));
    worker_buffers_to_device(w);
}

void comm_replan(worker_t *w, MPI_Comm comm)
{
    const job_spec_t *s = w->spec;
    if (!w->use_mpi || !s->algorithm.dynamic_batch || s->algorithm.replan_steps <= 0) return;
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
    if (!w->use_mpi) {
        worker_evaluate(w, &w->test_loss, &w->test_accuracy);
        return;
    }
    float r[2] = { 0, 0 };
    if (w->rank == 0) worker_evaluate(w, &r[0], &r[1]);
    MPI_CHECK(MPI_Bcast(r, 2, MPI_FLOAT, 0, MPI_COMM_WORLD));
    w->test_loss = r[0];
    w->test_accuracy = r[1];
}

/* A polite wait polls for POLITE_SPIN_S first: a message under way (Open MPI's
 * rendezvous hands a large message over in several steps, each needing the other side
 * to poll) usually completes within it while the peer is running, without a trip through
 * the scheduler per step; after that it naps between polls. */
#define POLITE_SPIN_S 0.0005
#define POLITE_NAP_S 0.0001

static void nap(double since)
{
    if (clock_mono_s() - since < POLITE_SPIN_S) return;
    clock_sleep_s(POLITE_NAP_S);
}

void comm_wait(worker_t *w, MPI_Request *req)
{
    if (!w->polite_wait) {
        MPI_CHECK(MPI_Wait(req, MPI_STATUS_IGNORE));
        return;
    }
    double t0 = clock_mono_s();
    for (;;) {
        int done = 0;
        MPI_CHECK(MPI_Test(req, &done, MPI_STATUS_IGNORE));
        if (done) return;
        nap(t0);
    }
}

int comm_wait_any(worker_t *w, int n, MPI_Request *reqs)
{
    int m = MPI_UNDEFINED;
    if (!w->polite_wait) {
        MPI_CHECK(MPI_Waitany(n, reqs, &m, MPI_STATUS_IGNORE));
        return m;
    }
    double t0 = clock_mono_s();
    for (;;) {
        int done = 0;
        MPI_CHECK(MPI_Testany(n, reqs, &m, &done, MPI_STATUS_IGNORE));
        if (done) return m;   /* m is MPI_UNDEFINED when no request is active */
        nap(t0);
    }
}

void comm_wait_peers(worker_t *w, MPI_Comm comm)
{
    if (!w->use_mpi) return;
    double t0 = clock_mono_s();
    MPI_Request req;
    MPI_CHECK(MPI_Ibarrier(comm, &req));
    comm_wait(w, &req);
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
