/* sim/pacer_sim.c - build/pacer-sim: runs a job spec on a simulated cluster.
 *
 *   pacer-sim --spec FILE --summary FILE [--metrics FILE] [options] [-- worker options]
 *
 * Reads the spec's "simulate" section, writes the SimGrid platform (generated, or the
 * one the spec names) and a hostfile that puts the parameter server (rank 0 of the
 * asynchronous algorithms) and each worker on its host, then runs the SMPI build of
 * pacer-worker (build-smpi/pacer-worker, `make smpi`) under smpirun with as many ranks
 * as a real run would have. The worker writes the usual summary plus "simulated": true
 * and "simulated_wall_s"; its times are simulated seconds.
 *
 * Exit status: the worker's (0 done, 1 training failed, 2 bad input), 2 for a bad
 * command line or spec here, 1 when smpirun cannot be started or SimGrid stops by itself. */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "modelfetch.h"
#include "onnx_import.h"
#include "platform.h"
#include "spec.h"
#include "userdata.h"
#include "version.h"

#define MAX_PASS 64
#define MAX_CFG 16
#define SIM_DATA_ROOTS_MAX 8

static const struct option OPTIONS[] = {
    {"spec", required_argument, NULL, 's'},
    {"summary", required_argument, NULL, 'o'},
    {"metrics", required_argument, NULL, 'm'},
    {"worker", required_argument, NULL, 'w'},
    {"smpirun", required_argument, NULL, 'r'},
    {"keep", required_argument, NULL, 'k'},
    {"cfg", required_argument, NULL, 'c'},
    {"log", no_argument, NULL, 'l'},
    {"dry-run", no_argument, NULL, 'n'},
    {"version", no_argument, NULL, 'V'},
    {"data-root", required_argument, NULL, 'U'},
    {"models-dir", required_argument, NULL, 'M'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: pacer-sim --spec FILE --summary FILE [--metrics FILE] [options] [-- worker options]\n"
               "\n"
               "Runs the job spec on the simulated cluster its \"simulate\" section describes\n"
               "(SimGrid SMPI; docs/JOB_SPEC.md, docs/ARCHITECTURE.md \"Simulation\").\n"
               "\n"
               "  --spec FILE       the job spec\n"
               "  --summary FILE    the job summary: as pacer-worker's, plus \"simulated\": true and\n"
               "                    \"simulated_wall_s\"; every time in it is simulated seconds\n"
               "  --metrics FILE    per-rank metrics records (JSON lines; \"time\" is simulated seconds)\n"
               "  --worker PATH     the SMPI build of pacer-worker (default: build-smpi/pacer-worker\n"
               "                    beside this program's build directory; `make smpi` builds it)\n"
               "  --smpirun PATH    SimGrid's launcher (default: smpirun on PATH)\n"
               "  --keep DIR        write the platform and hostfile into DIR and keep them\n"
               "  --cfg NAME:VALUE  a SimGrid setting for this run, after pacer-sim's own (so it\n"
               "                    wins); repeatable, e.g. --cfg smpi/bw-factor:0:0.956 to\n"
               "                    calibrate the network model (bench/sim_validate.sh)\n"
               "  --log             show SimGrid's own log lines (default: warnings only)\n"
               "  --data-root DIR   a directory of users' data sets, repeatable: the spec may name one\n"
               "                    by dataset.name (passed on to every rank)\n"
               "  --models-dir DIR  where uploaded models are stored as SHA256.onnx: a spec's\n"
               "                    {\"onnx\": NAME, \"sha256\": HEX} is read from there (passed on)\n"
               "  --dry-run         print the smpirun command instead of running it (with --keep,\n"
               "                    the platform and hostfile stay for a look)\n"
               "  -- ARGS           passed to every rank of pacer-worker (--redis URL --job ID,\n"
               "                    --stop-after-steps N, --time-budget S, --batch-plan B, ...)\n"
               "\n"
               "Exit status: the worker's (0 done, 1 training failed, 2 bad input); 2 for a bad\n"
               "command line or spec; 1 when the simulation cannot be started or SimGrid stops\n"
               "by itself (an unknown --cfg NAME, for one).\n");
}

static pid_t g_child = -1;
static double now_s(void);

