/* worker/emulate.c - see emulate.h. */
#include "emulate.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm_mpi.h"
#include "sim.h"
#include "step.h"

/* Cores this worker rank keeps busy: threads / f for the smallest factor it will run
 * with (a schedule may speed it up mid-run). A GPU rank drives its device from one host
 * thread. The parameter server's share is only known at the end (its busy fraction). */
static double rank_demand(const worker_t *w)
{
    if (w->role == ROLE_PS) return 0;
    const job_spec_t *s = w->spec;
    double f = worker_slowdown_base(w);
    for (int i = 0; i < s->emulate.nschedule; i++)
        if (s->emulate.schedule[i].rank == w->worker_index && s->emulate.schedule[i].slowdown < f)
            f = s->emulate.schedule[i].slowdown;
    if (f < 1) f = 1;
    return (w->gpu ? 1.0 : (double)s->threads) / f;
}

/* The ranks of one host emulate from one undisturbed cost per batch size: the smallest
 * any of them measured in worker_calibrate (collective over hc). A rank's own minimum is
 * not enough where the host's cores are not equally fast: on a virtual machine whose
 * vCPUs share physical cores with other tenants, one vCPU ran LeNet-5's step 15-25%
 * slower than the other for minutes at a time (2026-11-25; build/bench/layer_profile
 * lenet5 pinned to each with taskset, as bench/threads_scaling.sh now does), and the
 * scheduler keeps a rank on the core it last ran on, so that rank's f x u was f times
 * the slower core's cost and the nominal ratios between ranks did not hold. With the
 * host's minimum every rank sleeps to f times the fastest core's cost, which a core 25%
 * slower still computes inside for any f >= 1.25 (below that its steps are late, as
 * under contention). Ranks without a calibrated cost (the PS, unslowed and GPU ranks)
 * take part with none. */
static void share_undisturbed(worker_t *w, MPI_Comm hc)
{
    int b = w->role == ROLE_PS ? 0 : w->batch_of[w->worker_index];
    int has = worker_undisturbed_s(w, b) > 0;
    MPI_Comm same = MPI_COMM_NULL;
    MPI_CHECK(MPI_Comm_split(hc, has ? b : MPI_UNDEFINED, 0, &same));
    if (same == MPI_COMM_NULL) return;
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &w->undisturbed_s[b], 1, MPI_DOUBLE, MPI_MIN, same));
    MPI_Comm_free(&same);
    w->undisturbed_host_s = w->undisturbed_s[b];
}

/* Processes that may want a core at once: every rank's CPU threads (1 for the PS). */
static double rank_slots(const worker_t *w) { return w->role == ROLE_PS || w->gpu ? 1.0 : (double)w->spec->threads; }

int emulate_check(worker_t *w)
{
    /* A simulated rank (sim.h) computes and waits in simulated time, which no other rank
     * takes from it: every emulated profile is faithful, a step's cost needs no
     * calibration (the first is exact) and waiting politely would only add simulated
     * polling. The real machine's cores say nothing about the simulated hosts. */
    if (sim_active()) {
        w->polite_wait = 0;
        return 0;
    }
    cpu_set_t mask;
    CPU_ZERO(&mask);
    if (sched_getaffinity(0, sizeof mask, &mask) != 0) {
        for (int i = 0; i < CPU_SETSIZE && i < 1024; i++) CPU_SET(i, &mask);
    }
    double mine[2] = {rank_demand(w), rank_slots(w)}, host[2] = {mine[0], mine[1]};
    if (w->role != ROLE_PS && mine[0] < rank_slots(w)) worker_calibrate(w); /* it emulates */
    int leader = w->rank, host_ranks = 1, host_rank = 0;
    MPI_Comm hc = MPI_COMM_NULL;
    if (w->use_mpi) {
        comm_split_machine(w->rank, &hc);
        MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &mask, (int)sizeof mask, MPI_BYTE, MPI_BOR, hc));
        MPI_CHECK(MPI_Allreduce(mine, host, 2, MPI_DOUBLE, MPI_SUM, hc));
        MPI_CHECK(MPI_Allreduce(&w->rank, &leader, 1, MPI_INT, MPI_MIN, hc));
        MPI_Comm_size(hc, &host_ranks);
        MPI_Comm_rank(hc, &host_rank);
        share_undisturbed(w, hc);
        MPI_Comm_free(&hc);
    }
    double cores = CPU_COUNT(&mask);
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    if (online > 0 && cores > (double)online) cores = (double)online;
    if (cores < 1) cores = 1;
    /* Waiting without spinning costs each message up to a sleep period (~0.1 ms); it is
     * worth it where ranks would otherwise take cores from each other, and wherever a
     * rank emulates a slowdown: that rank sleeps through most of its step, and a peer
     * spinning in the collective meanwhile keeps a core busy for nothing that other work
     * on the machine (other jobs, the coordinator) could use (2 ranks on 2 cores, one of
     * them 30x slower: 10.8 CPU s in 10.1 s of wall time spinning, 3-4 waiting politely). */
    int emulated = w->spec->emulate.nslowdown > 0 || w->spec->emulate.nschedule > 0;
    w->polite_wait = host[1] > cores || emulated;
    /* A host shared with work this job cannot see (other jobs, a test suite's parallel
     * lanes) is oversubscribed although its ranks fit its cores: PACER_POLITE_WAIT=1 says
     * so (0 spins whatever the count says). */
    const char *pw = getenv("PACER_POLITE_WAIT");
    if (pw && (strcmp(pw, "0") == 0 || strcmp(pw, "1") == 0)) w->polite_wait = pw[0] == '1';
    if (host_rank == 0 && host[0] > cores + 1e-9)
        fprintf(stderr,
                "emulation: the %d rank(s) on host %s ask for %.2f cores of compute (sum of threads%s) "
                "but have %.0f: %s; the summary says \"faithful\": false\n",
                host_ranks, w->record.host, host[0], emulated ? " / slowdown" : "", cores,
                emulated ? "emulated speeds will not be faithful (they will measure core sharing)"
                         : "measured speeds will include core sharing");
    /* Rank 0 keeps every rank's host figures for the summary. */
    double row[3] = {host[0], cores, (double)leader};
    double *all = NULL;
    if (w->rank == 0 && !(all = malloc((size_t)w->world * sizeof row))) return -1;
    if (w->use_mpi) MPI_CHECK(MPI_Gather(row, 3, MPI_DOUBLE, all, 3, MPI_DOUBLE, 0, MPI_COMM_WORLD));
    else if (all) memcpy(all, row, sizeof row);
    w->emulation.hosts = all;
    w->emulation.ps_host = leader;
    w->emulation.host_demand = host[0];
    w->emulation.host_cores = cores;
    return 0;
}

json_t *emulate_summary_json(const worker_t *w)
{
    if (sim_active()) return json_pack("{s:b, s:b}", "faithful", 1, "simulated", 1);
    const double *all = w->emulation.hosts;
    double worst = -1, demand = 0, cores = 1;
    for (int r = 0; all && r < w->world; r++) {
        double d = all[3 * r], c = all[3 * r + 1];
        /* The parameter server (rank 0 of the asynchronous family) adds what it used. */
        if (w->role == ROLE_PS && (int)all[3 * r + 2] == w->emulation.ps_host) d += w->ps_busy_fraction;
        if (d / c > worst) {
            worst = d / c;
            demand = d;
            cores = c;
        }
    }
    int faithful = demand <= cores + 1e-9;
    return json_pack("{s:b, s:f, s:f, s:b}", "faithful", faithful, "demand_cores", demand, "cores", cores,
                     "polite_wait", w->polite_wait);
}
