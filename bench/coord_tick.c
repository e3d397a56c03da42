/* bench/coord_tick.c - the cost of the coordinator's supervision tick with one RUNNING
 * job whose 64 ranks report (issue 5). Run through bench/coord_tick.sh, which starts a
 * throwaway redis-server; by hand:
 *
 *   build/bench/coord_tick --redis unix:///tmp/x/redis.sock --state /tmp/x/state \
 *       [--worker build/pacer-worker] [--ranks 64] [--seconds 30] [--idle-seconds 5]
 *       [--tick 0.2] [--shift 5]
 *
 * What runs:
 *   - the reporters: a child process with one real worker sink (worker/redis_report.c)
 *     per rank, each fed one step record every 100 ms as the worker's metrics reporter
 *     does (METRICS period 0.1 s), so Redis sees exactly the workers' traffic: per rank
 *     and round trip an XADD, the node and staleness HSETs with the heartbeat, and the
 *     assignment HMGET. Rank speeds differ (1x..4x) and rotate every --shift seconds, so
 *     the planner writes a new plan now and then, as with real stragglers;
 *   - the job: submitted and claimed with the coordinator's own jobstore calls (a
 *     synchronous dynamic-batch spec of --ranks workers), its pid file naming the
 *     reporter process, so the daemon supervises it as an adopted job;
 *   - the coordinator: coordinator_start() with the job's Redis, then its tick thread is
 *     stopped and this program calls tick() itself every --tick seconds, timing each call
 *     (wall clock and this thread's CPU clock) and counting its Redis commands and round
 *     trips (a blocking command, or the first reply read after pipelined appends).
 *
 * tick() is static in coordinator/daemon.c, so this file includes the coordinator's
 * sources (not api.c or the HTTP layer, which the tick does not use) instead of linking
 * libpacer_coord.a; that also lets the generic bench rule of the Makefile build it with the
 * worker libraries. The cost: a static name clash between those files breaks this build.
 *
 * Phases: --idle-seconds of ticks with the job not yet in pacer:active (the coordinator's
 * fixed cost with the reporters' load on Redis: the baseline), then the job is adopted
 * (one tick, not measured: it also writes the first batch plan), then --seconds of ticks
 * supervising it. Output: "key value" lines on stdout for the script. Exit status 1 when
 * something is wrong (the job was not supervised, a rank looked stale, no plan).
 */
#include <hiredis/hiredis.h>
#include <stdarg.h>

/* ---- counting Redis traffic of the tick ------------------------------------------------- */

static int bench_counting;
static long bench_rt, bench_cmds;

static void *bench_redisCommand(redisContext *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    bench_rt += bench_counting;
    bench_cmds += bench_counting;
    void *r = redisvCommand(c, fmt, ap);
    va_end(ap);
    return r;
}

static void *bench_redisCommandArgv(redisContext *c, int argc, const char **argv, const size_t *argvlen)
{
    bench_rt += bench_counting;
    bench_cmds += bench_counting;
    return redisCommandArgv(c, argc, argv, argvlen);
}

static int bench_redisAppendCommand(redisContext *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    bench_cmds += bench_counting;
    int r = redisvAppendCommand(c, fmt, ap);
    va_end(ap);
    return r;
}

static int bench_redisAppendCommandArgv(redisContext *c, int argc, const char **argv, const size_t *argvlen)
{
    bench_cmds += bench_counting;
    return redisAppendCommandArgv(c, argc, argv, argvlen);
}

/* A reply read that must first send pipelined commands is a round trip; the replies
 * after it come from the same exchange. */
static int bench_redisGetReply(redisContext *c, void **reply)
{
    if (bench_counting && c->obuf && c->obuf[0]) bench_rt++;
    return redisGetReply(c, reply);
}

#define redisCommand bench_redisCommand
#define redisCommandArgv bench_redisCommandArgv
#define redisAppendCommand bench_redisAppendCommand
#define redisAppendCommandArgv bench_redisAppendCommandArgv
#define redisGetReply bench_redisGetReply

/* ---- the coordinator, minus the API and the HTTP layer ---------------------------------- */