/* A signal for the job (the coordinator's cancel, ^C) goes to smpirun's process group:
 * smpirun itself and the simulation it started (smpimain), which smpirun, stopped, does
 * not wait for. pacer-sim then waits for the whole group (wait_group) and cleans up as
 * after any other end, so that when it exits nothing of the simulation is left. */
static void forward(int sig)
{
    if (g_child > 0) kill(-g_child, sig);
}

/* After smpirun has ended: gives what is left of its group (a simulation still stopping)
 * grace_s to go, then SIGKILL. */
static void wait_group(pid_t pgid, double grace_s)
{
    double end = now_s() + grace_s;
    while (kill(-pgid, 0) == 0) {
        if (now_s() > end) {
            kill(-pgid, SIGKILL);
            end = now_s() + 5; /* a killed process still takes a moment to go */
            grace_s = -1;
        }
        if (grace_s < 0 && now_s() > end) break;
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

/* The what-if answer of a spec with algorithm.goodput (the simulated workers run the same
 * planner as real ones, common/goodput.h): the global batch, the split's nodes and the
 * noise scale the plan ended with, and each node left out with the planner's reason. */
static void print_goodput(json_t *sum)
{
    json_t *g = json_object_get(sum, "goodput");
    if (!json_is_object(g)) return;
    json_t *phi = json_object_get(g, "noise_scale"), *left = json_object_get(g, "nodes_left_out");
    char noise[32] = "not measured";
    if (json_is_number(phi)) snprintf(noise, sizeof noise, "%.0f", json_number_value(phi));
    fprintf(stderr,
            "pacer-sim: goodput plan at the end: global batch %lld (spec's %lld, mean %.0f), noise scale %s, "
            "learning rate x %.2f, %zu node(s) left out\n",
            (long long)json_integer_value(json_object_get(g, "global_batch_final")),
            (long long)json_integer_value(json_object_get(g, "base_batch")),
            json_number_value(json_object_get(g, "global_batch_mean")), noise,
            json_number_value(json_object_get(g, "lr_scale")), json_array_size(left));
    size_t i;
    json_t *n;
    json_array_foreach(left, i, n) fprintf(stderr, "pacer-sim:   worker %lld left out: %s\n",
                                           (long long)json_integer_value(json_object_get(n, "worker")),
                                           json_string_value(json_object_get(n, "reason")) ?: "");
}

/* smpirun passes the program's arguments on through an unquoted shell word list. */
static int shell_safe(const char *what, const char *s)
{
    for (const char *p = s; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (c <= ' ' || c == '\'' || c == '"' || c == '\\' || c == '*' || c == '?' || c == '[' || c == '$' ||
            c == '`' || c == 0x7f) {
            fprintf(stderr,
                    "pacer-sim: %s: '%s': smpirun cannot pass white space, quotes or shell "
                    "wildcards through\n",
                    what, s);
            return 0;
        }
    }
    return 1;
}

/* build-smpi/pacer-worker next to the directory this program lives in. */
static void default_worker(char *out, size_t len)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        snprintf(out, len, "build-smpi/pacer-worker");
        return;
    }
    self[n] = 0;
    char *bin = dirname(self); /* .../build */
    char *root = dirname(bin); /* ... */
    snprintf(out, len, "%s/build-smpi/pacer-worker", root);
}

/* Removes our temporary directory: the platform, the hostfile, and whatever smpirun
 * left there (each rank's copy of the worker, should it stop before unlinking them). */
static void remove_tree(const char *dir, int keep)
{
    if (keep) return;
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        char path[2 * PATH_MAX];
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
        closedir(d);
    }
    rmdir(dir);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* One run: the command line, the spec, the directory of the platform and hostfile, and
 * smpirun's command line; main fills it in phases. */
typedef struct {
    const char *spec_path, *summary, *metrics, *smpirun, *keep;
    char worker[PATH_MAX];
    /* --cfg settings, each kept as smpirun's "--cfg=NAME:VALUE" word */
    char cfg[MAX_CFG][256];
    int ncfg, show_log, dry_run;
    const char *roots[SIM_DATA_ROOTS_MAX];
    int nroots;
    const char *models_dir; /* --models-dir */
    char **pass;            /* the worker options after -- */
    int npass;
    job_spec_t spec;
    int with_ps, world;
    char dir[PATH_MAX]; /* --keep DIR, else a temporary directory */
    char platform_path[PATH_MAX + 32], hostfile[PATH_MAX + 32], label[SPEC_PATH_MAX + 16], ps_host[PLATFORM_NAME_MAX];
    char np[32], speed[64], *args[66 + 2 * SIM_DATA_ROOTS_MAX + MAX_CFG + MAX_PASS];
    int nargs;
} sim_run_t;

