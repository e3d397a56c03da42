/* worker/main.c - pacer-worker: the training program. Run directly it trains in one process;
 * under mpirun every rank runs it and the spec's algorithm decides what each rank does.
 *
 * Exit status: 0 success, 1 a failure while training, 2 bad input (usage, spec, data set,
 * checkpoint), each with one line on stderr that names what is wrong; 3 training collapsed
 * and on_collapse is fail or restart (health.h; the summary's "health" says why and since
 * when, and the coordinator fails or restarts the job); 75 (NOTICE_EXIT_STATUS) stopped on
 * notice: a rank heard SIGTERM, every rank stopped after the same step and rank 0 left a
 * checkpoint there (common/notice.h). */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "comm_mpi.h"
#include "blas_core.h"
#include "cpu_isa.h"
#include "loop.h"
#include "matmul.h"
#include "parallel.h"

#include "backend_cuda.h"
#include "benchmark.h"
#include "comm.h"
#include "ckptdir.h"
#include "dataroot.h"
#include "emulate.h"
#include "init_weights.h"
#include "memest.h"
#include "modelfetch.h"
#include "netprobe.h"
#include "notice.h"
#include "numarg.h"
#include "onnx_case.h"
#include "onnx_import.h"
#include "redis_report.h"
#include "sigterm.h"
#include "sim.h"
#include "spec.h"
#include "step.h"
#include "trace.h"
#include "train.h"
#include "userdata.h"
#include "version.h"

