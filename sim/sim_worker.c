/* sim/sim_worker.c - the simulated worker's side of sim.h. Compiled only into the SMPI
 * build (build-smpi/, -DPACER_SIM, smpicc): smpi_execute_flops and MPI_Get_processor_name
 * are SimGrid's. */
#undef MPI_Iallreduce /* sim.mk renames the worker's calls to the wrapper below */
#include "sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "compress.h"
#include "cost.h"
#include "rng.h"
#include "simshare.h"

/* ---- deterministic compute ------------------------------------------------------------ */

/* Charged computation: smpi_execute_flops_benched first closes the benchmarked burst
 * SMPI would otherwise time (with smpi/simulate-computation off, which pacer-sim sets in
 * deterministic mode, nothing is timed), then lets the simulated host execute `flops` at
 * its speed. The time it takes is what the worker's clock then reads as compute time. */
static void charge(const worker_t *w, double flops)
{
    if (!w->spec->simulate.deterministic || !(flops > 0)) return;
    smpi_execute_flops_benched(flops);
}

/* simulate.jitter: real steps vary by a few percent (caches, interrupts, other processes),
 * and that variation is what keeps equal hosts out of step with each other. Without it
 * the equal workers of a deterministic asgd job push at the same simulated instant
 * forever and share the parameter server's link in lockstep, which no real cluster does
 * (sim_determinism: 3 equal asgd workers on 100 Mbit/s links take 4.06 simulated s in
 * lockstep, 3.17 with jitter 0.05). Each rank draws its own stream from
 * the job seed and its rank (SMPI gives every rank its own copy of these statics), one
 * factor per training step, so a run stays a function of spec, seed and platform. */
static rng_t jitter_rng;
static int jitter_seeded;

static double jitter_factor(const worker_t *w)
{
    double j = w->spec->simulate.jitter;
    if (!(j > 0)) return 1.0;
    if (!jitter_seeded) {
        rng_seed(&jitter_rng, (uint64_t)w->spec->seed * 0x9e3779b97f4a7c15ull + (uint64_t)w->rank + 1);
        jitter_seeded = 1;
    }
    return 1.0 + j * (2.0 * (double)rng_uniform(&jitter_rng) - 1.0);
}

/* jitter needs deterministic (spec.c), so a timed run draws nothing and charge ignores it. */
void sim_charge_train(const worker_t *w, int batch)
{
    charge(w, cost_train_flops(cost_figures(w->model)) * batch * jitter_factor(w));
}

void sim_charge_update(const worker_t *w) { charge(w, cost_update_flops(cost_figures(w->model), w->spec)); }

void sim_charge_eval(const worker_t *w, int batch) { charge(w, cost_forward_flops(cost_figures(w->model)) * batch); }

void sim_charge_compress(const worker_t *w, long step)
{
    if (compress_active(w->compress, step)) charge(w, compress_step_flops(w->compress));
}

int sim_skip_compute(const worker_t *w) { return w->spec->simulate.deterministic && w->spec->simulate.skip_compute; }

int sim_model_batch(const worker_t *w) { return sim_skip_compute(w) ? 1 : w->max_batch; }

int sim_host_name(char *out, size_t len)
{
    char name[MPI_MAX_PROCESSOR_NAME];
    int n = 0;
    if (MPI_Get_processor_name(name, &n) != MPI_SUCCESS) snprintf(name, sizeof name, "sim");
    snprintf(out, len, "%s", name);
    return 0;
}

/* ---- one data set for every rank ---------------------------------------------------- */

/* The first rank that loads a split keeps it in simshare; the others copy its dataset_t
 * (pointers to the same pixels and labels). Ranks never write a data set after loading
 * (truncation only changes the rank's own n), so sharing changes nothing they see. The
 * last rank to let go frees it. taken[] is this rank's own list (privatised by SMPI). */
typedef struct {
    dataset_t d;
    int users;
    char key[SIMSHARE_KEY_MAX];
} shared_set_t;

static shared_set_t *taken[4];

