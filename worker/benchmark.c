/* worker/benchmark.c - see benchmark.h. */
#include "benchmark.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm_mpi.h"
#include "matmul.h"
#include "parallel.h"
#include <jansson.h>

#include "clock.h"
#include "fs.h"
#include "spec.h"
#include "step.h"
#include "train.h"

/* The result, atomically (the coordinator reads it when the process has ended). */
static int write_result(const char *path, json_t *root)
{
    char *text = json_dumps(root, JSON_INDENT(2) | JSON_SORT_KEYS);
    int rc = text ? fs_atomic_write(path, text, strlen(text), 0644) : (errno = ENOMEM, -1);
    free(text);
    if (rc != 0) fprintf(stderr, "pacer-worker: %s: cannot write the benchmark: %s\n", path, strerror(errno));
    return rc;
}

int benchmark_run(const char *spec_path, long steps, const char *summary_path)
{
    static job_spec_t spec;
    static worker_t w;
    char err[1024] = "", var[32];
    double t0 = clock_mono_s();
    int status = 2;
    json_t *root = NULL;
    if (steps < 1 || steps > BENCHMARK_MAX_STEPS) {
        fprintf(stderr, "pacer-worker: --benchmark %ld: must be 1 to %d steps\n", steps, BENCHMARK_MAX_STEPS);
        return 2;
    }
    /* One process per host: a launch of several would measure them against each other. */
    int launched = comm_launcher_world(var, sizeof var);
    if (launched > 1) {
        fprintf(stderr, "pacer-worker: --benchmark measures one host with one process, but %s=%d\n", var, launched);
        return 2;
    }
    if (spec_load_file(spec_path, &spec, err, sizeof err) != 0) {
        fprintf(stderr, "pacer-worker: %s\n", err);
        return 2;
    }
    if (par_set_threads(spec.threads) != 0)
        fprintf(stderr, "pacer-worker: warning: cannot start %d threads; the CPU kernels run on one\n", spec.threads);
    /* the job's products' precision: a bf16 job's host is measured at bf16 */
    mm_precision_t prec = MM_FP32;
    mm_precision_parse(spec.precision, &prec);
    mm_set_precision(prec);
    /* Set up as the first worker rank (rank 1 with a parameter server, which would take
     * rank 0 and compute nothing). */
    int async = spec_is_async(&spec);
    if (worker_setup(&w, &spec, async ? 1 : 0, 1, err, sizeof err) != 0) {
        fprintf(stderr, "pacer-worker: %s\n", err);
        worker_teardown(&w);
        return 2;
    }
    double setup_s = clock_mono_s() - t0;
    int b = spec.batch_size < w.max_batch ? spec.batch_size : w.max_batch;
    w.slowdown = 1.0; /* emulate.slowdown is per rank of a job, not the machine's */
    worker_epoch_order(&w);
    long total = BENCHMARK_WARMUP + steps, offset = 0;
    double compute0 = 0;
    long samples0 = 0;
    for (long i = 0; i < total; i++) {
        if (i == BENCHMARK_WARMUP) {
            compute0 = w.stats.compute_s;
            samples0 = w.stats.samples;
        }
        if (offset + b > w.train.n) offset = 0;
        worker_gather(&w, offset, b);
        offset += b;
        worker_compute_grad(&w, 1.0f);
    }
    double compute = w.stats.compute_s - compute0;
    long samples = w.stats.samples - samples0;
    if (!(compute > 0)) {
        fprintf(stderr, "pacer-worker: --benchmark: %ld steps took no measurable time\n", steps);
        status = 1;
        goto out;
    }
    json_t *b_obj = json_pack("{s:s, s:s, s:s, s:s, s:i, s:I, s:I, s:f, s:f, s:f, s:f}", "host", w.record.host, "device",
                              w.record.device, "model", spec.model, "dataset", spec.dataset.name, "batch", b, "steps",
                              (json_int_t)steps, "samples", (json_int_t)samples, "compute_s", compute, "samples_per_s",
                              (double)samples / compute, "setup_s", setup_s, "wall_s", clock_mono_s() - t0);
    root = b_obj ? json_pack("{s:o}", "benchmark", b_obj) : NULL;
    if (!root) {
        fprintf(stderr, "pacer-worker: out of memory\n");
        status = 1;
        goto out;
    }
    char *line = json_dumps(root, JSON_COMPACT | JSON_SORT_KEYS);
    if (line) printf("%s\n", line);
    free(line);
    fflush(stdout);
    status = summary_path && write_result(summary_path, root) != 0 ? 1 : 0;
out:
    json_decref(root);
    worker_teardown(&w);
    return status;
}