#include "../coordinator/clog.c"
#include "../coordinator/daemon.c"
#include "../coordinator/dataroots.c"
#include "../coordinator/drain.c"
#include "../coordinator/dynbatch.c"
#include "../coordinator/embedded.c"
#include "../coordinator/hclass.c"
#include "../coordinator/hostmem.c"
#include "../coordinator/hosts.c"
#include "../coordinator/jobstore.c"
#include "../coordinator/launch.c"
#include "../coordinator/launch_hostfile.c"
#include "../coordinator/launch_local.c"
#include "../coordinator/launch_sim.c"
#include "../coordinator/launch_slurm.c"
#include "../coordinator/launcher.c"
#include "../coordinator/launcher_impl.c"
#include "../coordinator/lock.c"
#include "../coordinator/modelstore.c"
#include "../coordinator/netprobe.c"
#include "../coordinator/policy.c"
#include "../coordinator/policy_classes.c"
#include "../coordinator/preflight.c"
#include "../coordinator/quotas.c"
#include "../coordinator/run.c"
#include "../coordinator/run_adopt.c"
#include "../coordinator/run_elastic.c"
#include "../coordinator/run_launch.c"
#include "../coordinator/run_tick.c"
#include "../coordinator/schedule.c"
#include "../coordinator/simjob.c"
#include "../coordinator/stall.c"
#include "../coordinator/supervise.c"
#include "../coordinator/tickconn.c"
#include "../coordinator/users.c"
#include "../coordinator/wcaps.c"

/* The experiments' step (coordinator/experiment.c) submits and cancels through the API,
 * which this program leaves out: here its cost while no experiment runs, the one SMEMBERS
 * of the active set that every tick makes. */
void experiment_tick(coordinator_t *c, double now)
{
    (void)now;
    redisReply *r = c->conn->rc ? redisCommand(c->conn->rc, "SMEMBERS %s", KEY_EXPERIMENTS_ACTIVE) : NULL;
    if (r) freeReplyObject(r);
}

/* Webhooks (coordinator/webhook.c) follow the events through the API, which this program
 * leaves out, on a thread of their own: nothing of theirs runs in the tick. */
webhooks_t *webhooks_start(coordinator_t *c, const char *state_dir, const char *allow_hosts, char *err, size_t errlen)
{
    (void)c, (void)state_dir, (void)allow_hosts, (void)err, (void)errlen;
    static char none;
    return (webhooks_t *)&none;
}

void webhooks_stop(webhooks_t *w) { (void)w; }

void webhooks_user_removed(coordinator_t *c, const char *user) { (void)c, (void)user; }

#undef redisCommand
#undef redisCommandArgv
#undef redisAppendCommand
#undef redisAppendCommandArgv
#undef redisGetReply

#include <sys/prctl.h>
#include <sys/resource.h>

#include "hostname.h"
#include "median.h"
#include "metrics.h"
#include "redis_report.h"

/* ---- the reporters (child process) ------------------------------------------------------- */

#define REPORT_PERIOD_S 0.1 /* the worker's metrics reporter period */

static volatile sig_atomic_t bench_stop;

static void on_term(int sig)
{
    (void)sig;
    bench_stop = 1;
}

static double bench_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_until(double t)
{
    struct timespec ts;
    ts.tv_sec = (time_t)t;
    ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR && !bench_stop) {}
}