/* How smpirun ended (run_smpirun), for report. */
typedef struct {
    int status;
    double host_s;
    struct rusage ru;
} sim_end_t;

/* One option of OPTIONS into r. Returns -1 to go on, else the exit status. */
static int apply_option(sim_run_t *r, int c)
{
    switch (c) {
    case 's': r->spec_path = optarg; return -1;
    case 'o': r->summary = optarg; return -1;
    case 'm': r->metrics = optarg; return -1;
    case 'w': snprintf(r->worker, sizeof r->worker, "%s", optarg); return -1;
    case 'r': r->smpirun = optarg; return -1;
    case 'k': r->keep = optarg; return -1;
    case 'c':
        if (r->ncfg == MAX_CFG) {
            fprintf(stderr, "pacer-sim: more than %d --cfg settings\n", MAX_CFG);
            return 2;
        }
        if (!strchr(optarg, ':') || optarg[0] == ':' || strlen(optarg) >= sizeof r->cfg[0] - 8) {
            fprintf(stderr, "pacer-sim: --cfg '%s': expected NAME:VALUE (SimGrid's --cfg), under %zu characters\n",
                    optarg, sizeof r->cfg[0] - 8);
            return 2;
        }
        if (!shell_safe("--cfg", optarg)) return 2;
        snprintf(r->cfg[r->ncfg++], sizeof r->cfg[0], "--cfg=%s", optarg);
        return -1;
    case 'l': r->show_log = 1; return -1;
    case 'U':
        if (r->nroots == SIM_DATA_ROOTS_MAX) {
            fprintf(stderr, "pacer-sim: --data-root: at most %d\n", SIM_DATA_ROOTS_MAX);
            return 2;
        }
        if (!shell_safe("--data-root", optarg)) return 2;
        r->roots[r->nroots++] = optarg;
        return -1;
    case 'M':
        if (!shell_safe("--models-dir", optarg)) return 2;
        r->models_dir = optarg;
        return -1;
    case 'n': r->dry_run = 1; return -1;
    case 'V': printf("pacer-sim %s\n", PACER_VERSION); return 0;
    case 'h': usage(stdout); return 0;
    default: usage(stderr); return 2;
    }
}

/* The command line into r, checked (every word that reaches smpirun's shell is safe).
 * Returns -1 to go on, else the exit status. */
static int parse_options(int argc, char **argv, sim_run_t *r)
{
    r->smpirun = "smpirun";
    int c;
    while ((c = getopt_long(argc, argv, "", OPTIONS, NULL)) != -1) {
        int rc = apply_option(r, c);
        if (rc >= 0) return rc;
    }
    if (!r->spec_path || !r->summary) {
        fprintf(stderr, "pacer-sim: %s is required\n", !r->spec_path ? "--spec FILE" : "--summary FILE");
        usage(stderr);
        return 2;
    }
    r->pass = argv + optind;
    r->npass = argc - optind;
    if (r->npass > 0 && strcmp(argv[optind - 1], "--") != 0) {
        fprintf(stderr, "pacer-sim: unexpected argument '%s' (worker options go after --)\n", argv[optind]);
        return 2;
    }
    if (r->npass > MAX_PASS) {
        fprintf(stderr, "pacer-sim: more than %d worker options\n", MAX_PASS);
        return 2;
    }
    if (!r->worker[0]) default_worker(r->worker, sizeof r->worker);
    if (!shell_safe("--spec", r->spec_path) || !shell_safe("--summary", r->summary) ||
        (r->metrics && !shell_safe("--metrics", r->metrics)) || !shell_safe("--worker", r->worker))
        return 2;
    for (int i = 0; i < r->npass; i++)
        if (!shell_safe("worker option", r->pass[i])) return 2;
    return -1;
}

/* The spec, with the models and data sets it may name, and the worker to run it.
 * Returns -1 to go on, else the exit status. */
