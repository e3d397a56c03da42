/* worker/comm.c - see comm.h. */
#include "comm.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "adaptive.h"
#include "fs.h"
#include "hash.h"
#include "hostname.h"
#include "planner.h"
#include "sim.h"
#include "trace.h"
#include "train.h"

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
    phase_mark(&w->phases, PHASE_OTHER);
    waitmark_enter(&w->wait, WAIT_GATHER, -1);
    MPI_CHECK(MPI_Gather(&mine, 1, MPI_DOUBLE, speeds, 1, MPI_DOUBLE, 0, comm));
    waitmark_leave(&w->wait);
    phase_mark(&w->phases, PHASE_COMM);
    if (w->rank == 0) worker_replan(w, speeds);
    phase_mark(&w->phases, PHASE_OTHER); /* the planner */
    waitmark_enter(&w->wait, WAIT_BROADCAST, -1);
    MPI_CHECK(MPI_Bcast(w->batch_of, n, MPI_INT, 0, comm));
    MPI_CHECK(MPI_Bcast(&w->plan_version, 1, MPI_LONG, 0, comm));
    waitmark_leave(&w->wait);
    phase_mark(&w->phases, PHASE_COMM);
    if (w->plan_version != before) phase_event(&w->phases, STEP_EV_PLAN);
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

void comm_wait_peers(worker_t *w, MPI_Comm comm)
{
    if (!w->use_mpi) return;
    phase_mark(&w->phases, PHASE_OTHER);
    double t0 = clock_mono_s();
    MPI_Request req;
    waitmark_enter(&w->wait, WAIT_BARRIER, -1);
    MPI_CHECK(MPI_Ibarrier(comm, &req));
    comm_wait(w, &req);
    waitmark_leave(&w->wait);
    phase_mark(&w->phases, PHASE_WAIT);
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