/* Runs until SIGTERM (or the parent's death). */
static int reporters(const char *url, const char *job, int nranks, double shift_s)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_term;
    sigaction(SIGTERM, &sa, NULL);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    metrics_sink_t **sinks = calloc((size_t)nranks, sizeof *sinks);
    int *batch = calloc((size_t)nranks, sizeof *batch);
    int64_t *plan = calloc((size_t)nranks, sizeof *plan);
    if (!sinks || !batch || !plan) return 1;
    char host[64];
    host_name(host, sizeof host); /* what a rank reports (worker/train.c) */
    for (int r = 0; r < nranks; r++) {
        char err[256];
        sinks[r] = redis_report_sink(url, job, r, err, sizeof err);
        if (!sinks[r]) {
            fprintf(stderr, "coord_tick: rank %d: %s\n", r, err);
            return 1;
        }
        batch[r] = 64;
    }
    double t0 = bench_mono(), next = t0;
    int64_t stepno = 0;
    char json[4096];
    int *asg = malloc(sizeof *asg * (size_t)nranks);
    if (!asg) return 1;
    while (!bench_stop && getppid() != 1) {
        stepno++;
        int rot = (int)((bench_mono() - t0) / shift_s);
        for (int r = 0; r < nranks; r++) {
            int64_t v;
            if (redis_report_assignment(sinks[r], &v, asg, nranks) == 1) {
                batch[r] = asg[r];
                plan[r] = v;
            }
            metrics_record_t rec;
            memset(&rec, 0, sizeof rec);
            rec.kind = METRICS_STEP;
            rec.time = clock_wall_s();
            rec.rank = r;
            snprintf(rec.host, sizeof rec.host, "%s", host);
            snprintf(rec.device, sizeof rec.device, "cpu");
            rec.step = stepno;
            rec.epoch = 1;
            rec.batch = batch[r];
            rec.loss = 2.3f / (1.0f + 0.01f * (float)stepno);
            /* Speeds 1x..4x by rank, rotating: the planner sees stragglers move. */
            rec.samples_per_s = 500.0 * (1 + (r + rot) % 4) * (1.0 + 0.01 * (double)((stepno + r) % 3));
            rec.compute_s = batch[r] / rec.samples_per_s;
            rec.comm_s = 0.002;
            rec.idle_s = 0.001;
            rec.baseline_comm_s = NAN;
            rec.samples = stepno * batch[r];
            rec.slowdown = 1.0;
            rec.test_loss = rec.test_accuracy = NAN;
            rec.plan_version = plan[r];
            const char *line = metrics_to_json(&rec, job, json, sizeof json) > 0 ? json : NULL;
            sinks[r]->write(sinks[r], &rec, &line, 1);
        }
        next += REPORT_PERIOD_S;
        sleep_until(next);
    }
    for (int r = 0; r < nranks; r++) sinks[r]->close(sinks[r]);
    free(sinks);
    free(asg);
    free(batch);
    free(plan);
    return 0;
}

/* ---- measuring ------------------------------------------------------------------------------- */

typedef struct {
    double wall_ms, cpu_ms;
    long rt, cmds;
    int second; /* the tick did once-a-second work: lock and info, or a planning round */
} sample_t;

static double thread_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double process_cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
           ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) * 1e-6;
}

/* utime + stime of another process, in seconds; 0 when unknown. */
static double pid_cpu_s(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')');
    unsigned long ut = 0, st = 0;
    /* After the command name: state and 10 more fields, then utime and stime. */
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2) return 0;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* Nearest-rank quantile of v[0..n) (sorted in place). */
static double quantile(double *v, int n, double q)
{
    if (n <= 0) return 0;
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    int k = (int)ceil(q * n) - 1;
    return v[k < 0 ? 0 : k >= n ? n - 1 : k];
}

/* Prints PREFIX_{wall,cpu}_{p50,p95,max} and PREFIX_{rt,cmds,n} over the samples that
 * match which (-1 all, 0 plain ticks, 1 once-a-second ticks). */
static void report(const char *prefix, const sample_t *s, int n, int which)
{
    double *w = malloc(sizeof *w * (size_t)(n ? n : 1)), *u = malloc(sizeof *u * (size_t)(n ? n : 1));
    int m = 0;
    double rt = 0, cmds = 0;
    if (!w || !u) exit(1);
    for (int i = 0; i < n; i++) {
        if (which >= 0 && s[i].second != which) continue;
        w[m] = s[i].wall_ms;
        u[m] = s[i].cpu_ms;
        rt += (double)s[i].rt;
        cmds += (double)s[i].cmds;
        m++;
    }
    printf("%s_n %d\n", prefix, m);
    printf("%s_wall_p50 %.3f\n%s_wall_p95 %.3f\n", prefix, quantile(w, m, 0.5), prefix, quantile(w, m, 0.95));
    printf("%s_wall_max %.3f\n", prefix, m ? w[m - 1] : 0.0);
    printf("%s_cpu_p50 %.3f\n%s_cpu_p95 %.3f\n", prefix, quantile(u, m, 0.5), prefix, quantile(u, m, 0.95));
    printf("%s_cpu_max %.3f\n", prefix, m ? u[m - 1] : 0.0);
    printf("%s_rt %.2f\n%s_cmds %.1f\n", prefix, m ? rt / m : 0.0, prefix, m ? cmds / m : 0.0);
    free(w);
    free(u);
}

