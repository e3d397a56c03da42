/* worker/comm_mpi.c - see comm_mpi.h. */
#include "comm_mpi.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "hash.h"
#include "hostname.h"
#include "phase.h"
#include "sim.h"
#include "waitmark.h"

int comm_launched_by_mpirun(void)
{
    if (sim_active()) return 1; /* smpirun sets none of these */
    return getenv("OMPI_COMM_WORLD_SIZE") != NULL || getenv("PMI_RANK") != NULL || getenv("PMIX_RANK") != NULL;
}

/* The launchers' variables, in the order they are believed: Open MPI's mpirun, PMI-1/2
 * (MPICH's hydra, srun --mpi=pmi2), and any srun job step (with or without an MPI plugin;
 * sbatch and salloc shells have SLURM_NTASKS but no step, so they do not count). */
static const char *const WORLD_VARS[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS", NULL};

int comm_launcher_world(char *var, size_t varlen)
{
    if (varlen) var[0] = 0;
    for (const char *const *v = WORLD_VARS; *v; v++) {
        const char *s = getenv(*v);
        if (!s || !*s) continue;
        char *end;
        errno = 0;
        long n = strtol(s, &end, 10);
        if (errno || *end || n < 1 || n > 1000000) continue; /* not a count: not believed */
        snprintf(var, varlen, "%s", *v);
        return (int)n;
    }
    return 0;
}

/* A machine is a kernel. MPI's notion of a node (MPI_COMM_TYPE_SHARED) follows the
 * launcher's hosts, but network namespaces and containers on one machine are separate
 * hosts to mpirun while their ranks share its cores and memory (the multi-host test and
 * bench/sim_validate.sh run four "hosts" on 2 cores; a Compose deployment may run several
 * worker containers on one machine). The kernel's boot id is the same in all of them and
 * differs between machines, so ranks are grouped by it, folded to a colour; where it
 * cannot be read, by host name. Two machines whose ids fold to one colour would be
 * judged as one: a 2^-31 chance, and then only the emulation's faithfulness verdict,
 * polite waiting and the memory check's share are affected. */
void comm_split_machine(int rank, MPI_Comm *out)
{
    char id[256] = "";
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (f) {
        if (!fgets(id, sizeof id, f)) id[0] = '\0';
        fclose(f);
    }
    if (!id[0]) host_name(id, sizeof id);
    int colour = (int)(hash_fnv1a(HASH_FNV1A_INIT, id, strlen(id)) & 0x7fffffff);
    MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, colour, rank, out));
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
        if (done) return m; /* m is MPI_UNDEFINED when no request is active */
        nap(t0);
    }
}

void comm_probe(worker_t *w, int source, int tag, MPI_Comm comm)
{
    if (!w->polite_wait) {
        MPI_CHECK(MPI_Probe(source, tag, comm, MPI_STATUS_IGNORE));
        return;
    }
    double t0 = clock_mono_s();
    for (;;) {
        int ready = 0;
        MPI_CHECK(MPI_Iprobe(source, tag, comm, &ready, MPI_STATUS_IGNORE));
        if (ready) return;
        nap(t0);
    }
}

void comm_barrier(worker_t *w, MPI_Comm comm)
{
    if (!w->use_mpi) return;
    double t0 = clock_mono_s();
    MPI_Request req;
    waitmark_enter(&w->wait, WAIT_BARRIER, -1);
    MPI_CHECK(MPI_Ibarrier(comm, &req));
    comm_wait(w, &req);
    waitmark_leave(&w->wait);
    double dt = clock_mono_s() - t0;
    w->stats.step_idle_s += dt;
    w->stats.idle_s += dt;
}

void comm_wait_peers(worker_t *w, MPI_Comm comm)
{
    if (!w->use_mpi) return;
    phase_enter(&w->phases, PHASE_WAIT);
    comm_barrier(w, comm);
    phase_leave(&w->phases);
}

int comm_wait_stage(worker_t *w, algo_step_t *s)
{
    if (!w->use_mpi) return ALGO_SKIP;
    comm_barrier(w, MPI_COMM_WORLD);
    return 0;
}

int comm_agree(worker_t *w, int flag)
{
    (void)w;
    MPI_CHECK(MPI_Bcast(&flag, 1, MPI_INT, 0, MPI_COMM_WORLD));
    return flag;
}