static int load_spec(sim_run_t *r)
{
    char err[PATH_MAX + 1024];
    /* "model": {"onnx": PATH}, or an uploaded model's {"onnx": NAME, "sha256": HEX} read
     * from --models-dir: imported here for the spec's checks, and again by the simulated
     * worker that trains it (passed --models-dir too). */
    modelfetch_configure(r->models_dir, NULL, NULL);
    spec_set_onnx_loader(modelfetch_loader);
    /* dataset.name of a user's set: resolved here for the checks, and by every rank */
    if (r->nroots > 0) userdata_sync(r->roots, r->nroots, NULL);
    if (spec_load_file(r->spec_path, &r->spec, err, sizeof err) != 0) {
        fprintf(stderr, "pacer-sim: %s\n", err);
        return 2;
    }
    if (access(r->worker, X_OK) != 0) {
        fprintf(stderr, "pacer-sim: %s: %s (build it with `make smpi`, which needs libsimgrid-dev)\n", r->worker,
                strerror(errno));
        return 2;
    }
    if (r->spec.emulate.nslowdown > 0 || r->spec.emulate.nschedule > 0)
        fprintf(stderr, "pacer-sim: note: emulate.* still applies, on top of the simulated hosts' speeds "
                        "(use simulate.slowdown alone to simulate a heterogeneous cluster)\n");
    r->with_ps = spec_is_async(&r->spec);
    r->world = r->spec.workers + r->with_ps;
    return -1;
}

/* The directory for the platform and the hostfile: --keep DIR, else a new temporary one.
 * Returns -1 to go on, else the exit status. */
static int make_dir(sim_run_t *r)
{
    if (r->keep) {
        snprintf(r->dir, sizeof r->dir, "%s", r->keep);
        if (!shell_safe("--keep", r->dir)) return 2;
        if (mkdir(r->dir, 0755) != 0 && errno != EEXIST) {
            fprintf(stderr, "pacer-sim: --keep %s: %s\n", r->dir, strerror(errno));
            return 2;
        }
        return -1;
    }
    const char *tmp = getenv("TMPDIR");
    snprintf(r->dir, sizeof r->dir, "%s/pacer-sim.XXXXXX", tmp && *tmp && shell_safe("TMPDIR", tmp) ? tmp : "/tmp");
    if (!mkdtemp(r->dir)) {
        fprintf(stderr, "pacer-sim: cannot create a temporary directory: %s\n", strerror(errno));
        return 1;
    }
    return -1;
}

/* The platform (the spec's file, or one generated from simulate) and the hostfile that
 * places the ranks on it. Returns -1 to go on, else the exit status. */
static int write_platform(sim_run_t *r)
{
    char err[PATH_MAX + 1024];
    static char slots[4096][PLATFORM_NAME_MAX];
    int nslots;
    if (r->spec.simulate.platform[0]) {
        snprintf(r->platform_path, sizeof r->platform_path, "%s", r->spec.simulate.platform);
        snprintf(r->label, sizeof r->label, "%s", r->spec.simulate.platform);
        nslots = platform_slots(r->platform_path, r->spec.simulate.hostfile[0] ? r->spec.simulate.hostfile : NULL,
                                slots, 4096, r->ps_host, err, sizeof err);
        if (nslots < 0) {
            fprintf(stderr, "pacer-sim: simulate: %s\n", err);
            return 2;
        }
    } else {
        static platform_t plat;
        platform_from_spec(&r->spec, r->with_ps, &plat);
        snprintf(r->platform_path, sizeof r->platform_path, "%s/platform.xml", r->dir);
        snprintf(r->label, sizeof r->label, "generated");
        FILE *f = fopen(r->platform_path, "w");
        int rc = f ? platform_write(&plat, f, err, sizeof err) : -1;
        if (!f) snprintf(err, sizeof err, "%s: %s", r->platform_path, strerror(errno));
        if (f && fclose(f) != 0 && rc == 0) {
            snprintf(err, sizeof err, "%s: %s", r->platform_path, strerror(errno));
            rc = -1;
        }
        if (rc != 0) {
            fprintf(stderr, "pacer-sim: %s\n", err);
            return 1;
        }
        nslots = platform_slots_of(&plat, slots, 4096, r->ps_host);
    }
    snprintf(r->hostfile, sizeof r->hostfile, "%s/hostfile", r->dir);
    FILE *hf = fopen(r->hostfile, "w");
    int hrc = hf ? platform_write_hostfile(hf, slots, nslots, r->ps_host, r->spec.workers, r->with_ps, err, sizeof err)
                 : -1;
    if (!hf) snprintf(err, sizeof err, "%s: %s", r->hostfile, strerror(errno));
    if ((hf && fclose(hf) != 0) || hrc != 0) {
        fprintf(stderr, "pacer-sim: %s\n", err);
        return 1;
    }
    return -1;
}