static const struct option OPTIONS[] = {
    {"spec", required_argument, NULL, 's'},
    {"summary", required_argument, NULL, 'o'},
    {"metrics", required_argument, NULL, 'm'},
    {"redis", required_argument, NULL, 'D'},
    {"redis-password-file", required_argument, NULL, 'A'},
    {"job", required_argument, NULL, 'J'},
    {"world", required_argument, NULL, 'w'},
    {"benchmark", required_argument, NULL, 'b'},
    {"netprobe", required_argument, NULL, 'N'},
    {"resume", no_argument, NULL, 'r'},
    {"resume-from", required_argument, NULL, 'R'},
    {"resume-before", required_argument, NULL, 'E'},
    {"adopt-checkpoint", required_argument, NULL, 1000},
    {"lr-scale", required_argument, NULL, 'L'},
    {"fence", required_argument, NULL, 'F'},
    {"stop-after-steps", required_argument, NULL, 'S'},
    {"batch-plan", required_argument, NULL, 'B'},
    {"ps-round-robin", no_argument, NULL, 'P'},
    {"time-budget", required_argument, NULL, 'T'},
    {"comm-baseline", no_argument, NULL, 'K'},
    {"hpsgd-round-steps", required_argument, NULL, 'H'},
    {"weight-digest", required_argument, NULL, 'W'},
    {"trace", required_argument, NULL, 'X'},
    {"export-onnx", required_argument, NULL, 'O'},
    {"export-onnx-init", required_argument, NULL, 'Q'},
    {"model-onnx", required_argument, NULL, 'Y'},
    {"export-safetensors", required_argument, NULL, 1001},
    {"model-safetensors", required_argument, NULL, 1002},
    {"safetensors-names", required_argument, NULL, 1003},
    {"safetensors-dtype", required_argument, NULL, 1004},
    {"data-cache", required_argument, NULL, 'C'},
    {"data-root", required_argument, NULL, 'U'},
    {"models-dir", required_argument, NULL, 'M'},
    {"check-onnx", required_argument, NULL, 'k'},
    {"check-memory-mb", required_argument, NULL, 'G'},
    {"onnx-case", required_argument, NULL, 'j'},
    {"list-ops", no_argument, NULL, 'l'},
    {"version", no_argument, NULL, 'V'},
    {"capabilities", no_argument, NULL, 'Z'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* --capabilities: every long option of OPTIONS, so the coordinator asks the worker what
 * it takes instead of searching its --help text (coordinator/wcaps.h). */
static void capabilities(void)
{
    printf("{\"options\": [");
    for (const struct option *o = OPTIONS; o->name; o++) printf("%s\"--%s\"", o == OPTIONS ? "" : ", ", o->name);
    printf("]}\n");
}

static void usage_resume(FILE *f);

static void usage(FILE *f)
{
    fprintf(f, "usage: pacer-worker --spec FILE [options]\n"
               "       mpirun -np N pacer-worker --netprobe S\n"
               "       mpirun -np N pacer-worker --spec FILE [options]\n"
               "       pacer-worker --check-onnx FILE [--check-memory-mb MB]\n"
               "       pacer-worker --onnx-case DIR\n"
               "       pacer-worker --list-ops\n"
               "\n"
               "Trains the job described by a JSON job spec (docs/JOB_SPEC.md).\n"
               "\n"
               "  --spec FILE            the job spec (required)\n"
               "  --summary FILE         write the JSON summary (accuracy, losses, speed, per rank)\n"
               "  --metrics FILE         append per-rank metrics records as JSON lines (every step,\n"
               "                         epoch end and the end); written by a background thread\n"
               "  --redis URL            also send the records, node profile, staleness and a\n"
               "                         heartbeat to Redis (redis://host:port or unix:///path),\n"
               "                         and take batch assignments from it; needs --job\n"
               "  --redis-password-file FILE  the Redis password (first line), from a file only\n"
               "                         its owner can read, never on the command line\n"
               "  --job ID               the coordinator's job id (keys pacer:job:ID:*)\n"
               "  --world N              the number of processes this run was launched as (the\n"
               "                         coordinator passes it): a process that finds itself in\n"
               "                         another MPI world, e.g. alone because the launcher did not\n"
               "                         connect the ranks, stops instead of training on its own\n"
               "  --benchmark N          measure this host's speed for the spec's model instead of\n"
               "                         training: N steps of its batch_size after 2 untimed ones,\n"
               "                         one process, no MPI; prints (and with --summary writes)\n"
               "                         {\"benchmark\": {samples_per_s, device, ...}}\n"
               "  --netprobe S           instead of training, check the job's network: under\n"
               "                         mpirun every rank exchanges a message with every other\n"
               "                         within S seconds and prints {\"netprobe\": {rank, host,\n"
               "                         heard, sent, ...}}; no --spec (worker/netprobe.h)\n");
    usage_resume(f);
}

/* usage's second part: resuming, and the options for tests and benchmarks. */
static void usage_resume(FILE *f)
{
    fprintf(f, "  --resume               continue from the job's latest checkpoint\n"
               "                         (checkpoint.dir/NAME.ckpt); starts fresh if there is none\n"
               "  --resume-from FILE     continue from this checkpoint; a missing file is an error\n"
               "  --adopt-checkpoint FILE  with --resume, when the job has no checkpoint of its own:\n"
               "                         start from FILE, another run's checkpoint, under this spec\n"
               "                         (its spec hash is not compared; the model's layout, the seed\n"
               "                         and every counter are): how the coordinator continues a PBT\n"
               "                         trial from a better trial's weights with its own values\n"
               "  --resume-before STEP   continue from the newest checkpoint the job kept that was\n"
               "                         written before global step STEP (the last good one before a\n"
               "                         collapse); with none, start afresh. It is then saved again as\n"
               "                         the latest, so the later ones are dropped (the coordinator's\n"
               "                         on_collapse restart)\n"
               "  --lr-scale F           multiply the spec's learning rate by F, in (0, 1] (0.5 per\n"
               "                         collapse restart)\n"
               "  --fence G              publish a checkpoint (over NAME.ckpt) only while\n"
               "                         checkpoint.dir/NAME.fence says G: the coordinator raises it\n"
               "                         once this attempt is over (common/ckptdir.h)\n"
               "  --time-budget S        stop after S seconds of training (evaluations and\n"
               "                         checkpoints not counted), then evaluate (for comparisons\n"
               "                         at equal training time)\n"
               "  --comm-baseline        ssgd: also time a raw MPI_Allreduce of the same size each\n"
               "                         step, into the metrics records (for benchmarks)\n"
               "  --data-cache DIR       where a data set (a built-in one, an imagefolder, an npz) is\n"
               "                         decoded to once and mapped from by every later job and rank\n"
               "                         of this host, unless the spec's dataset.cache_dir names one\n"
               "                         (default $XDG_CACHE_HOME/pacer/data, ~/.cache/pacer/data)\n"
               "  --data-root DIR        a directory of users' data sets (image folders, .npz files),\n"
               "                         repeatable: a spec may name one by \"dataset\": {\"name\": ...}\n"
               "                         as the coordinator's GET /api/v1/datasets lists it; given\n"
               "                         any, no file of a user's data set is read outside them\n"
               "  --models-dir DIR       where uploaded models are stored as SHA256.onnx (the\n"
               "                         coordinator passes its state directory's models/); a spec's\n"
               "                         {\"onnx\": NAME, \"sha256\": HEX} is read from there, else\n"
               "                         from Redis (--redis), and checked against the hash\n"
               "  --check-onnx FILE      instead of training, import FILE and print its summary as\n"
               "                         one JSON line (input, classes, layers, parameters,\n"
               "                         flops_per_sample, sha256, parameter_names,\n"
               "                         product_weights, ...); exit 2 with the importer's\n"
               "                         message when pacer cannot train it, 3 when it is not ONNX\n"
               "  --check-memory-mb MB   --check-onnx's memory bound (default: this machine's\n"
               "                         memory): a model whose decoding or buffers at batch 1\n"
               "                         need more, from its declared shapes, is refused (exit 2)\n"
               "                         before they are allocated; the check also runs under an\n"
               "                         address-space limit of about MB + twice the file + 512\n"
               "                         MiB (setrlimit RLIMIT_AS), so that no file takes the machine\n"
               "  --onnx-case DIR        run one case of ONNX's backend tests (DIR: model.onnx and\n"
               "                         test_data_set_N/input_K.pb, output_K.pb) forward and compare\n"
               "                         with its outputs (rtol 1e-3, atol 1e-7): exit 0 all match,\n"
               "                         1 a mismatch (the output and its largest error), 2 what\n"
               "                         pacer does not support (the importer's message)\n"
               "  --list-ops             print the ONNX operators that import (a Markdown table:\n"
               "                         the operators, the layer they become), the list an\n"
               "                         importer's refusal of an unknown operator points to\n"
               "  --trace FILE           write this job's recent steps as a Chrome trace (Perfetto,\n"
               "                         chrome://tracing): one track per rank, phases as slices;\n"
               "                         rank 0 gathers every rank's timeline at the end\n"
               "  --export-onnx FILE     at the end, rank 0 writes the trained model as ONNX: the\n"
               "                         spec's model.onnx graph in inference form (batch norm on\n"
               "                         its running statistics, dropout an Identity) with the\n"
               "                         trained weights under the file's initializer names (what\n"
               "                         module.load_state_dict takes back); a built-in model as\n"
               "                         the graph of its layers, its tensors under PyTorch's\n"
               "                         state_dict names (docs/JOB_SPEC.md)\n"
               "  --export-onnx-init FILE  the same before training: the weights training starts\n"
               "                         from (the seed's, the file's, or a resumed checkpoint's)\n"
               "  --model-onnx FILE      the latest weights as ONNX (as --export-onnx), rewritten\n"
               "                         by whoever holds the model (rank 0, the parameter server)\n"
               "                         with every checkpoint and at the end (the coordinator's\n"
               "                         JOBDIR/model.onnx, GET /api/v1/jobs/{id}/model.onnx)\n"
               "  --export-safetensors FILE  at the end, rank 0 writes the trained weights as\n"
               "                         safetensors (F32, the names and shapes of --export-onnx's\n"
               "                         initializers; the GPT's tied head once, as its embedding)\n"
               "  --safetensors-names hf  --export-safetensors writes the built-in GPT under\n"
               "                         Hugging Face GPT-2's names, its products in Conv1D's\n"
               "                         [in, out] layout (default nanogpt: the model's own)\n"
               "  --safetensors-dtype bf16  --export-safetensors writes BF16 (rounded to nearest\n"
               "                         even; default f32)\n"
               "  --model-safetensors FILE  the same as --model-onnx does for ONNX (the\n"
               "                         coordinator's JOBDIR/model.safetensors)\n"
               "  --stop-after-steps N   stop after global step N as if interrupted (for tests)\n"
               "  --batch-plan B0,B1,..  initial per-worker batch sizes, summing to workers x\n"
               "                         batch_size (for tests; the planner takes over if enabled)\n"
               "  --ps-round-robin       the parameter server takes pushes in worker order, which\n"
               "                         fixes every staleness value in advance (for tests)\n"
               "  --hpsgd-round-steps N  hpsgd: merge each round after exactly N local steps,\n"
               "                         waiting for it, instead of when MPI_Test finds it done:\n"
               "                         a schedule no timing can move (for tests)\n"
               "  --weight-digest PATH   each rank appends 'STEP HASH' of its weights at the start,\n"
               "                         after every step and at every epoch end to PATH.rank<N>\n"
               "                         (for tests)\n"
               "  --version              print the version and the compiled-in backends\n"
               "  --capabilities         print the options this worker takes, as JSON, for the\n"
               "                         coordinator (coordinator/wcaps.h)\n"
               "  --help                 this text\n"
               "\n"
               "Environment: PACER_CUDA_LIB  the CUDA backend that device cuda or auto loads\n"
               "                             (default: libpacer_cuda.so next to this program)\n"
               "             PACER_CUDA_PROFILE=1  each layer's device time, to stderr at the end\n"
               "             PACER_CUDA_CONV=any   cuDNN's fastest convolutions of any kind\n"
               "                             (not deterministic; for measurements)\n"
               "             PACER_POLITE_WAIT=1   wait for peers by polling and napping, not\n"
               "                             spinning, on a host shared with other work (0:\n"
               "                             spin; default: polite only on an oversubscribed\n"
               "                             host or with an emulated slowdown)\n"
               "\n"
               "Exit status: 0 done, 1 training failed, 2 bad input (spec, data, checkpoint),\n"
               "3 training collapsed with on_collapse fail or restart.\n");
}

/* The CUDA backend is listed when its library is there; then it is loaded (not
 * initialised) to say what it was built with and which driver that needs, and the driver
 * is asked what it is (libcuda only), so a mismatch shows before a job is started. */
static void version(void)
{
    char path[4200], info[1024];
    cuda_backend_path(path, sizeof path);
    int have = access(path, R_OK) == 0;
    printf("pacer-worker %s\nbackends: cpu%s\n", PACER_VERSION, have ? " cuda" : "");
    if (have) {
        int rc = cuda_backend_info(info, sizeof info);
        printf("cuda backend: %s%s%s\n", rc == 0 ? path : "", rc == 0 ? ": " : "", info);
    }
    cuda_driver_info(info, sizeof info);
    printf("cuda driver: %s\n", info);
}

/* Bounds of the numeric test and benchmark options (a garbage or out-of-range value is an
 * error, never a silent 0: see common/numarg.h). */
#define STOP_AFTER_MAX 1000000000L
#define HPSGD_ROUND_MAX 1000000L
#define TIME_BUDGET_MIN 1e-3
#define TIME_BUDGET_MAX 1e9
#define LR_SCALE_MIN 1e-9
#define RESUME_BEFORE_MAX 1000000000000L

/* bad_number OPT VALUE WHAT LO HI - the worker's one message for a numeric option out of
 * shape ("--world x: must be a process count from 1 to 257"). */
static int bad_number(const char *opt, const char *value, const char *what, double lo, double hi)
{
    fprintf(stderr, "pacer-worker: --%s %s: must be %s from %g to %g\n", opt, value, what, lo, hi);
    return 2;
}

#define WORKER_DATA_ROOTS_MAX 16
/* What the command line asks of a training run: main fills it, run's phases read it.
 * No signal handler reads any of it, so none of it is a file-scope global. */
typedef struct {
    const char *spec_path, *summary_path, *metrics_path; /* --spec, --summary, --metrics */
    int resume;                                          /* --resume */
    const char *resume_from;                             /* --resume-from */
    const char *adopt;                                   /* --adopt-checkpoint */
    train_opts_t opts;                                   /* the test hooks and the time budget */
    const char *redis_url, *job_id;                      /* --redis, --job */
    const char *trace_path;                              /* --trace */
    const char *export_onnx;                             /* --export-onnx */
    const char *export_onnx_init;                        /* --export-onnx-init */
    const char *model_onnx;                              /* --model-onnx */
    const char *export_st;                               /* --export-safetensors */
    const char *model_st;                                /* --model-safetensors */
    const char *st_names, *st_dtype;                     /* --safetensors-names, --safetensors-dtype */
    const char *data_cache;                              /* --data-cache */
    const char *data_roots[WORKER_DATA_ROOTS_MAX];       /* --data-root */
    int ndata_roots;
    const char *models_dir;          /* --models-dir */
    const char *redis_password_file; /* --redis-password-file */
    int world;                       /* --world: 0 = not given */
    double lr_scale;                 /* --lr-scale */
    long fence;                      /* --fence: -1 = not given */
    long resume_before;              /* --resume-before: -1 = not given */
} worker_args_t;

static int run(const worker_args_t *a);
static int coordinator_assignment(worker_t *w, int *out);

#define CHECK_MEMORY_MAX_MB 100000000L /* 100 TB: a bound, not a machine */

/* AddressSanitizer's shadow memory needs terabytes of address space: no RLIMIT_AS there. */
#if defined(__SANITIZE_ADDRESS__)
#define CHECK_ONNX_RLIMIT 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CHECK_ONNX_RLIMIT 0
#endif
#endif
#ifndef CHECK_ONNX_RLIMIT
#define CHECK_ONNX_RLIMIT 1
#endif

/* --check-onnx's bounds, set before the file is read: the importer's memory bound (the
 * model's decoding and buffers, computed from its declared shapes before they are
 * allocated: onnx_import.h), and, so that a bug past those checks still cannot take the
 * machine, an address-space limit: what this process maps already (its libraries), the
 * bound, the file twice (read and decoded) and 512 MiB of slack. A malloc beyond it fails,
 * which the importer reports as out of memory (exit 2); the coordinator answers 422. */
static void check_onnx_limits(const char *path, long mb)
{
    if (mb > 0) onnx_import_set_memory_bound((size_t)mb << 20);
    if (!CHECK_ONNX_RLIMIT) return;
    struct stat st;
    unsigned long long pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f && fscanf(f, "%llu", &pages) != 1) pages = 0;
    if (f) fclose(f);
    if (pages == 0) return; /* no /proc: the importer's own bound only */
    unsigned long long file = stat(path, &st) == 0 && st.st_size > 0 ? (unsigned long long)st.st_size : 0;
    if (file > ONNX_MAX_BYTES) file = ONNX_MAX_BYTES;
    unsigned long long limit = pages * (unsigned long long)sysconf(_SC_PAGE_SIZE) + onnx_import_memory_bound() +
                               2 * file + (512ULL << 20);
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) == 0 && (rl.rlim_max == RLIM_INFINITY || limit < rl.rlim_max)) {
        rl.rlim_cur = (rlim_t)limit;
        setrlimit(RLIMIT_AS, &rl);
    }
}

