/* worker/benchmark.h - pacer-worker --benchmark N: the node speed of this host for a job's
 * model, measured the way training measures it: the worker side of the pre-flight.
 * The coordinator side (running it on each host before a job's first launch and on
 * demand, storing the speed in the host's profile) is coordinator/preflight.c.
 *
 * One process, no MPI (under mpirun or srun it is the only rank and never calls MPI):
 * the job's set-up as a worker rank does it (data set, model, device), then N steps of
 * forward and backward on the spec's batch_size, the first WARMUP untimed. The speed is
 * the node speed of docs/ARCHITECTURE.md: samples per wall-clock second of the steps'
 * compute, as worker_compute_grad books it (so a host's emulated slowdown counts, and a
 * spec's per-rank emulate.slowdown does not: the profile describes the machine).
 *
 * The result is one JSON object, on stdout and (with --summary FILE) in FILE:
 *   {"benchmark": {"host", "device", "model", "dataset", "batch", "steps", "samples",
 *    "compute_s", "samples_per_s", "setup_s", "wall_s"}}
 * Exit status: 0 measured, 1 a failure while measuring, 2 bad input (spec, data set,
 * a launch of several processes), each with one line on stderr naming it.
 */
#ifndef PACER_BENCHMARK_H
#define PACER_BENCHMARK_H

#define BENCHMARK_WARMUP 2
#define BENCHMARK_MAX_STEPS 100000

/* Runs the benchmark of spec_path's model for steps timed steps. */
int benchmark_run(const char *spec_path, long steps, const char *summary_path);

#endif