int sim_dataset_load(const char *name, const char *dir, int train, dataset_t *out, char *err, size_t errlen)
{
    char key[SIMSHARE_KEY_MAX];
    snprintf(key, sizeof key, "dataset|%s|%s|%d", name, dir ? dir : "", train);
    shared_set_t *s = simshare_get(key);
    int slot = -1;
    for (int i = 0; i < 4; i++)
        if (!taken[i]) {
            slot = i;
            break;
        }
    if (slot < 0) return dataset_load(name, dir, train, out, err, errlen);
    if (!s) {
        if (!(s = calloc(1, sizeof *s))) return dataset_load(name, dir, train, out, err, errlen);
        int rc = dataset_load(name, dir, train, &s->d, err, errlen);
        if (rc != 0) {
            free(s);
            return rc;
        }
        snprintf(s->key, sizeof s->key, "%s", key);
        if (simshare_put(key, s) != 0) {
            *out = s->d; /* table full: this rank keeps its own copy */
            free(s);
            return 0;
        }
    }
    s->users++;
    taken[slot] = s;
    *out = s->d;
    return 0;
}

void sim_dataset_free(dataset_t *d)
{
    for (int i = 0; i < 4; i++) {
        shared_set_t *s = taken[i];
        if (!s || !d->pixels || s->d.pixels != d->pixels) continue;
        taken[i] = NULL;
        memset(d, 0, sizeof *d);
        if (--s->users == 0) {
            simshare_put(s->key, NULL);
            dataset_free(&s->d);
            free(s);
        }
        return;
    }
    dataset_free(d);
}

/* ---- MPI_Iallreduce in place ---------------------------------------------------------- */

/* SimGrid 3.32's MPI_Iallreduce(MPI_IN_PLACE, ...) copies the buffer into a temporary
 * that dies when the call returns, then sends from it once the reduction proceeds: the
 * peers receive garbage (hpsgd's weights became NaN). sim.mk compiles the worker with
 * -DMPI_Iallreduce=sim_mpi_iallreduce, and this wrapper gives an in-place reduction a
 * send buffer that lives as long as it does: one per receive buffer, reused by the next
 * reduction into that buffer, which MPI allows only after this one has completed. */
int sim_mpi_iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                       MPI_Request *req);

#define SEND_COPIES 8
static struct {
    void *recv;
    void *copy;
    size_t cap;
} copies[SEND_COPIES];

int sim_mpi_iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                       MPI_Request *req)
{
    if (sendbuf != MPI_IN_PLACE) return MPI_Iallreduce(sendbuf, recvbuf, count, type, op, comm, req);
    int size = 0;
    MPI_Type_size(type, &size);
    size_t bytes = (size_t)count * (size_t)size;
    int k = -1;
    for (int i = 0; i < SEND_COPIES && k < 0; i++)
        if (copies[i].recv == recvbuf) k = i;
    for (int i = 0; i < SEND_COPIES && k < 0; i++)
        if (!copies[i].recv) k = i;
    if (k < 0) {
        fprintf(stderr, "pacer-worker: sim: more than %d buffers reduced in place with MPI_Iallreduce\n", SEND_COPIES);
        return MPI_ERR_OTHER;
    }
    if (copies[k].cap < bytes) {
        void *p = realloc(copies[k].copy, bytes);
        if (!p) return MPI_ERR_NO_MEM;
        copies[k].copy = p;
        copies[k].cap = bytes;
    }
    copies[k].recv = recvbuf;
    memcpy(copies[k].copy, recvbuf, bytes);
    return MPI_Iallreduce(copies[k].copy, recvbuf, count, type, op, comm, req);
}

/* ---- summary -------------------------------------------------------------------------- */

void sim_summary(const worker_t *w, json_t *root)
{
    const char *platform = getenv("PACER_SIM_PLATFORM");
    json_object_set_new(root, "simulated", json_true());
    json_object_set_new(root, "simulated_wall_s", json_real(MPI_Wtime()));
    json_object_set_new(root, "simulation",
                        json_pack("{s:s, s:b, s:b, s:f}", "platform", platform ? platform : "", "deterministic",
                                  w->spec->simulate.deterministic, "skip_compute", sim_skip_compute(w), "jitter",
                                  w->spec->simulate.jitter));
}