/* Calls tick() every tick_s for seconds; returns the number of samples taken. */
static int run_ticks(coordinator_t *c, double seconds, sample_t *out, int max)
{
    int n = 0;
    double next = bench_mono(), end = next + seconds;
    while (n < max && next < end) {
        sleep_until(next);
        double last_second = c->last_second, last_plan = c->runs->n ? c->runs->list[0]->last_plan : 0;
        bench_rt = bench_cmds = 0;
        bench_counting = 1;
        double w0 = bench_mono(), u0 = thread_cpu_s();
        tick(c);
        double w1 = bench_mono(), u1 = thread_cpu_s();
        bench_counting = 0;
        out[n].wall_ms = (w1 - w0) * 1e3;
        out[n].cpu_ms = (u1 - u0) * 1e3;
        out[n].rt = bench_rt;
        out[n].cmds = bench_cmds;
        out[n].second = c->last_second != last_second || (c->runs->n && c->runs->list[0]->last_plan != last_plan);
        n++;
        next += c->cfg.tick_s;
    }
    return n;
}

static long long assignment_version(redisContext *rc, const char *id)
{
    char key[160];
    snprintf(key, sizeof key, KEY_JOB_ASSIGNMENT, id);
    redisReply *r = redisCommand(rc, "HGET %s version", key);
    long long v = reply_int(r, 0);
    if (r) freeReplyObject(r);
    return v;
}

/* Ranks whose node hash has a heartbeat. */
static int ranks_reporting(redisContext *rc, const char *id, int nranks)
{
    int n = 0;
    for (int r = 0; r < nranks; r++) {
        char key[160];
        snprintf(key, sizeof key, KEY_JOB_NODE, id, r);
        redisReply *x = redisCommand(rc, "HEXISTS %s heartbeat", key);
        n += reply_int(x, 0) == 1;
        if (x) freeReplyObject(x);
    }
    return n;
}