/* smpirun's command line into r->args. */
static void build_args(sim_run_t *r)
{
    int a = 0;
    char **args = r->args;
    snprintf(r->np, sizeof r->np, "%d", r->world);
    /* In timing mode SMPI charges each measured burst as burst x host-speed flops, so a
     * host of `gflops` computes as fast as this machine did; a bf16 job's bursts ran on
     * this machine's bf16 path, which counts as a host of bf16_gflops. */
    snprintf(r->speed, sizeof r->speed, "--cfg=smpi/host-speed:%.9gf", spec_sim_host_flops(&r->spec));
    args[a++] = (char *)r->smpirun;
    args[a++] = "-platform";
    args[a++] = r->platform_path;
    args[a++] = "-hostfile";
    args[a++] = r->hostfile;
    args[a++] = "-np";
    args[a++] = r->np;
    args[a++] = r->speed;
    /* MPI_Test's injected polling cost (default 0.1 ms, growing with every failed test,
     * shared by all ranks) would slow hpsgd's between-layer tests far beyond a real
     * MPI_Test's microsecond. */
    args[a++] = "--cfg=smpi/test:1e-6";
    args[a++] = "--cfg=smpi/grow-injected-times:no";
    /* Reading the clock costs no simulated time (SimGrid injects 10 ns per read against
     * busy-wait loops, which pacer has none of): metrics records, which read it, then
     * leave the simulated run exactly as it is without them. */
    args[a++] = "--cfg=smpi/wtime:0";
    /* Collectives as Open MPI chooses them (the real runs' MPI); SimGrid's default
     * selector uses naive algorithms, 15x slower for a 128-rank allreduce. */
    args[a++] = "--cfg=smpi/coll-selector:ompi";
    if (r->spec.simulate.deterministic) args[a++] = "--cfg=smpi/simulate-computation:no";
    for (int i = 0; i < r->ncfg; i++) args[a++] = r->cfg[i]; /* the caller's, last: they win */
    if (!r->show_log) args[a++] = "--log=root.thres:warning";
    args[a++] = r->worker;
    args[a++] = "--spec";
    args[a++] = (char *)r->spec_path;
    args[a++] = "--summary";
    args[a++] = (char *)r->summary;
    if (r->metrics) {
        args[a++] = "--metrics";
        args[a++] = (char *)r->metrics;
    }
    for (int i = 0; i < r->nroots; i++) {
        args[a++] = "--data-root";
        args[a++] = (char *)r->roots[i];
    }
    if (r->models_dir) {
        args[a++] = "--models-dir";
        args[a++] = (char *)r->models_dir;
    }
    for (int i = 0; i < r->npass; i++) args[a++] = r->pass[i];
    args[a] = NULL;
    r->nargs = a;
}

/* The worker's environment: one BLAS thread (SMPI times only the rank's own thread), the
 * platform's name for the summary, and the worker's directory for libpacer_simshare.so
 * (also in its run path). */
static void set_environment(const sim_run_t *r)
{
    char libdir[PATH_MAX], ldpath[2 * PATH_MAX];
    snprintf(libdir, sizeof libdir, "%s", r->worker);
    const char *old = getenv("LD_LIBRARY_PATH");
    snprintf(ldpath, sizeof ldpath, "%s%s%s", dirname(libdir), old && *old ? ":" : "", old ? old : "");
    setenv("LD_LIBRARY_PATH", ldpath, 1);
    setenv("OPENBLAS_NUM_THREADS", "1", 1);
    setenv("PACER_SIM_PLATFORM", r->label, 1);
    /* smpirun puts each rank's copy of the worker into $TMPDIR (its -tmpdir option is
     * broken in SimGrid 3.32: it consumes one word too few). */
    setenv("TMPDIR", r->dir, 1);
}