/* The modes that take no spec (--onnx-case, --check-onnx, --netprobe): the exit status of
 * the one asked for, or -1 when none was. extra: arguments are left after the options. */
static int tool_mode(const worker_args_t *a, int extra, const char *onnx_case, const char *check_onnx, long check_mb,
                     double netprobe_s)
{
    if (onnx_case) {
        if (extra || a->spec_path || check_onnx) {
            fprintf(stderr, "pacer-worker: --onnx-case takes one directory and nothing else\n");
            return 2;
        }
        return onnx_case_run(onnx_case);
    }
    if (check_onnx) {
        if (extra || a->spec_path) {
            fprintf(stderr, "pacer-worker: --check-onnx takes one file and no spec\n");
            return 2;
        }
        check_onnx_limits(check_onnx, check_mb);
        return modelfetch_check(check_onnx);
    }
    if (netprobe_s > 0) {
        if (extra || a->spec_path) {
            fprintf(stderr, "pacer-worker: --netprobe takes no spec and no other argument\n");
            return 2;
        }
        return netprobe_run(netprobe_s);
    }
    return -1;
}

static int args_refused(const worker_args_t *a, int extra);

int main(int argc, char **argv)
{
    /* OpenBLAS's kernels by the CPU's flags, not its model number (blas_core.h): before
     * anything, since it may run this program again */
    blas_core_choose(argv);
    static worker_args_t args = {.lr_scale = 1.0, .fence = -1, .resume_before = -1};
    worker_args_t *a = &args;
    long bench_steps = 0;
    double netprobe_s = 0;
    const char *check_onnx = NULL, *onnx_case = NULL;
    long check_mb = 0;
    int c;
    while ((c = getopt_long(argc, argv, "", OPTIONS, NULL)) != -1) {
        switch (c) {
        case 's': a->spec_path = optarg; break;
        case 'o': a->summary_path = optarg; break;
        case 'm': a->metrics_path = optarg; break;
        case 'D': a->redis_url = optarg; break;
        case 'J': a->job_id = optarg; break;
        case 'A': a->redis_password_file = optarg; break;
        case 'b':
            if (numarg_long(optarg, 1, BENCHMARK_MAX_STEPS, &bench_steps))
                return bad_number("benchmark", optarg, "a step count", 1, BENCHMARK_MAX_STEPS);
            break;
        case 'N':
            if (numarg_double(optarg, NETPROBE_MIN_S, NETPROBE_MAX_S, &netprobe_s))
                return bad_number("netprobe", optarg, "a time in seconds", NETPROBE_MIN_S, NETPROBE_MAX_S);
            break;
        case 'w': {
            long n;
            if (numarg_long(optarg, 1, SPEC_MAX_WORKERS + 1, &n))
                return bad_number("world", optarg, "a process count", 1, SPEC_MAX_WORKERS + 1);
            a->world = (int)n;
            break;
        }
        case 'r': a->resume = 1; break;
        case 'R': a->resume_from = optarg; break;
        case 1000: a->adopt = optarg; break;
        case 1001: a->export_st = optarg; break;
        case 1002: a->model_st = optarg; break;
        case 1003: a->st_names = optarg; break;
        case 1004: a->st_dtype = optarg; break;
        case 'E':
            if (numarg_long(optarg, 1, RESUME_BEFORE_MAX, &a->resume_before))
                return bad_number("resume-before", optarg, "a global step", 1, (double)RESUME_BEFORE_MAX);
            break;
        case 'L':
            if (numarg_double(optarg, LR_SCALE_MIN, 1.0, &a->lr_scale))
                return bad_number("lr-scale", optarg, "a factor", LR_SCALE_MIN, 1.0);
            break;
        case 'F':
            if (numarg_long(optarg, 0, CKPTDIR_FENCE_MAX, &a->fence))
                return bad_number("fence", optarg, "a fence generation", 0, (double)CKPTDIR_FENCE_MAX);
            break;
        case 'S':
            if (numarg_long(optarg, 1, STOP_AFTER_MAX, &a->opts.stop_after_steps))
                return bad_number("stop-after-steps", optarg, "a global step", 1, STOP_AFTER_MAX);
            break;
        case 'B': a->opts.batch_plan = optarg; break;
        case 'P': a->opts.ps_round_robin = 1; break;
        case 'T':
            if (numarg_double(optarg, TIME_BUDGET_MIN, TIME_BUDGET_MAX, &a->opts.time_budget_s))
                return bad_number("time-budget", optarg, "a time in seconds", TIME_BUDGET_MIN, TIME_BUDGET_MAX);
            break;
        case 'K': a->opts.comm_baseline = 1; break;
        case 'H': {
            long n;
            if (numarg_long(optarg, 1, HPSGD_ROUND_MAX, &n))
                return bad_number("hpsgd-round-steps", optarg, "a step count", 1, HPSGD_ROUND_MAX);
            a->opts.hpsgd_round_steps = (int)n;
            break;
        }
        case 'W': a->opts.weight_digest = optarg; break;
        case 'X': a->trace_path = optarg; break;
        case 'O': a->export_onnx = optarg; break;
        case 'Q': a->export_onnx_init = optarg; break;
        case 'Y': a->model_onnx = optarg; break;
        case 'C': a->data_cache = optarg; break;
        case 'U':
            if (a->ndata_roots == WORKER_DATA_ROOTS_MAX) {
                fprintf(stderr, "pacer-worker: --data-root: at most %d\n", WORKER_DATA_ROOTS_MAX);
                return 2;
            }
            a->data_roots[a->ndata_roots++] = optarg;
            break;
        case 'M': a->models_dir = optarg; break;
        case 'k': check_onnx = optarg; break;
        case 'G':
            if (numarg_long(optarg, 1, CHECK_MEMORY_MAX_MB, &check_mb))
                return bad_number("check-memory-mb", optarg, "a size in MiB", 1, CHECK_MEMORY_MAX_MB);
            break;
        case 'j': onnx_case = optarg; break;
        case 'V': version(); return 0;
        case 'Z': capabilities(); return 0;
        case 'l': onnx_print_supported_ops(stdout); return 0;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    int tool = tool_mode(a, optind != argc, onnx_case, check_onnx, check_mb, netprobe_s);
    if (tool >= 0) return tool;
    if (args_refused(a, optind != argc)) return 2;

    /* A spec's "model": {"onnx": PATH} is imported into the catalog while the spec is
     * read, before its model and data set are paired. */
    modelfetch_configure(a->models_dir, a->redis_url, a->redis_password_file);
    spec_set_onnx_loader(modelfetch_loader);
    if (bench_steps) return benchmark_run(a->spec_path, bench_steps, a->summary_path);
    return run(a);
}

/* The options that do not go together, and the spec that must be there: 1 (said on
 * stderr) when the command line is refused. extra: an argument that is no option. */
static int args_refused(const worker_args_t *a, int extra)
{
    if ((a->redis_url != NULL) != (a->job_id != NULL) || (a->redis_password_file && !a->redis_url)) {
        fprintf(stderr, "pacer-worker: --redis and --job go together (and --redis-password-file needs them)\n");
        return 1;
    }
    if (a->adopt && (!a->resume || a->resume_from || a->resume_before > 0)) {
        fprintf(stderr, "pacer-worker: --adopt-checkpoint goes with --resume (it is taken only when the job has no "
                        "checkpoint of its own), not with --resume-from or --resume-before\n");
        return 1;
    }
    if (a->resume_before > 0 && (a->resume_from || a->resume)) {
        fprintf(stderr,
                "pacer-worker: --resume-before chooses the checkpoint itself: not with --resume or --resume-from\n");
        return 1;
    }
    st_out_t o;
    char err[200];
    if ((a->st_names || a->st_dtype) && !a->export_st) {
        fprintf(stderr, "pacer-worker: --safetensors-names and --safetensors-dtype go with --export-safetensors\n");
        return 1;
    }
    if (st_out_parse(a->st_names, a->st_dtype, &o, err, sizeof err) != 0) {
        fprintf(stderr, "pacer-worker: --safetensors-%s\n", err); /* err: "names: ..." */
        return 1;
    }
    if (!a->spec_path || extra) {
        fprintf(stderr, "pacer-worker: %s\n", a->spec_path ? "unexpected argument" : "--spec FILE is required");
        usage(stderr);
        return 1;
    }
    return 0;
}

/* worker_t.report_health through the Redis sink (the node hash's health field). */
static void report_health_redis(worker_t *w, const char *json) { redis_report_health(w->assignment_ctx, json); }
/* worker_t.report_shard through the Redis sink (the node hash's shard fields). */
static void report_shard_redis(worker_t *w, long long params, long long state, long long grad)
{
    redis_report_shard(w->assignment_ctx, params, state, grad);
}

static int coordinator_assignment(worker_t *w, int *out)
{
    int64_t version;
    return redis_report_assignment(w->assignment_ctx, &version, out, w->nworkers) == 1;
}

/* Every rank reaches the same verdict: a failure on any rank (a data file missing on one
 * host, say) stops all of them instead of leaving the others blocked in a collective. */
static int agree(int use_mpi, int failed)
{
    if (!use_mpi) return failed;
    int any = 0;
    MPI_CHECK(MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
    return any;
}

/* The notice flags of every rank combined (worker_t.notice_agree): the largest. */
static int notice_agree_mpi(worker_t *w, int flag)
{
    (void)w;
    int any = 0;
    MPI_CHECK(MPI_Allreduce(&flag, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
    return any;
}

/* A figure for the final line: v in fmt (nan or inf when a measured figure diverged), or
 * "-" when it was not measured. */
static void figure(char *out, size_t len, const char *fmt, double v, int measured)
{
    if (measured) snprintf(out, len, fmt, v);
    else snprintf(out, len, "-");
}

/* --export-onnx: rank 0's weights (the parameter server's, or a synchronous job's root's)
 * into the spec's ONNX graph, or a built-in model's graph from its layers. 0, or -1 after
 * saying why. */
static int export_onnx(worker_t *w, const worker_args_t *a, const char *path)
{
    char err[1024];
    worker_model_to_host(w);
    if (worker_export_onnx(w, path, err, sizeof err) != 0) {
        fprintf(stderr, "pacer-worker: --export-onnx: %s\n", err);
        return -1;
    }
    /* --model-onnx is the coordinator's copy, rewritten quietly: a job's log ends with its
     * final line (pacer logs --tail 1), not with where the daemon keeps its files. */
    if (path != a->model_onnx)
        fprintf(stderr, "exported the %s model to %s\n", path == a->export_onnx_init ? "initial" : "trained", path);
    return 0;
}

/* --export-safetensors (and the coordinator's --model-safetensors copy, rewritten quietly):
 * rank 0's weights as export_onnx's. 0, or -1 after saying why. */
static int export_st(worker_t *w, const worker_args_t *a, const char *path)
{
    char err[1024];
    st_out_t o;
    /* the coordinator's copy stays the model's own names in F32: what init.job and the GET's
     * conversions read */
    if (st_out_parse(path == a->model_st ? NULL : a->st_names, path == a->model_st ? NULL : a->st_dtype, &o, err,
                     sizeof err) != 0)
        return -1; /* args_refused checked them */
    worker_model_to_host(w);
    if (worker_export_safetensors(w, path, &o, err, sizeof err) != 0) {
        fprintf(stderr, "pacer-worker: --%s-safetensors: %s\n", path == a->model_st ? "model" : "export", err);
        return -1;
    }
    if (path != a->model_st) fprintf(stderr, "exported the trained weights to %s\n", path);
    return 0;
}

/* ---- run: a training run as named phases over one state ------------------------------- */

/* One run's state: the phases fill it in order. Static storage (main's), not the stack:
 * the spec and the worker are large. */
typedef struct {
    const worker_args_t *a;
    char err[1024];
    job_spec_t spec;
    worker_t w;
    metrics_reporter_t reporter;
    trace_ring_t ring;
    int rank, world, use_mpi;
    int async, nworkers;
    /* algorithm.shard: the world ranks on this host and every rank's available memory
     * (split "memory"), for the memory check (shard_host_ranks) */
    int host_ids[SPEC_MAX_WORKERS];
    double host_mem[SPEC_MAX_WORKERS];
} run_t;

/* Only rank 0 explains failures that every rank sees the same way. */
#define SAY(...)                                        \
    do {                                                \
        if (r->rank == 0) fprintf(stderr, __VA_ARGS__); \
    } while (0)

/* What a phase returns: go on to the next, or the process's exit status (the run ends:
 * run tears the worker down and finalizes MPI). */
#define PHASE_GO_ON (-1)

static int phase_mpi(run_t *r)
{
    r->rank = 0;
    r->world = 1;
    r->use_mpi = comm_launched_by_mpirun();
    /* The notice handler first of all: a SIGTERM or forwarded SIGUSR1 while the attempt
     * starts (MPI_Init, the data, the model, the resume can take minutes) would otherwise
     * kill the rank by the default action, a failure with nothing saved. Heard now, it
     * waits for the first step boundary, where every rank agrees on it through the
     * step's collective as on any notice (worker_step_end): nothing here agrees early, so
     * a rank that heard one cannot leave the others blocked. Every rank of the
     * synchronous loop and the parameter server reads it there; the server's workers
     * take it too and leave the decision to the server (one that reaches only a worker
     * is not acted on, rather than the worker's death). A simulated run hears none. */
    if (!sim_active() && sigterm_install() != 0)
        fprintf(stderr, "pacer-worker: no SIGTERM handler: %s\n", strerror(errno));
    if (r->use_mpi) {
        int provided;
        MPI_CHECK(MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided));
        MPI_Comm_rank(MPI_COMM_WORLD, &r->rank);
        MPI_Comm_size(MPI_COMM_WORLD, &r->world);
        /* Open MPI's MPI_Init leaves SIGTERM and SIGUSR1 alone today (it takes SIGSEGV
         * and the like for its stack traces); should another MPI take them, ours again. */
        if (!sim_active() && !sigterm_installed() && sigterm_install() != 0)
            fprintf(stderr, "pacer-worker: rank %d: no SIGTERM handler: %s\n", r->rank, strerror(errno));
    }
    return PHASE_GO_ON;
}

/* The spec, checked against this world; every rank reads it and reaches the same verdict. */
static int phase_spec(run_t *r)
{
    const worker_args_t *a = r->a;
    job_spec_t *spec = &r->spec;
    /* The data roots' sets in the catalog, as the coordinator lists them, so that the
     * spec may name one (common/spec.c resolves the name to its format and path). */
    if (a->ndata_roots > 0 && dataroot_set(a->data_roots, a->ndata_roots, r->err, sizeof r->err) != 0) {
        /* what this worker may read of users' data (common/dataroot.h; none given: all) */
        SAY("pacer-worker: %s\n", r->err);
        return 2;
    }
    /* The roots' sets are probed (listing every image folder) only when the spec needs
     * the catalog's user entries: a spec the coordinator stored has the format and path
     * already, and it passes its roots to every rank of every launch. */
    int loaded = a->ndata_roots > 0 && spec_load_file(a->spec_path, spec, r->err, sizeof r->err) == 0;
    if (!loaded && a->ndata_roots > 0) userdata_sync(a->data_roots, a->ndata_roots, NULL);
    if (!loaded && spec_load_file(a->spec_path, spec, r->err, sizeof r->err) != 0) {
        SAY("pacer-worker: %s\n", r->err);
        return 2;
    }
    char warn[4][SPEC_WARNING_MAX];
    int nw = spec_warnings(spec, warn, 4);
    for (int i = 0; i < nw; i++) SAY("pacer-worker: warning: %s\n", warn[i]);
    /* The cache directory the coordinator (or the user) gave, unless the spec names one:
     * where things are, not what is trained (dataset.cache_dir is not in the spec hash). */
    if (!spec->dataset.cache_dir[0] && a->data_cache)
        snprintf(spec->dataset.cache_dir, sizeof spec->dataset.cache_dir, "%s", a->data_cache);
    /* The kernels' threads (kernels/cpu/parallel.h), before the model is built: its
     * workspace is sized for them. Simulated: one, because SMPI times only the rank's own
     * thread. */
    if (par_set_threads(sim_active() ? 1 : spec->threads) != 0)
        SAY("pacer-worker: warning: cannot start %d threads; the CPU kernels run on one\n", spec->threads);
    /* The matrix products' precision, the process's like its threads (kernels/cpu/matmul.h). */
    if (cpu_isa_env_error()) {
        SAY("pacer-worker: %s\n", cpu_isa_env_error());
        return 2;
    }
    mm_precision_t prec = MM_FP32;
    mm_precision_parse(spec->precision, &prec);
    mm_set_precision(prec);
    r->async = spec_is_async(spec);
    int need = r->async ? spec->workers + 1 : spec->workers;
    if (r->async && need < 2) {
        SAY("pacer-worker: algorithm %s needs a parameter server and at least one worker (2 processes)\n",
            spec->algorithm.name);
        return 2;
    }
    if (comm_check_world(spec, r->world, a->world, r->err, sizeof r->err) != 0) {
        SAY("pacer-worker: %s\n", r->err);
        return 2;
    }
    return PHASE_GO_ON;
}

/* A sharded job's ranks hold unequal ranges (a list of weights, split "memory"): the world
 * ranks on this host (hc's), and for split "memory" every rank's MemAvailable shared by
 * its host's ranks, what worker/shard.c will split by (it reads MemAvailable again once
 * the data are loaded: the same on every rank, so the ranges stay about the same), so that
 * the memory check counts the ranges this host's ranks will get, not the job's largest: a
 * small host whose ranks get small ranges can take its part of a job that would not fit it
 * split evenly. Collective over the world and hc (every rank takes the same branch: the
 * spec and the world are the same on all). NULL where it does not apply. */
static const worker_host_ranks_t *shard_host_ranks(run_t *r, MPI_Comm hc, int host_ranks, worker_host_ranks_t *known)
{
    if (r->spec.algorithm.shard.stage <= 0 || r->async || r->nworkers != r->world || r->world > SPEC_MAX_WORKERS ||
        host_ranks > r->world)
        return NULL;
    MPI_CHECK(MPI_Allgather(&r->rank, 1, MPI_INT, r->host_ids, 1, MPI_INT, hc));
    known->rank = r->rank;
    known->ids = r->host_ids;
    known->mem = NULL;
    if (strcmp(r->spec.algorithm.shard.split, "memory") == 0) {
        double mine = memest_meminfo("MemAvailable");
        mine = mine > 0 ? mine / host_ranks : 0; /* unknown anywhere: an even split */
        MPI_CHECK(MPI_Allgather(&mine, 1, MPI_DOUBLE, r->host_mem, 1, MPI_DOUBLE, MPI_COMM_WORLD));
        known->mem = r->host_mem;
    }
    return known;
}

/* Memory, data, model and the batch plan; then what the worker takes from the options. */
static int phase_setup(run_t *r)
{
    const worker_args_t *a = r->a;
    worker_t *w = &r->w;
    /* Under MPI the world says how many compute (fewer than the spec's workers after an
     * elastic restart, up to max_workers after a grow: comm_check_world); a process on its
     * own is the spec's one worker. */
    r->nworkers = r->use_mpi ? (r->async ? r->world - 1 : r->world) : r->spec.workers;
    /* Memory first, before the data sets and the model are allocated: a job too big for
     * this host is refused with its figures (exit 2), not killed by the kernel half-way.
     * MemAvailable is the machine's, shared by the ranks on it; a simulation's ranks share
     * one process, its data and (skip_compute) a batch-1 model, so it is not checked. */
    int host_ranks = 1;
    worker_host_ranks_t known_store;
    const worker_host_ranks_t *known = NULL;
    if (r->use_mpi && !sim_active()) {
        MPI_Comm hc;
        comm_split_machine(r->rank, &hc);
        MPI_Comm_size(hc, &host_ranks);
        known = shard_host_ranks(r, hc, host_ranks, &known_store);
        MPI_Comm_free(&hc);
    }
    int failed = !sim_active() &&
                 worker_check_memory(&r->spec, r->nworkers, host_ranks, known, r->err, sizeof r->err) != 0;
    if (!failed) failed = worker_setup_world(w, &r->spec, r->rank, r->world, r->nworkers, r->err, sizeof r->err) != 0;
    if (failed) fprintf(stderr, "pacer-worker%s: %s\n", r->rank ? " (rank>0)" : "", r->err);
    if (!failed && a->opts.batch_plan && worker_apply_batch_plan(w, a->opts.batch_plan, r->err, sizeof r->err) != 0) {
        failed = 1;
        SAY("pacer-worker: %s\n", r->err);
    }
    /* A notice heard during the set-up that stopped it (a long tokenization gives up for
     * one: textdata.h) is a stop on notice, to be resumed, not bad input: every rank asks,
     * so every rank exits alike. */
    if (agree(r->use_mpi, failed)) return agree(r->use_mpi, sigterm_heard() != 0) ? NOTICE_EXIT_STATUS : 2;
    w->use_mpi = r->use_mpi;
    if (r->use_mpi) w->agree = comm_agree;
    /* a simulated run hears no notice: no all-reduce in its simulated steps */
    if (r->use_mpi && !sim_active()) w->notice_agree = notice_agree_mpi;
    w->lr_scale = a->lr_scale;
    w->fence = a->fence;
    if (a->lr_scale != 1.0) SAY("learning rate x%g of the spec's (--lr-scale)\n", a->lr_scale);
    if (emulate_check(w) != 0) {
        fprintf(stderr, "pacer-worker: out of memory\n");
        return 1;
    }
    return PHASE_GO_ON;
}

/* --adopt-checkpoint: taken when the job has no checkpoint of its own (rank 0 looks, every
 * rank follows), so a relaunch after the job's first checkpoint resumes its own. */
static const char *adopted(run_t *r)
{
    int take = 0;
    if (r->a->adopt && r->rank == 0) {
        char own[1100];
        struct stat st;
        worker_checkpoint_path(&r->w, own, sizeof own);
        take = stat(own, &st) != 0;
    }
    if (r->a->adopt && r->use_mpi) MPI_CHECK(MPI_Bcast(&take, 1, MPI_INT, 0, MPI_COMM_WORLD));
    if (!take) return NULL;
    /* the file was written under another spec (a PBT trial's, other optimizer values):
     * every check but the spec's fingerprint still applies */
    r->w.adopt_any_spec = 1;
    if (r->rank == 0) SAY("adopting %s: another run's checkpoint, under this job's spec\n", r->a->adopt);
    return r->a->adopt;
}

/* --resume, --resume-from, --resume-before, --adopt-checkpoint: one checkpoint that every
 * rank reads. */
static int phase_resume(run_t *r)
{
    const worker_args_t *a = r->a;
    worker_t *w = &r->w;
    char *err = r->err;
    const size_t errlen = sizeof r->err;
    int rank = r->rank, use_mpi = r->use_mpi, failed = 0;
    int before = a->resume_before > 0;
    const char *from = a->resume_from ? a->resume_from : adopted(r);
    if (!from && !a->resume && !before) return PHASE_GO_ON;
    char path[1100];
    if (from) snprintf(path, sizeof path, "%s", from);
    else worker_checkpoint_path(w, path, sizeof path);
    /* Rank 0 decides which checkpoint (--resume: the latest that it can use, else an
     * older one the job kept; none: start fresh): a rank that cannot see it (a
     * directory not shared with its host) must not start fresh beside ranks that
     * resume. Every other rank then loads that file, and one that cannot stops them all. */
    int got = 1; /* 1: resumed (rank 0), 0: no checkpoint, -1: none usable */
    if (from) failed = worker_resume(w, path, err, errlen) != 0;
    else if (rank == 0 && before) got = worker_resume_before(w, a->resume_before, path, sizeof path, err, errlen);
    else if (rank == 0) got = worker_resume_latest(w, path, sizeof path, err, errlen);
    w->adopt_any_spec = 0; /* the job's own checkpoints from here on */
    if (use_mpi && !from) {
        MPI_CHECK(MPI_Bcast(&got, 1, MPI_INT, 0, MPI_COMM_WORLD));
        MPI_CHECK(MPI_Bcast(path, (int)sizeof path, MPI_CHAR, 0, MPI_COMM_WORLD));
        if (rank != 0 && got == 1) failed = worker_resume(w, path, err, errlen) != 0;
    }
    if (rank == 0 && got < 0) failed = 1;
    int exists = got != 0;
    if (failed && rank == 0) fprintf(stderr, "pacer-worker: %s\n", err);
    else if (failed)
        fprintf(stderr, "pacer-worker: rank %d: %s (rank 0 resumes from it: every rank must read the same checkpoint)\n",
                rank, err);
    if (!exists && before) SAY("no checkpoint before step %ld: starting afresh\n", a->resume_before);
    else if (!exists) SAY("no checkpoint at %s: starting fresh\n", path);
    int any = agree(use_mpi, failed);
    if (any && !failed) SAY("pacer-worker: not every rank could read %s: stopping\n", path);
    if (any) return 2;
    if (use_mpi && exists) {
        /* Copies of the checkpoint that differ between hosts would start the ranks at
         * different steps. */
        long step[2] = {w->global_step, -w->global_step}, ext[2];
        MPI_CHECK(MPI_Allreduce(step, ext, 2, MPI_LONG, MPI_MAX, MPI_COMM_WORLD));
        if (ext[0] != -ext[1]) {
            SAY("pacer-worker: the ranks' copies of %s disagree: steps %ld to %ld; every rank must read the same checkpoint\n",
                path, -ext[1], ext[0]);
            return 2;
        }
    }
    if (exists) SAY("resumed from %s at step %ld (epoch %ld)\n", path, w->global_step, w->epoch + 1);
    /* --resume-before: the checkpoint just taken (or the fresh start) becomes the
     * latest again, so those written since (by the run that collapsed) are dropped
     * by the retention rule and a later --resume cannot take one of them. */
    if (before && rank == 0 && r->spec.checkpoint.every_steps > 0 && worker_save_checkpoint(w, err, errlen) != 0) {
        fprintf(stderr, "pacer-worker: %s\n", err);
        failed = 1;
    }
    return agree(use_mpi, failed) ? 1 : PHASE_GO_ON;
}

/* The spec's init: a fresh run's starting weights from another run's (every rank reads
 * the same file); a resumed run has its own. */
static int phase_init(run_t *r)
{
    worker_t *w = &r->w;
    int failed = 0;
    if (w->global_step == 0 && w->epoch == 0) {
        failed = worker_init_weights(w, &w->init_report, r->err, sizeof r->err) != 0;
        if (failed) fprintf(stderr, "pacer-worker%s: %s\n", r->rank ? " (rank>0)" : "", r->err);
        json_t *rep = w->init_report;
        if (rep)
            SAY("init: %lld tensors from %s (%zu missing, %zu unexpected, %zu of another shape)\n",
                (long long)json_integer_value(json_object_get(rep, "loaded")),
                json_string_value(json_object_get(rep, "source")), json_array_size(json_object_get(rep, "missing")),
                json_array_size(json_object_get(rep, "unexpected")),
                json_array_size(json_object_get(rep, "mismatched")));
    }
    return agree(r->use_mpi, failed) ? 2 : PHASE_GO_ON;
}

/* --export-onnx-init: rank 0's initial weights. */
static int phase_export_init(run_t *r)
{
    r->w.model_onnx_out = r->a->model_onnx;
    r->w.model_st_out = r->a->model_st;
    int failed = r->rank == 0 && r->a->export_onnx_init && export_onnx(&r->w, r->a, r->a->export_onnx_init) != 0;
    return agree(r->use_mpi, failed) ? 1 : PHASE_GO_ON;
}

/* --trace: the ring, allocated here once (recording in a step only stores into it). */
static int phase_trace(run_t *r)
{
    int failed = 0;
    if (r->a->trace_path) {
        failed = trace_ring_init(&r->ring) != 0;
        if (failed) fprintf(stderr, "pacer-worker: rank %d: --trace: out of memory\n", r->rank);
        else r->w.trace = r->w.phases.ring = &r->ring;
    }
    return agree(r->use_mpi, failed) ? 1 : PHASE_GO_ON;
}

/* The metrics sinks (--metrics file, --redis) and their reporter thread. */
static int phase_sinks(run_t *r)
{
    const worker_args_t *a = r->a;
    worker_t *w = &r->w;
    metrics_sink_t *sinks[2];
    int nsinks = 0, failed = 0;
    if (a->metrics_path && !(sinks[nsinks++] = metrics_file_sink(a->metrics_path, r->err, sizeof r->err))) failed = 1;
    if (!failed && a->redis_url) {
        redis_url_t url;
        sinks[nsinks] = NULL;
        if (redis_url_parse(a->redis_url, &url, r->err, sizeof r->err) == 0 &&
            (!a->redis_password_file ||
             redis_url_read_password(&url, a->redis_password_file, r->err, sizeof r->err) == 0))
            sinks[nsinks] = redis_report_sink_url(&url, a->job_id, r->rank, r->err, sizeof r->err);
        memset(url.password, 0, sizeof url.password);
        if (!sinks[nsinks]) failed = 1;
        else {
            /* Rank 0 reads the coordinator's batch assignments at re-plan points. */
            w->assignment_ctx = sinks[nsinks++];
            w->assignment_hook = coordinator_assignment;
            w->report_health = report_health_redis;
            w->report_shard = report_shard_redis;
            /* A GPU rank's utilisation and memory go with its node hash; NVML is loaded
             * only here, and its absence leaves them out without a word. */
            if (w->gpu) redis_report_watch_gpu(w->assignment_ctx, nvml_open(w->gpu_device));
            /* Long waits in collectives, on real time only: a simulated rank's mark is
             * on simulated time, which the sink's thread does not share. */
            if (!sim_active()) redis_report_watch_wait(w->assignment_ctx, &w->wait);
            redis_report_emulation(w->assignment_ctx, w->emulation.host_demand, w->emulation.host_cores);
            redis_report_total_steps(w->assignment_ctx, w->total_steps);
        }
    }
    if (!failed && nsinks && metrics_start(&r->reporter, a->job_id ? a->job_id : r->spec.name, sinks, nsinks) != 0) {
        snprintf(r->err, sizeof r->err, "cannot start the metrics reporter thread");
        failed = 1;
    }
    if (failed) {
        fprintf(stderr, "pacer-worker: %s\n", r->err);
        return 2;
    }
    if (nsinks) w->metrics = &r->reporter;
    if (w->report_health && w->health.state == HEALTH_OK) {
        /* The coordinator shows the job as judged (and healthy) from the start. */
        char json[REDIS_REPORT_HEALTH_MAX];
        if (health_to_json(&w->health, json, sizeof json) > 0) w->report_health(w, json);
    }
    return PHASE_GO_ON;
}

/* The lines that say what is trained, then the training. */
static int phase_train(run_t *r)
{
    const job_spec_t *spec = &r->spec;
    worker_t *w = &r->w;
    SAY("training %s on %s with %s: %zu parameters, %d train / %d test samples, %d worker(s) x batch %d, "
        "%ld steps per epoch, %d epochs\n",
        spec->model, spec_dataset_is_user(spec) ? spec->dataset.path : spec->dataset.name, spec->algorithm.name,
        model_param_count(w->model), w->train.n, w->test.n, spec->workers, spec->batch_size, w->steps_per_epoch,
        spec->epochs);
    if (w->data.cache_path[0])
        SAY("data: %s cache %s (%.1f MB%s)\n", w->data.cache_built ? "decoded into" : "mapped from", w->data.cache_path,
            (double)w->data.cache_bytes / 1e6, w->data.cache_built ? "" : ", nothing decoded");
    if (w->nworkers < spec->workers)
        SAY("elastic: %d of the spec's %d workers share its global batch of %d\n", w->nworkers, spec->workers,
            w->global_batch);
    else if (w->nworkers > spec->workers)
        SAY("elastic: grown to %d workers (the spec's %d, max_workers %d) sharing its global batch of %d\n",
            w->nworkers, spec->workers, spec->max_workers, w->global_batch);
    int rc = worker_train(w, &r->a->opts, r->err, sizeof r->err);
    if (w->metrics) {
        metrics_stop(w->metrics, 5.0);
        if (r->reporter.dropped)
            fprintf(stderr, "metrics: %llu records dropped (ring full)\n", (unsigned long long)r->reporter.dropped);
        w->metrics = NULL;
    }
    if (rc != 0) {
        fprintf(stderr, "pacer-worker: rank %d: %s\n", r->rank, r->err);
        if (r->use_mpi) MPI_Abort(MPI_COMM_WORLD, 1);
        r->use_mpi = 0; /* aborted: nothing to finalize */
        return 1;
    }
    return PHASE_GO_ON;
}

static void notice_leave(run_t *r, int who, const char *host);

/* After a run stopped on notice (every rank, one reduction: the parameter server's
 * workers learn it here): the heard rank's host on rank 0, which leaves the note beside
 * the checkpoint (common/notice.h) for the coordinator. 1 when it stopped so. */
static int notice_report(run_t *r)
{
    worker_t *w = &r->w;
    if (!agree(r->use_mpi, w->stop == STOP_NOTICE)) return 0;
    int who = w->notice_rank;
    if (r->use_mpi) MPI_CHECK(MPI_Bcast(&who, 1, MPI_INT, 0, MPI_COMM_WORLD));
    char host[NOTICE_HOST_MAX];
    snprintf(host, sizeof host, "%s", w->record.host);
    if (r->use_mpi && who > 0 && who < r->world) MPI_CHECK(MPI_Bcast(host, sizeof host, MPI_CHAR, who, MPI_COMM_WORLD));
    host[sizeof host - 1] = 0;
    if (r->rank == 0) notice_leave(r, who, host);
    /* mpirun ends every rank once one exits non-zero: none exits before the note is written */
    agree(r->use_mpi, 0);
    return 1;
}

/* Rank 0's part of notice_report: the note beside the checkpoint and the last line. */
static void notice_leave(run_t *r, int who, const char *host)
{
    worker_t *w = &r->w;
    const job_spec_t *spec = &r->spec;
    notice_t n = {.signal = w->notice_signal,
                  .rank = who < 0 ? 0 : who,
                  .at_step = w->notice_step,
                  .checkpoint_step = w->ckpt_step};
    snprintf(n.host, sizeof n.host, "%s", host);
    char path[SPEC_PATH_MAX + SPEC_NAME_MAX + 16];
    if (notice_path(path, sizeof path, spec->checkpoint.dir, spec->name) != 0 ||
        notice_write(path, &n, r->err, sizeof r->err) != 0)
        fprintf(stderr, "pacer-worker: the notice's note: %s\n", r->err);
    fprintf(stderr, "notice: stopped after step %lld with the checkpoint of step %lld: exit status %d\n", n.at_step,
            n.checkpoint_step, NOTICE_EXIT_STATUS);
}

/* The verdict, the trace, the exports, the final line and the summary: the exit status. */
static int phase_report(run_t *r)
{
    const worker_args_t *a = r->a;
    const job_spec_t *spec = &r->spec;
    worker_t *w = &r->w;
    /* A collapse that on_collapse fails or restarts for is every rank's exit status 3
     * (rank 0 judged it: one reduction, before the summary's gather). */
    int collapsed = w->stop == STOP_COLLAPSE ||
                    (w->health.state == HEALTH_COLLAPSED && strcmp(spec->on_collapse, "continue") != 0);
    collapsed = agree(r->use_mpi, collapsed);
    /* A notice: the checkpoint is written; no final line or summary (the run resumes). */
    if (!collapsed && notice_report(r)) return NOTICE_EXIT_STATUS;
    if (collapsed) SAY("collapse: on_collapse %s: exit status 3\n", spec->on_collapse);
    int status = collapsed ? 3 : 0;
    if (w->trace) {
        if (comm_write_trace(w, a->trace_path, r->err, sizeof r->err) != 0) {
            fprintf(stderr, "pacer-worker: %s\n", r->err);
            status = 1;
        }
        w->trace = w->phases.ring = NULL;
        trace_ring_free(&r->ring);
    }
    if (r->rank == 0 && a->export_onnx && export_onnx(w, a, a->export_onnx) != 0) status = 1;
    /* --model-onnx: a copy for the coordinator to serve; like the one at checkpoint time
     * (worker_save_checkpoint), a failure is said but costs the download, not the job */
    if (r->rank == 0 && a->model_onnx) export_onnx(w, a, a->model_onnx);
    if (r->rank == 0 && a->export_st && export_st(w, a, a->export_st) != 0) status = 1;
    if (r->rank == 0 && a->model_st) export_st(w, a, a->model_st);
    status = agree(r->use_mpi, status); /* the summary's exit_status is every rank's */
    json_t *per_rank = NULL;
    if (r->use_mpi) {
        per_rank = comm_gather_ranks(w, MPI_COMM_WORLD);
    } else {
        per_rank = json_array();
        json_array_append_new(per_rank, worker_rank_json(w));
    }
    if (r->rank == 0) {
        if (w->stop != STOP_TEST_HOOK) {
            /* What the run did not measure is "-" (a simulation that skipped the compute,
             * a run resumed after its last epoch: no training time), never 0 or nan. */
            char acc[32], tl[32], trl[32], sps[32];
            int skip = sim_skip_compute(w), tested = w->eval_step >= 0 && !skip;
            figure(acc, sizeof acc, "%.4f", w->test_accuracy, tested);
            figure(tl, sizeof tl, "%.4f", w->test_loss, tested);
            figure(trl, sizeof trl, "%.4f", w->train_loss, !skip);
            /* a language model's sample is a window of block tokens: its figures in tokens */
            const int block = w->train.tok ? w->train.tok->block : 1;
            figure(sps, sizeof sps, "%.0f",
                   w->loop_s > 0 ? (double)worker_train_samples(per_rank) * block / w->loop_s : 0.0, w->loop_s > 0);
            if (w->train.tok) {
                char ppl[32];
                figure(ppl, sizeof ppl, "%.2f", exp(w->test_loss), tested && isfinite(w->test_loss));
                printf("final next_token_accuracy %s test_loss %s test_perplexity %s train_loss %s (%.1f s, %s "
                       "tokens/s)\n",
                       acc, tl, ppl, trl, w->wall_s, sps);
            } else {
                printf("final test_accuracy %s test_loss %s train_loss %s (%.1f s, %s samples/s)\n", acc, tl, trl,
                       w->wall_s, sps);
            }
        }
        if (a->summary_path && worker_write_summary(w, a->summary_path, per_rank, status, r->err, sizeof r->err) != 0) {
            fprintf(stderr, "pacer-worker: %s\n", r->err);
            status = 1;
        }
    }
    json_decref(per_rank);
    return status;
}

/* The start-up phases in order, each ending in an agreement of every rank where it can
 * fail on one; the last one's status is the run's. */
static const struct {
    const char *name;
    int (*fn)(run_t *r);
} RUN_PHASES[] = {
    /* one phase a line, in order */
    /* clang-format off */
    {"mpi", phase_mpi},
    {"spec", phase_spec},
    {"setup", phase_setup},
    {"resume", phase_resume},
    {"init", phase_init},
    {"export-init", phase_export_init},
    {"trace", phase_trace},
    {"sinks", phase_sinks},
    {"train", phase_train},
    {"report", phase_report},
    /* clang-format on */
};

static int run(const worker_args_t *a)
{
    static run_t state;
    run_t *r = &state;
    r->a = a;
    int status = 0;
    for (size_t i = 0; i < sizeof RUN_PHASES / sizeof RUN_PHASES[0]; i++)
        if ((status = RUN_PHASES[i].fn(r)) != PHASE_GO_ON) break;
    /* the one cleanup, whichever phase ended the run */
    worker_teardown(&r->w);
    if (r->use_mpi) MPI_Finalize();
    return status;
}