static void usage(void)
{
    fprintf(stderr, "usage: coord_tick --redis URL --state DIR [--worker PATH] [--ranks N] [--seconds S]\n"
                    "                  [--idle-seconds S] [--tick S] [--shift S]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    const char *url = NULL, *state = NULL, *worker = "build/pacer-worker";
    int nranks = 64;
    double seconds = 30, idle_s = 5, tick_s = 0.2, shift_s = 5;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) usage();
        if (strcmp(a, "--redis") == 0) url = v;
        else if (strcmp(a, "--state") == 0) state = v;
        else if (strcmp(a, "--worker") == 0) worker = v;
        else if (strcmp(a, "--ranks") == 0) nranks = atoi(v);
        else if (strcmp(a, "--seconds") == 0) seconds = atof(v);
        else if (strcmp(a, "--idle-seconds") == 0) idle_s = atof(v);
        else if (strcmp(a, "--tick") == 0) tick_s = atof(v);
        else if (strcmp(a, "--shift") == 0) shift_s = atof(v);
        else usage();
        i++;
    }
    if (!url || !state || nranks < 1 || nranks > 4096 || !(seconds > 0) || !(idle_s >= 0) || !(tick_s > 0) ||
        !(shift_s > 0))
        usage();
    signal(SIGPIPE, SIG_IGN);

    /* The job, as the API submits it and the daemon claims it. */
    redis_url_t u;
    char err[512];
    if (redis_url_parse(url, &u, err, sizeof err) != 0) {
        fprintf(stderr, "coord_tick: %s\n", err);
        return 2;
    }
    redisContext *rc = redis_url_connect(&u, 2.0, err, sizeof err);
    if (!rc) {
        fprintf(stderr, "coord_tick: %s\n", err);
        return 1;
    }
    redisReply *x = redisCommand(rc, "DBSIZE");
    long long keys = reply_int(x, -1);
    if (x) freeReplyObject(x);
    if (keys != 0) {
        fprintf(stderr, "coord_tick: %s holds %lld keys; this benchmark wants an empty Redis of its own\n", url, keys);
        return 2;
    }
    char spec_text[512];
    snprintf(spec_text, sizeof spec_text,
             "{\"name\": \"tick-bench\", \"model\": \"lenet5\", \"dataset\": {\"name\": \"fashion-mnist\"},"
             " \"algorithm\": {\"name\": \"ssgd\", \"dynamic_batch\": true}, \"workers\": %d,"
             " \"epochs\": 1, \"batch_size\": 64}",
             nranks);
    job_spec_t *spec = malloc(sizeof *spec);
    if (!spec || spec_parse(spec_text, spec, err, sizeof err) != 0) {
        fprintf(stderr, "coord_tick: spec: %s\n", spec ? err : "out of memory");
        return 1;
    }
    char *norm = spec_to_json(spec);
    job_new_t j = {
        .spec_json = norm,
        .name = spec->name,
        .model = spec->model,
        .algorithm = spec->algorithm.name,
        .workers = spec->workers,
        .world = spec->workers,
        .dynamic_batch = 1,
    };
    char id[JOB_ID_MAX];
    if (!norm || jobstore_submit(rc, &j, id, sizeof id, NULL) != JS_OK || jobstore_claim(rc, id, clock_wall_s()) != 1) {
        fprintf(stderr, "coord_tick: cannot submit and claim the job\n");
        return 1;
    }
    free(norm);
    free(spec);
    /* Out of pacer:active until the baseline has been measured. Its record says it was
     * launched once, as the coordinator writes it: a claimed job with no attempt is one
     * the pre-flight held back, which the coordinator launches (run.c) instead of
     * adopting. */
    x = redisCommand(rc, "SREM %s %s", KEY_ACTIVE, id);
    if (x) freeReplyObject(x);
    const char *launched[] = {"attempts", "1"};
    if (jobstore_update(rc, id, NULL, NULL, launched, 1) != JS_OK) {
        fprintf(stderr, "coord_tick: cannot record the job's attempt\n");
        return 1;
    }

    fflush(NULL);
    pid_t child = fork();
    if (child < 0) {
        perror("coord_tick: fork");
        return 1;
    }
    if (child == 0) _exit(reporters(url, id, nranks, shift_s));

    int status = 1;
    coordinator_t *c = NULL;
    sample_t *idle = NULL, *busy = NULL;
    /* The job's process is the reporters: the daemon checks it as an adopted job's. */
    char dir[PATH_MAX + 64], pidp[PATH_MAX + 96], line[64];
    unsigned long long pstart = 0;
    snprintf(dir, sizeof dir, "%s/jobs/%s", state, id);
    snprintf(pidp, sizeof pidp, "%s/pid", dir);
    int n = snprintf(line, sizeof line, "%d %llu\n", (int)child, proc_stat(child, &pstart, NULL) == 0 ? pstart : 0ULL);
    if (fs_mkdir_p(dir, 0755) != 0 || fs_atomic_write_fixed(pidp, line, (size_t)n, 0644) != 0) {
        fprintf(stderr, "coord_tick: %s: %s\n", pidp, strerror(errno));
        goto out;
    }
    double deadline = bench_mono() + 10;
    int up = 0;
    while ((up = ranks_reporting(rc, id, nranks)) < nranks && bench_mono() < deadline) sleep_until(bench_mono() + 0.1);
    if (up < nranks) {
        fprintf(stderr, "coord_tick: only %d of %d ranks reported within 10 s\n", up, nranks);
        goto out;
    }

    coord_config_t cfg;
    coord_config_defaults(&cfg);
    cfg.redis_url = url;
    cfg.state_dir = state;
    cfg.worker = worker;
    cfg.tick_s = tick_s;
    if (coordinator_start(&cfg, &c, err, sizeof err) != COORD_OK) {
        fprintf(stderr, "coord_tick: coordinator: %s\n", err);
        c = NULL;
        goto out;
    }
    /* The tick is ours from here: stop the daemon's thread (it may have ticked once). */
    pthread_mutex_lock(&c->lock);
    c->stopping = 1;
    pthread_cond_signal(&c->cond);
    pthread_mutex_unlock(&c->lock);
    pthread_join(c->tick_thread, NULL);
    c->tick_running = 0;
    c->stopping = 0;
    if (!c->worker_caps.redis) {
        fprintf(stderr, "coord_tick: %s has no --redis option: the tick would not read heartbeats\n", worker);
        goto out;
    }

    int cap = (int)((seconds + idle_s) / tick_s) + 16;
    idle = calloc((size_t)cap, sizeof *idle);
    busy = calloc((size_t)cap, sizeof *busy);
    if (!idle || !busy) goto out;
    int nidle = idle_s > 0 ? run_ticks(c, idle_s, idle, cap) : 0;

    /* Adoption, as after a coordinator restart; this tick also makes the first plan. */
    x = redisCommand(rc, "SADD %s %s", KEY_ACTIVE, id);
    if (x) freeReplyObject(x);
    c->adopted = 0;
    tick(c);
    if (c->runs->n != 1 || c->runs->list[0]->phase != PH_ACTIVE) {
        fprintf(stderr, "coord_tick: the coordinator did not adopt %s\n", id);
        goto out;
    }
    long long v0 = assignment_version(rc, id);
    pid_t redis_pid = 0;
    x = redisCommand(rc, "INFO server");
    const char *info = reply_str(x), *p = info ? strstr(info, "process_id:") : NULL;
    if (p) redis_pid = (pid_t)atoi(p + 11);
    if (x) freeReplyObject(x);
    double t0 = bench_mono(), pc0 = process_cpu_s(), rc0 = pid_cpu_s(redis_pid), kc0 = pid_cpu_s(child);
    int nbusy = run_ticks(c, seconds, busy, cap);
    double t1 = bench_mono(), pc1 = process_cpu_s(), rc1 = pid_cpu_s(redis_pid), kc1 = pid_cpu_s(child);
    long long v1 = assignment_version(rc, id);
    coord_run_t *r = c->runs->n == 1 ? c->runs->list[0] : NULL;
    if (!r || r->phase != PH_ACTIVE || !r->redis_reported || r->stale_rank >= 0 || v1 < 1) {
        fprintf(stderr,
                "coord_tick: the job was not supervised as expected (runs %d, phase %d, reported %d, stale %d, "
                "plan version %lld)\n",
                c->runs->n, r ? (int)r->phase : -1, r ? r->redis_reported : 0, r ? r->stale_rank : -1, v1);
        goto out;
    }
    double tick_cpu = 0;
    for (int i = 0; i < nbusy; i++) tick_cpu += busy[i].cpu_ms / 1e3;

    printf("ranks %d\ntick_s %.3f\nseconds %.1f\n", nranks, tick_s, t1 - t0);
    report("idle", idle, nidle, -1);
    report("job", busy, nbusy, -1);
    report("job_plain", busy, nbusy, 0);
    report("job_second", busy, nbusy, 1);
    printf("plans %lld\n", v1 - v0);
    printf("tick_cpu_share %.2f\n", 100 * tick_cpu / (t1 - t0));
    printf("process_cpu_share %.2f\n", 100 * (pc1 - pc0) / (t1 - t0));
    printf("redis_cpu_share %.1f\n", 100 * (rc1 - rc0) / (t1 - t0));
    printf("reporters_cpu_share %.1f\n", 100 * (kc1 - kc0) / (t1 - t0));
    status = 0;
out:
    free(idle);
    free(busy);
    kill(child, SIGTERM);
    waitpid(child, NULL, 0);
    if (c) coordinator_stop(c);
    redisFree(rc);
    return status;
}