/* smpirun in a process group of its own, signals forwarded (forward), until the whole
 * group has ended. Returns -1 when it ran (end filled in), else the exit status. */
static int run_smpirun(const sim_run_t *r, sim_end_t *end)
{
    fflush(stderr);
    double t0 = now_s();
    struct sigaction sa = {0};
    sa.sa_handler = forward;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "pacer-sim: fork: %s\n", strerror(errno));
        return 1;
    }
    if (pid == 0) {
        setpgid(0, 0); /* a group of its own, so that a signal reaches the simulation too */
        execvp(r->smpirun, r->args);
        fprintf(stderr, "pacer-sim: %s: %s (install libsimgrid-dev: make deps)\n", r->smpirun, strerror(errno));
        _exit(127);
    }
    setpgid(pid, pid); /* also here: whichever runs first */
    g_child = pid;
    end->status = 0;
    while (waitpid(pid, &end->status, 0) < 0 && errno == EINTR) {}
    wait_group(pid, 10);
    g_child = -1;
    end->host_s = now_s() - t0;
    getrusage(RUSAGE_CHILDREN, &end->ru);
    return -1;
}

/* The exit status from smpirun's, the goodput of the summary, and the host's figures. */
static int report(const sim_run_t *r, const sim_end_t *end)
{
    int rc = WIFEXITED(end->status) ? WEXITSTATUS(end->status) : 1;
    if (rc == 127) rc = 1;
    if (rc > 2) {
        /* Not the worker's status: SimGrid itself stopped (an abort is 134), for instance
         * on a setting it does not know. Its own message is above; the status we return
         * stays one of those documented. */
        fprintf(stderr, "pacer-sim: the simulation stopped with exit status %d (SimGrid's message is above%s)\n", rc,
                r->ncfg ? "; a --cfg NAME it does not know shows as \"Bad config key\"" : "");
        rc = 1;
    }
    json_t *sum = rc == 0 ? json_load_file(r->summary, 0, NULL) : NULL;
    double sim_s = sum ? json_number_value(json_object_get(sum, "simulated_wall_s")) : 0;
    print_goodput(sum);
    json_decref(sum);
    /* Host figures go to stderr, not the summary: they depend on this machine's load,
     * and a deterministic summary must not. */
    const struct rusage *ru = &end->ru;
    double cpu_s = (double)ru->ru_utime.tv_sec + 1e-6 * (double)ru->ru_utime.tv_usec + (double)ru->ru_stime.tv_sec +
                   1e-6 * (double)ru->ru_stime.tv_usec;
    fprintf(stderr, "pacer-sim: %s: %.3f simulated s in %.1f s on this machine (%.1f s of CPU), peak memory %.0f MB\n",
            rc == 0                    ? "done"
            : WIFSIGNALED(end->status) ? "killed"
                                       : "failed",
            sim_s, end->host_s, cpu_s, (double)ru->ru_maxrss / 1024.0);
    return rc;
}

/* The phases in order; each returns -1 to go on, else the exit status. Once the directory
 * exists, every end goes through its one removal (remove_tree keeps a --keep DIR). */
int main(int argc, char **argv)
{
    static sim_run_t r; /* static: the spec is large */
    int rc = parse_options(argc, argv, &r);
    if (rc < 0) rc = load_spec(&r);
    if (rc < 0) rc = make_dir(&r);
    if (rc >= 0) return rc;
    sim_end_t end = {0};
    rc = write_platform(&r);
    if (rc < 0) {
        build_args(&r);
        set_environment(&r);
        fprintf(stderr, "pacer-sim: %d ranks (%d workers%s) on %s%s\n", r.world, r.spec.workers,
                r.with_ps ? " + parameter server" : "", r.label, r.spec.simulate.deterministic ? ", deterministic" : "");
        if (r.dry_run) {
            printf("TMPDIR=%s OPENBLAS_NUM_THREADS=1 PACER_SIM_PLATFORM=%s", r.dir, r.label);
            for (int i = 0; i < r.nargs; i++) printf(" %s", r.args[i]);
            printf("\n");
            rc = 0;
        } else {
            rc = run_smpirun(&r, &end);
        }
    }
    remove_tree(r.dir, r.keep != NULL);
    return rc >= 0 ? rc : report(&r, &end);
}
