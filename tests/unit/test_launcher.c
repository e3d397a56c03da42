/* tests/unit/test_launcher.c - the launchers' own logic (coordinator/launcher.h): choosing
 * the kind, hostfiles, the by-slot placement guess, handle files, and how the Slurm
 * launcher reads what Slurm's commands answer, bad answers included.
 *
 * The Slurm launcher's real path (sbatch, srun, scontrol, scancel against slurmctld and
 * two slurmd) is tests/integration/slurm.sh. Here its client commands are small scripts
 * first in PATH that print a canned answer and exit with a canned status, so that the
 * answers a healthy test cluster never gives (garbage, a controller that does not answer,
 * a purged job, NODE_FAIL) are covered too. And the MCA defaults every launch command
 * carries unless the user set them (test_mca_defaults).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "test_util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "launch.h"
#include "launcher.h"
#include "launcher_impl.h"
#include "preflight.h"

#define ERRLEN 1024

typedef struct {
    char dir[256];
    char bin[300];
    char *old_path;
} fx_t;

static int write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fputs(text, f);
    return fclose(f);
}

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    char *buf = calloc(1, 1 << 16);
    if (buf) buf[fread(buf, 1, (1 << 16) - 1, f)] = 0;
    fclose(f);
    return buf;
}

/* answer fx CMD STATUS TEXT - what the fake CMD prints and exits with from now on. */
static void answer(fx_t *fx, const char *cmd, int status, const char *text)
{
    char path[400], rc[16];
    snprintf(path, sizeof path, "%s/%s.out", fx->dir, cmd);
    assert_int_equal(write_text(path, text), 0);
    snprintf(path, sizeof path, "%s/%s.rc", fx->dir, cmd);
    snprintf(rc, sizeof rc, "%d\n", status);
    assert_int_equal(write_text(path, rc), 0);
}

static int setup(void **state)
{
    fx_t *fx = calloc(1, sizeof *fx);
    snprintf(fx->dir, sizeof fx->dir, "/tmp/pacer-test-launcher-XXXXXX");
    if (!mkdtemp(fx->dir)) return -1;
    snprintf(fx->bin, sizeof fx->bin, "%s/bin", fx->dir);
    mkdir(fx->bin, 0755);
    /* One script under every Slurm command's name: records its arguments, prints
     * DIR/NAME.out, exits with DIR/NAME.rc (0 when absent). */
    static const char *const CMDS[] = {"sinfo", "srun", "sbatch", "scontrol", "scancel", NULL};
    for (const char *const *c = CMDS; *c; c++) {
        char path[400], text[1024];
        snprintf(path, sizeof path, "%s/%s", fx->bin, *c);
        snprintf(text, sizeof text,
                 "#!/bin/sh\n"
                 "echo \"%s $*\" >> %s/calls\n"
                 "cat %s/%s.out 2>/dev/null\n"
                 "exit $(cat %s/%s.rc 2>/dev/null || echo 0)\n",
                 *c, fx->dir, fx->dir, *c, fx->dir, *c);
        if (write_text(path, text) != 0 || chmod(path, 0755) != 0) return -1;
    }
    const char *p = getenv("PATH");
    fx->old_path = strdup(p ? p : "/usr/bin:/bin");
    char *np = malloc(strlen(fx->bin) + strlen(fx->old_path) + 2);
    sprintf(np, "%s:%s", fx->bin, fx->old_path);
    setenv("PATH", np, 1);
    free(np);
    /* The launch commands' MCA defaults are there only when the user set none. */
    unsetenv("OMPI_MCA_btl_tcp_eager_limit");
    unsetenv("OMPI_MCA_btl_tcp_max_send_size");
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fx_t *fx = *state;
    setenv("PATH", fx->old_path, 1);
    free(fx->old_path);
    rm_tree(fx->dir);
    free(fx);
    return 0;
}

static char *calls(fx_t *fx)
{
    char path[400];
    snprintf(path, sizeof path, "%s/calls", fx->dir);
    char *t = read_text(path);
    return t ? t : strdup("");
}

/* ---- choosing the kind, hostfiles, placement --------------------------------------------- */

static void test_kinds_and_hostfile(void **state)
{
    fx_t *fx = *state;
    char err[ERRLEN] = "", hf[400];
    launcher_t *l = NULL;
    launcher_config_t cfg = {.hostname = "here", .mpirun = "mpirun"};

    assert_int_equal(launcher_open(&cfg, &l, err, sizeof err), 0); /* default: local */
    assert_string_equal(launcher_name(l), "local");
    const launch_host_t *hosts;
    assert_int_equal(launcher_hosts(l, &hosts), 1);
    assert_string_equal(hosts[0].name, "here");
    assert_int_equal(launcher_slots(l), hosts[0].slots);
    launcher_close(l);

    cfg.kind = "pbs";
    assert_int_equal(launcher_open(&cfg, &l, err, sizeof err), -1);
    assert_non_null(strstr(err, "--launcher pbs: unknown"));
    cfg.kind = "hostfile";
    assert_int_equal(launcher_open(&cfg, &l, err, sizeof err), -1);
    assert_non_null(strstr(err, "needs --hostfile"));

    snprintf(hf, sizeof hf, "%s/hosts", fx->dir);
    cfg.hostfile = hf;
    cfg.kind = "local";
    assert_int_equal(launcher_open(&cfg, &l, err, sizeof err), -1);
    assert_non_null(strstr(err, "--hostfile is for --launcher hostfile"));

    /* Bad hostfiles: each names the file (and line). */
    cfg.kind = NULL; /* a hostfile alone means the hostfile launcher */
    assert_int_equal(launcher_open(&cfg, &l, err, sizeof err), -1);
    assert_non_null(strstr(err, "No such file"));
    assert_int_equal(write_text(hf, "# nothing\n\n"), 0);
    assert_int_equal(launcher_open(&cfg, &l, err, sizeof err), -1);
    assert_non_null(strstr(err, "no hosts"));
    assert_int_equal(write_text(hf, "a slots=2\nb slots=0\n"), 0);
    assert_int_equal(launcher_open(&cfg, &l, err, sizeof err), -1);
    assert_non_null(strstr(err, ":2: slots must be 1 to"));
    assert_int_equal(write_text(hf, "a slots=99999999999\n"), 0);
    assert_int_equal(launcher_open(&cfg, &l, err, sizeof err), -1);
    assert_non_null(strstr(err, ":1: slots must be 1 to"));

    /* By-slot placement over the hosts, wrapping around; localhost is this machine. */
    assert_int_equal(write_text(hf, "localhost slots=2 # here\nb max_slots=4\n"), 0);
    assert_int_equal(launcher_open(&cfg, &l, err, sizeof err), 0);
    assert_string_equal(launcher_name(l), "hostfile");
    assert_int_equal(launcher_slots(l), 3);
    const char *where[5];
    assert_int_equal(launcher_rank_hosts(l, 5, NULL, 0, where), 0);
    const char *want[] = {"here", "here", "b", "here", "here"};
    for (int r = 0; r < 5; r++) assert_string_equal(where[r], want[r]);
    launcher_close(l);
}

/* ---- handle files --------------------------------------------------------------------------- */

static void test_adopt(void **state)
{
    fx_t *fx = *state;
    char err[ERRLEN], what[256], path[400], buf[64];
    launcher_t *local = NULL, *slurm = NULL;
    launcher_config_t cfg = {.hostname = "here"};
    assert_int_equal(launcher_open(&cfg, &local, err, sizeof err), 0);
    answer(fx, "sinfo", 0, "n1 4\n");
    answer(fx, "srun", 0, "MPI plugin types are...\n\tnone\n\tpmix\n");
    cfg.kind = "slurm";
    assert_int_equal(launcher_open(&cfg, &slurm, err, sizeof err), 0);
    launch_handle_t h;

    snprintf(path, sizeof path, "%s/pid", fx->dir);
    assert_int_equal(launcher_adopt(local, path, &h, what, sizeof what), 0);
    assert_non_null(strstr(what, "no record"));
    assert_int_equal(write_text(path, "1234 5678\n"), 0);
    assert_int_equal(launcher_adopt(local, path, &h, what, sizeof what), 1);
    assert_int_equal(h.pid, 1234);
    assert_string_equal(launcher_describe(&h, buf, sizeof buf), "session 1234");
    assert_int_equal(launcher_adopt(slurm, path, &h, what, sizeof what), 0); /* not its kind */
    assert_non_null(strstr(what, "started by mpirun (session 1234)"));
    assert_int_equal(h.pid, 0);

    assert_int_equal(write_text(path, "slurm 42\n"), 0);
    assert_int_equal(launcher_adopt(slurm, path, &h, what, sizeof what), 1);
    assert_int_equal(h.slurm_job, 42);
    assert_string_equal(launcher_describe(&h, buf, sizeof buf), "Slurm job 42");
    assert_int_equal(launcher_adopt(local, path, &h, what, sizeof what), 0);
    assert_non_null(strstr(what, "Slurm job 42"));

    assert_int_equal(write_text(path, "slurm -3\n"), 0);
    assert_int_equal(launcher_adopt(slurm, path, &h, what, sizeof what), 0);
    assert_non_null(strstr(what, "does not name"));
    assert_int_equal(write_text(path, "\x01garbage"), 0);
    assert_int_equal(launcher_adopt(local, path, &h, what, sizeof what), 0);
    launcher_close(local);
    launcher_close(slurm);
}

/* ---- Slurm: opening ------------------------------------------------------------------------- */

static void test_slurm_open(void **state)
{
    fx_t *fx = *state;
    char err[ERRLEN];
    launcher_t *l = NULL;
    launcher_config_t cfg = {.kind = "slurm", .hostname = "here"};

    answer(fx, "sinfo", 1, "slurm_load_node: Unable to contact slurm controller (connect failure)\n");
    assert_int_equal(launcher_open(&cfg, &l, err, sizeof err), -1);
    assert_non_null(strstr(err, "sinfo failed: slurm_load_node: Unable to contact slurm controller"));
    answer(fx, "sinfo", 0, "garbage\n\n");
    assert_int_equal(launcher_open(&cfg, &l, err, sizeof err), -1);
    assert_non_null(strstr(err, "sinfo lists no nodes"));

    /* A node in two partitions counts once; absurd CPU counts are bounded. */
    answer(fx, "sinfo", 0, "n1 2\nn2 99999999999\nn1 2\n");
    answer(fx, "srun", 0, "MPI plugin types are...\n\tnone\n\tpmi2\n");
    assert_int_equal(launcher_open(&cfg, &l, err, sizeof err), 0);
    const launch_host_t *hosts;
    assert_int_equal(launcher_hosts(l, &hosts), 2);
    assert_string_equal(hosts[0].name, "n1");
    assert_int_equal(hosts[1].slots, LAUNCH_MAX_SLOTS);
    const char *where[2];
    assert_int_equal(launcher_rank_hosts(l, 2, NULL, 0, where), -1); /* Slurm places tasks */
    launcher_close(l);

    cfg.slurm_mpi = "openmp";
    assert_int_equal(launcher_open(&cfg, &l, err, sizeof err), -1);
    assert_non_null(strstr(err, "--slurm-mpi openmp"));
    cfg.slurm_mpi = NULL;
    cfg.slurm_args = "--ntasks-per-node=1 script.sh";
    assert_int_equal(launcher_open(&cfg, &l, err, sizeof err), -1);
    assert_non_null(strstr(err, "'script.sh' is not an sbatch option"));
    cfg.slurm_args = NULL;
    cfg.slurm_partition = "a b";
    assert_int_equal(launcher_open(&cfg, &l, err, sizeof err), -1);
    assert_non_null(strstr(err, "not a partition name"));
}

/* ---- Slurm: an attempt ---------------------------------------------------------------------- */

typedef struct {
    char log[400], ec[400], handle[400];
    const char *argv[4];
    launch_req_t req;
} attempt_t;

static void attempt_init(fx_t *fx, attempt_t *a)
{
    snprintf(a->log, sizeof a->log, "%s/log", fx->dir);
    snprintf(a->ec, sizeof a->ec, "%s/exit_code", fx->dir);
    snprintf(a->handle, sizeof a->handle, "%s/pid", fx->dir);
    a->argv[0] = "/path/to/pacer-worker";
    a->argv[1] = "--spec";
    a->argv[2] = "spec.json";
    a->argv[3] = NULL;
    launch_req_t r = {.id = "j-7",
                      .attempt = 1,
                      .world = 3,
                      .argv = a->argv,
                      .dir = fx->dir,
                      .log_path = a->log,
                      .exit_code_path = a->ec,
                      .handle_path = a->handle};
    a->req = r;
}

static const char RUNNING[] =
    "JobId=12 JobName=pacer-j-7 UserId=root(0) GroupId=root(0) MCS_label=N/A Priority=4294901758 "
    "Nice=0 Account=(null) QOS=(null) JobState=RUNNING Reason=None Dependency=(null) Requeue=0 "
    "Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0 DerivedExitCode=1:0 RunTime=00:00:03 "
    "ReqNodeList=(null) ExcNodeList=(null) NodeList=pw[1-2] BatchHost=pw1 NumNodes=2 NumCPUs=2\n";

static void test_slurm_attempt(void **state)
{
    fx_t *fx = *state;
    char err[ERRLEN];
    launcher_t *l = NULL;
    launcher_config_t cfg = {.kind = "slurm", .hostname = "here", .slurm_args = "--ntasks-per-node=1 --exclusive"};
    answer(fx, "sinfo", 0, "pw1 2\npw2 2\n");
    answer(fx, "srun", 0, "MPI plugin types are...\n\tnone\n\tpmix\n");
    assert_int_equal(launcher_open(&cfg, &l, err, sizeof err), 0);
    attempt_t a;
    attempt_init(fx, &a);
    launch_handle_t h;
    launch_status_t st;

    /* sbatch failing, or answering garbage: a clear error, nothing followed. */
    answer(fx, "sbatch", 1,
           "sbatch: error: Batch job submission failed: Requested node configuration is not available\n");
    assert_int_equal(launcher_start(l, &a.req, &h, err, sizeof err), -1);
    assert_non_null(strstr(err, "sbatch failed: sbatch: error: Batch job submission failed: Requested node"));
    assert_int_equal(h.slurm_job, 0);
    answer(fx, "sbatch", 0, "Submitted batch job twelve\n");
    assert_int_equal(launcher_start(l, &a.req, &h, err, sizeof err), -1);
    assert_non_null(strstr(err, "sbatch failed: Submitted batch job twelve"));

    answer(fx, "sbatch", 0, "12;pacer\n");
    assert_int_equal(launcher_start(l, &a.req, &h, err, sizeof err), 0);
    assert_int_equal(h.slurm_job, 12);
    char *t = read_text(a.handle);
    assert_string_equal(t, "slurm 12\n");
    free(t);
    t = calls(fx);
    assert_non_null(strstr(t, "sbatch --parsable --job-name=pacer-j-7 --ntasks=3 --no-requeue --open-mode=append"));
    assert_non_null(strstr(t, "--ntasks-per-node=1 --exclusive"));
    assert_non_null(strstr(t, "/slurm-batch.sh"));
    /* srun takes no --mca: pacer's eager limit and its fence kind reach the ranks'
     * environment. */
    assert_non_null(
        strstr(t, "srun --mpi=pmix --kill-on-bad-exit=1 --export=ALL,OMPI_MCA_btl_tcp_eager_limit=" LAUNCH_TCP_EAGER_BYTES
                  ",OMPI_MCA_btl_tcp_max_send_size=" LAUNCH_TCP_EAGER_BYTES
                  ",SLURM_PMIX_FENCE=tree /path/to/pacer-worker --spec spec.json"));
    free(t);
    /* The user's own, in the environment sbatch passes on: ours are left out, each on
     * its own. */
    static const struct {
        const char *eager, *fence, *want;
    } USERS[] = {
        {"65536", NULL, "srun --mpi=pmix --kill-on-bad-exit=1 --export=ALL,SLURM_PMIX_FENCE=tree /path/to/pacer-worker"},
        {NULL, "ring",
         "srun --mpi=pmix --kill-on-bad-exit=1 --export=ALL,OMPI_MCA_btl_tcp_eager_limit=" LAUNCH_TCP_EAGER_BYTES
         ",OMPI_MCA_btl_tcp_max_send_size=" LAUNCH_TCP_EAGER_BYTES " /path/to/pacer-worker"},
        {"65536", "ring", "srun --mpi=pmix --kill-on-bad-exit=1 /path/to/pacer-worker --spec spec.json"},
    };
    char calls_path[400];
    snprintf(calls_path, sizeof calls_path, "%s/calls", fx->dir);
    for (size_t u = 0; u < sizeof USERS / sizeof USERS[0]; u++) {
        unlink(calls_path);
        if (USERS[u].eager) setenv("OMPI_MCA_btl_tcp_eager_limit", USERS[u].eager, 1);
        if (USERS[u].fence) setenv("SLURM_PMIX_FENCE", USERS[u].fence, 1);
        assert_int_equal(launcher_start(l, &a.req, &h, err, sizeof err), 0);
        unsetenv("OMPI_MCA_btl_tcp_eager_limit");
        unsetenv("SLURM_PMIX_FENCE");
        t = calls(fx);
        if (!strstr(t, USERS[u].want)) fail_msg("case %zu: %s", u, t);
        free(t);
    }
    t = read_text(a.log);
    assert_non_null(strstr(t, "=== pacer-coordinator "));
    assert_non_null(strstr(t, "job j-7 attempt 1: sbatch --parsable"));
    free(t);

    /* Pending, then running: not ended; scontrol at most once a second. */
    answer(fx, "scontrol", 0, "JobId=12 JobName=pacer-j-7 JobState=PENDING Reason=Resources ExitCode=0:0\n");
    launcher_poll(l, &h, a.ec, a.log, 100.0, &st);
    assert_false(st.ended);
    assert_true(st.pending);
    answer(fx, "scontrol", 0, RUNNING);
    launcher_poll(l, &h, a.ec, a.log, 100.5, &st); /* too soon: the last answer stands */
    assert_true(st.pending);
    launcher_poll(l, &h, a.ec, a.log, 101.0, &st);
    assert_false(st.ended || st.pending);

    /* slurmctld not answering: unknown is not ended. */
    answer(fx, "scontrol", 1, "slurm_load_jobs error: Unable to contact slurm controller (connect failure)\n");
    launcher_poll(l, &h, a.ec, a.log, 102.0, &st);
    assert_false(st.ended);
    answer(fx, "scontrol", 0, "\x01\x02 not a job\n");
    launcher_poll(l, &h, a.ec, a.log, 103.0, &st);
    assert_false(st.ended);

    /* The batch script's exit status wins, without asking Slurm. */
    assert_int_equal(write_text(a.ec, "3\n"), 0);
    launcher_poll(l, &h, a.ec, a.log, 103.1, &st);
    assert_true(st.ended);
    assert_int_equal(st.outcome, SV_EXITED);
    assert_int_equal(st.code, 3);
    unlink(a.ec);

    /* Over in Slurm's eyes, without an exit status: FAILED 1:0 is exit 1, 0:9 signal 9. */
    answer(fx, "scontrol", 0, "JobId=12 JobState=FAILED Reason=NonZeroExitCode ExitCode=1:0 NodeList=pw[1-2]\n");
    launcher_poll(l, &h, a.ec, a.log, 104.0, &st);
    assert_true(st.ended);
    assert_int_equal(st.outcome, SV_EXITED);
    assert_int_equal(st.code, 1);
    h.next_poll = 0;
    answer(fx, "scontrol", 0, "JobId=12 JobState=FAILED ExitCode=0:9 NodeList=pw1\n");
    launcher_poll(l, &h, a.ec, a.log, 105.0, &st);
    assert_int_equal(st.outcome, SV_SIGNALLED);
    assert_int_equal(st.code, 9);

    /* NODE_FAIL: lost, with the nodes that are down now, and a line in the log. */
    h.next_poll = 0;
    answer(fx, "scontrol", 0, "JobId=12 JobState=NODE_FAIL Reason=NodeDown ExitCode=0:0 NodeList=pw[1-2]\n");
    answer(fx, "sinfo", 0, "pw1 alloc\npw12 down*\npw2 down*\npw12 down*\n"); /* pw12: two partitions */
    launcher_poll(l, &h, a.ec, a.log, 106.0, &st);
    assert_true(st.ended);
    assert_int_equal(st.outcome, SV_LOST);
    assert_string_equal(st.lost_hosts, "pw12 pw2");
    t = read_text(a.log);
    assert_non_null(strstr(t, "pacer-coordinator: Slurm job 12 ended NODE_FAIL (nodes pw[1-2]; lost pw12 pw2)"));
    free(t);
    char line[256];
    assert_int_equal(log_last_line(a.log, line, sizeof line), 0);
    assert_string_equal(line, "pacer-coordinator: Slurm job 12 ended NODE_FAIL (nodes pw[1-2]; lost pw12 pw2)");

    /* Purged from slurmctld: the exit-code file decides, else lost. */
    h.next_poll = 0;
    answer(fx, "scontrol", 1, "slurm_load_jobs error: Invalid job id specified\n");
    launcher_poll(l, &h, a.ec, a.log, 107.0, &st);
    assert_true(st.ended);
    assert_int_equal(st.outcome, SV_LOST);

    /* Stop and reap: scancel; a job Slurm already ended is not cancelled again. */
    unlink(a.ec);
    char path[400];
    snprintf(path, sizeof path, "%s/calls", fx->dir);
    unlink(path);
    launcher_stop(l, &h, 0);
    launcher_stop(l, &h, 1);
    t = calls(fx);
    assert_non_null(strstr(t, "scancel 12\n"));
    assert_non_null(strstr(t, "scancel --signal=KILL --full 12\n"));
    free(t);
    unlink(path);
    launcher_reap(l, &h); /* slurm_done: nothing to cancel */
    t = calls(fx);
    assert_null(strstr(t, "scancel"));
    free(t);
    assert_int_equal(h.slurm_job, 0);
    launcher_close(l);
}

static void test_slurm_mpirun_inside(void **state)
{
    fx_t *fx = *state;
    char err[ERRLEN];
    launcher_t *l = NULL;
    launcher_config_t cfg = {.kind = "slurm", .hostname = "here", .mpirun = "/opt/mpirun", .slurm_partition = "gpu"};
    answer(fx, "sinfo", 0, "g1 8\n");
    answer(fx, "srun", 0, "MPI plugin types are...\n\tnone\n\tpmix\n"); /* pmix there: auto would pick it */
    cfg.slurm_mpi = "mpirun";
    assert_int_equal(launcher_open(&cfg, &l, err, sizeof err), 0);
    char *t = calls(fx);
    assert_non_null(strstr(t, "sinfo --noheader --Node --format=%N %c %o --partition=gpu"));
    free(t);
    attempt_t a;
    attempt_init(fx, &a);
    launch_handle_t h;
    answer(fx, "sbatch", 0, "77\n");
    assert_int_equal(launcher_start(l, &a.req, &h, err, sizeof err), 0);
    t = calls(fx);
    assert_non_null(strstr(t, "--partition=gpu"));
    assert_non_null(strstr(t, "/opt/mpirun --allow-run-as-root -np 3 --mca btl_tcp_eager_limit " LAUNCH_TCP_EAGER_BYTES
                              " --mca btl_tcp_max_send_size " LAUNCH_TCP_EAGER_BYTES
                              " /path/to/pacer-worker --spec spec.json"));
    free(t);
    /* The user's own setting, in the environment sbatch passes on, wins. */
    char path[400];
    snprintf(path, sizeof path, "%s/calls", fx->dir);
    unlink(path);
    setenv("OMPI_MCA_btl_tcp_max_send_size", "131072", 1);
    assert_int_equal(launcher_start(l, &a.req, &h, err, sizeof err), 0);
    unsetenv("OMPI_MCA_btl_tcp_max_send_size");
    t = calls(fx);
    assert_non_null(strstr(t, "/opt/mpirun --allow-run-as-root -np 3 /path/to/pacer-worker --spec spec.json"));
    assert_null(strstr(t, "btl_tcp"));
    free(t);
    /* The batch script is the wrapper, with the interpreter line sbatch requires. */
    char script[400];
    snprintf(script, sizeof script, "%s/slurm-batch.sh", fx->dir);
    t = read_text(script);
    assert_true(strncmp(t, "#!/bin/sh\n", 10) == 0);
    assert_non_null(strstr(t, launch_wrapper_script()));
    free(t);
    launcher_close(l);
}

static void test_slurm_parse(void **state)
{
    (void)state;
    char st[64], nodes[128];
    int s = -1, g = -1;
    assert_int_equal(launch_slurm_parse_job(RUNNING, st, sizeof st, &s, &g, nodes, sizeof nodes), 0);
    assert_string_equal(st, "RUNNING");
    assert_string_equal(nodes, "pw[1-2]"); /* not ReqNodeList's or ExcNodeList's */
    assert_int_equal(s, 0);                /* not DerivedExitCode's */
    assert_int_equal(g, 0);
    assert_int_equal(launch_slurm_parse_job("JobId=3 JobState=CANCELLED ExitCode=0:15 NodeList=(null)", st, sizeof st,
                                            &s, &g, nodes, sizeof nodes),
                     0);
    assert_string_equal(st, "CANCELLED");
    assert_string_equal(nodes, "");
    assert_int_equal(g, 15);
    /* Long values are cut to the buffer, never past it. */
    char big[2048] = "JobId=1 JobState=";
    memset(big + strlen(big), 'X', 1500);
    assert_int_equal(launch_slurm_parse_job(big, st, sizeof st, &s, &g, nodes, sizeof nodes), 0);
    assert_int_equal(strlen(st), sizeof st - 1);
    assert_int_equal(launch_slurm_parse_job("slurm_load_jobs error: Invalid job id specified", st, sizeof st, &s, &g,
                                            nodes, sizeof nodes),
                     -1);
    assert_int_equal(launch_slurm_parse_job("", st, sizeof st, &s, &g, nodes, sizeof nodes), -1);
}

/* sinfo's NAME|STATE|REASON lines: the drained and draining nodes, once each, reasons
 * cut to fit; malformed lines and other states skipped. */
static void test_slurm_parse_drains(void **state)
{
    (void)state;
    launch_rm_drain_t d[4];
    const char *text = "pw1|mix|none\n"
                       "pw2|drng|pacer test: maintenance\n"
                       "pw2|drng|pacer test: maintenance\n" /* a second partition */
                       "pw3|drain*|disk | full\n"           /* not responding; a bar in the reason */
                       "pw4|idle|none\n"
                       "garbage without bars\n"
                       "|drain|no name\n"
                       "pw5|drained|none"; /* the last line without its newline */
    int n = launch_slurm_parse_drains(text, d, 4);
    assert_int_equal(n, 3);
    assert_string_equal(d[0].name, "pw2");
    assert_string_equal(d[0].reason, "pacer test: maintenance");
    assert_string_equal(d[1].name, "pw3");
    assert_string_equal(d[1].reason, "disk | full");
    assert_string_equal(d[2].name, "pw5");
    assert_string_equal(d[2].reason, ""); /* "none" is no reason */
    /* At most max; names too long skipped; reasons cut to the buffer. */
    assert_int_equal(launch_slurm_parse_drains(text, d, 1), 1);
    char big[2048] = "";
    memset(big, 'n', 300);
    strcat(big, "|drain|x\npw6|drng|");
    memset(big + strlen(big), 'r', 500);
    assert_int_equal(launch_slurm_parse_drains(big, d, 4), 1);
    assert_string_equal(d[0].name, "pw6");
    assert_int_equal(strlen(d[0].reason), sizeof d[0].reason - 1);
    assert_int_equal(launch_slurm_parse_drains("", d, 4), 0);
}

/* ---- hosts coming and going: reload, probes, attempts on some hosts ----------------------- */

/* Polls p until it answers (a probe never takes longer than its deadline). */
static int probe_wait(launcher_t *l, launch_probe_t *p)
{
    for (;;) {
        int k = launcher_probe_poll(l, p, mono());
        if (k >= 0) return k;
        nap();
    }
}

static void test_hostfile_reload_and_probe(void **state)
{
    fx_t *fx = *state;
    char err[ERRLEN], hf[400], agent[400], path[400];
    launcher_t *l = NULL;
    snprintf(hf, sizeof hf, "%s/hosts", fx->dir);
    assert_int_equal(write_text(hf, "a slots=2\nb\na\n"), 0); /* a twice: 3 slots, as mpirun counts */
    launcher_config_t cfg = {.hostname = "here", .mpirun = "/bin/true", .hostfile = hf};
    assert_int_equal(launcher_open(&cfg, &l, err, sizeof err), 0);
    const launch_host_t *hosts;
    assert_int_equal(launcher_hosts(l, &hosts), 2);
    assert_int_equal(hosts[0].slots, 3);
    assert_int_equal(launcher_slots(l), 4);

    /* Reload: the file's new hosts; a broken file leaves the old ones. */
    assert_int_equal(write_text(hf, "a slots=2\nc slots=3\ndead\n"), 0);
    assert_int_equal(launcher_reload(l, err, sizeof err), 0);
    assert_int_equal(launcher_hosts(l, &hosts), 3);
    assert_string_equal(hosts[1].name, "c");
    assert_int_equal(launcher_slots(l), 6);
    assert_int_equal(write_text(hf, "a slots=0\n"), 0);
    assert_int_equal(launcher_reload(l, err, sizeof err), -1);
    assert_non_null(strstr(err, ":1: slots must be 1 to"));
    assert_int_equal(launcher_hosts(l, &hosts), 3);
    assert_int_equal(launcher_slots(l), 6);

    /* By-slot placement over some hosts only. */
    const char *where[6], *only_c[] = {"c"}, *a_c[] = {"c", "a"};
    assert_int_equal(launcher_rank_hosts(l, 4, only_c, 1, where), 0);
    for (int r = 0; r < 4; r++) assert_string_equal(where[r], "c");
    assert_int_equal(launcher_rank_hosts(l, 6, a_c, 2, where), 0); /* hostfile order, not the list's */
    const char *want[] = {"a", "a", "c", "c", "c", "a"};
    for (int r = 0; r < 6; r++) assert_string_equal(where[r], want[r]);
    const char *none[] = {"zz"};
    assert_int_equal(launcher_rank_hosts(l, 2, none, 1, where), -1);

    /* Probes run the remote shell Open MPI would: here a script that fails for "dead". */
    snprintf(agent, sizeof agent, "%s/rsh", fx->dir);
    assert_int_equal(write_text(agent, "#!/bin/sh\necho \"$@\" >> $(dirname $0)/rsh.calls\n"
                                       "[ \"$1\" = dead ] && exit 255\nexec sh -c \"$2\"\n"),
                     0);
    char env[500];
    snprintf(env, sizeof env, "sh %s : rsh", agent);
    setenv("OMPI_MCA_plm_rsh_agent", env, 1);
    launch_probe_t p;
    launcher_probe_start(l, "c", mono(), &p);
    assert_int_equal(probe_wait(l, &p), 1);
    launcher_probe_start(l, "dead", mono(), &p);
    assert_int_equal(probe_wait(l, &p), 0);
    assert_non_null(strstr(p.why, "exit 255"));
    launcher_probe_start(l, "nowhere", mono(), &p);
    assert_int_equal(launcher_probe_poll(l, &p, mono()), 0);
    assert_non_null(strstr(p.why, "not in the launcher's host list"));
    snprintf(path, sizeof path, "%s/rsh.calls", fx->dir);
    char *t = read_text(path);
    assert_non_null(strstr(t, "c true"));
    free(t);
    /* A probe that hangs is down at its deadline, and killed. */
    assert_int_equal(write_text(agent, "#!/bin/sh\nsleep 30\n"), 0);
    launcher_probe_start(l, "c", mono(), &p);
    assert_int_equal(launcher_probe_poll(l, &p, mono()), -1);
    pid_t pid = p.pid;
    assert_int_equal(launcher_probe_poll(l, &p, mono() + LAUNCH_PROBE_TIMEOUT_S + 1), 0);
    assert_non_null(strstr(p.why, "no answer within"));
    assert_int_equal(kill(pid, 0), -1); /* killed and reaped */
    /* ssh gets options that never prompt and give up in time. */
    setenv("OMPI_MCA_plm_rsh_agent", "/nonexistent/ssh", 1);
    launcher_probe_start(l, "c", mono(), &p);
    assert_int_equal(probe_wait(l, &p), 0);
    unsetenv("OMPI_MCA_plm_rsh_agent");
    assert_int_equal(write_text(hf, "a slots=2\nc slots=3\ndead\n"), 0);
    assert_int_equal(launcher_reload(l, err, sizeof err), 0);

    /* An attempt on some hosts only gets a hostfile of its own. */
    attempt_t a;
    attempt_init(fx, &a);
    const char *use[] = {"a", "c"};
    a.req.hosts = use;
    a.req.nhosts = 2;
    launch_handle_t h;
    assert_int_equal(launcher_start(l, &a.req, &h, err, sizeof err), 0);
    launch_status_t st;
    double end = mono() + 30;
    do {
        launcher_poll(l, &h, a.ec, a.log, mono(), &st);
        if (!st.ended) nap();
    } while (!st.ended && mono() < end);
    assert_true(st.ended);
    launcher_reap(l, &h);
    snprintf(path, sizeof path, "%s/hostfile", fx->dir);
    t = read_text(path);
    assert_non_null(t);
    assert_non_null(strstr(t, "\na slots=2\nc slots=3\n"));
    assert_null(strstr(t, "dead"));
    free(t);
    t = read_text(a.log);
    char want_arg[500];
    snprintf(want_arg, sizeof want_arg, "--hostfile %s/hostfile", fx->dir);
    assert_non_null(strstr(t, want_arg));
    free(t);
    launcher_close(l);

    /* local: this machine is always there. */
    launcher_config_t lc = {.hostname = "here"};
    assert_int_equal(launcher_open(&lc, &l, err, sizeof err), 0);
    launcher_probe_start(l, "here", mono(), &p);
    assert_int_equal(launcher_probe_poll(l, &p, mono()), 1);
    assert_int_equal(launcher_host_schedulable(l, "here"), 1);
    launcher_close(l);
}

/* ---- the MCA defaults on mpirun's command line --------------------------------------------- */

/* One attempt of l (mpirun = /bin/true) to its end; the log's header line (the command). */
static char *local_command(fx_t *fx, launcher_t *l)
{
    attempt_t a;
    attempt_init(fx, &a);
    unlink(a.log);
    launch_handle_t h;
    char err[ERRLEN];
    assert_int_equal(launcher_start(l, &a.req, &h, err, sizeof err), 0);
    launch_status_t st;
    double end = mono() + 30;
    do {
        launcher_poll(l, &h, a.ec, a.log, mono(), &st);
        if (!st.ended) nap();
    } while (!st.ended && mono() < end);
    assert_true(st.ended);
    launcher_reap(l, &h);
    char *t = read_text(a.log);
    assert_non_null(t);
    return t;
}

static void test_mca_defaults(void **state)
{
    fx_t *fx = *state;
    char err[ERRLEN], hf[400];
    launcher_t *l = NULL;
    static const char PACER[] = "-np 3 --mca btl_tcp_eager_limit " LAUNCH_TCP_EAGER_BYTES
                                " --mca btl_tcp_max_send_size " LAUNCH_TCP_EAGER_BYTES " ";

    /* local: the user set nothing, so pacer's eager limit. */
    launcher_config_t cfg = {.hostname = "here", .mpirun = "/bin/true"};
    assert_int_equal(launcher_open(&cfg, &l, err, sizeof err), 0);
    char *t = local_command(fx, l);
    assert_non_null(strstr(t, PACER));
    free(t);
    /* Either of the pair in the environment (mpirun reads it): neither is added. */
    setenv("OMPI_MCA_btl_tcp_eager_limit", "65536", 1);
    t = local_command(fx, l);
    assert_non_null(
        strstr(t, "/bin/true --oversubscribe --allow-run-as-root --bind-to none -np 3 /path/to/pacer-worker"));
    assert_null(strstr(t, "--mca"));
    free(t);
    unsetenv("OMPI_MCA_btl_tcp_eager_limit");
    /* a binding policy of the user's: no --bind-to of pacer's (concurrent jobs would otherwise
     * all be bound from core 0) */
    setenv("OMPI_MCA_hwloc_base_binding_policy", "core", 1);
    t = local_command(fx, l);
    assert_null(strstr(t, "--bind-to"));
    free(t);
    unsetenv("OMPI_MCA_hwloc_base_binding_policy");
    setenv("OMPI_MCA_btl_tcp_max_send_size", "4194304", 1);
    t = local_command(fx, l);
    assert_null(strstr(t, "--mca"));
    free(t);
    unsetenv("OMPI_MCA_btl_tcp_max_send_size");
    launcher_close(l);

    /* hostfile: the same. */
    snprintf(hf, sizeof hf, "%s/hosts", fx->dir);
    assert_int_equal(write_text(hf, "a slots=4\n"), 0);
    cfg.hostfile = hf;
    assert_int_equal(launcher_open(&cfg, &l, err, sizeof err), 0);
    t = local_command(fx, l);
    assert_non_null(strstr(t, PACER));
    assert_non_null(strstr(t, "--hostfile"));
    free(t);
    setenv("OMPI_MCA_btl_tcp_eager_limit", "65536", 1);
    t = local_command(fx, l);
    assert_non_null(strstr(t, "--hostfile"));
    assert_null(strstr(t, "--mca"));
    free(t);
    unsetenv("OMPI_MCA_btl_tcp_eager_limit");
    launcher_close(l);
}

static void test_slurm_hosts(void **state)
{
    fx_t *fx = *state;
    char err[ERRLEN], text[256];
    launcher_t *l = NULL;
    /* A stand-in for slurmd: a listening socket on a port the kernel picks. */
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(ls, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(listen(ls, 4), 0);
    socklen_t sl = sizeof sa;
    assert_int_equal(getsockname(ls, (struct sockaddr *)&sa, &sl), 0);
    snprintf(text, sizeof text, "Configuration data as of ...\nSlurmctldPort = 6817\nSlurmdPort = %d\n",
             ntohs(sa.sin_port));
    answer(fx, "scontrol", 0, text);
    answer(fx, "sinfo", 0, "n1 2 127.0.0.1\nn2 4 127.0.0.1\nn3 4 (null)\n");
    answer(fx, "srun", 0, "MPI plugin types are...\n\tnone\n\tpmix\n");
    launcher_config_t cfg = {.kind = "slurm", .hostname = "here", .slurm_args = "--ntasks-per-node=1"};
    assert_int_equal(launcher_open(&cfg, &l, err, sizeof err), 0);
    const launch_host_t *hosts;
    assert_int_equal(launcher_hosts(l, &hosts), 3);
    assert_int_equal(launcher_slots(l), 3);   /* one rank per node, whatever the CPUs */
    assert_string_equal(hosts[2].addr, "n3"); /* no NodeAddr: the name */

    launch_probe_t p;
    launcher_probe_start(l, "n1", mono(), &p);
    assert_int_equal(probe_wait(l, &p), 1);
    close(ls); /* slurmd gone: refused */
    launcher_probe_start(l, "n2", mono(), &p);
    assert_int_equal(probe_wait(l, &p), 0);
    assert_non_null(strstr(p.why, "slurmd at 127.0.0.1:"));
    assert_non_null(strstr(p.why, "refused"));

    answer(fx, "sinfo", 0, "n1 idle\n");
    assert_int_equal(launcher_host_schedulable(l, "n1"), 1);
    answer(fx, "sinfo", 0, "n1 idle*\n");
    assert_int_equal(launcher_host_schedulable(l, "n1"), 0);
    answer(fx, "sinfo", 0, "n1 down\n");
    assert_int_equal(launcher_host_schedulable(l, "n1"), 0);
    answer(fx, "sinfo", 1, "slurm_load_node: Unable to contact slurm controller\n");
    assert_int_equal(launcher_host_schedulable(l, "n1"), 0);

    /* Reload: what sinfo says now; a controller that does not answer keeps the old list. */
    assert_int_equal(launcher_reload(l, err, sizeof err), -1);
    assert_non_null(strstr(err, "Unable to contact slurm controller"));
    assert_int_equal(launcher_hosts(l, &hosts), 3);
    answer(fx, "sinfo", 0, "n1 2 10.0.0.1\nn4 8 10.0.0.4\n");
    assert_int_equal(launcher_reload(l, err, sizeof err), 0);
    assert_int_equal(launcher_hosts(l, &hosts), 2);
    assert_string_equal(hosts[1].name, "n4");

    /* An attempt on some nodes only: the others are excluded. */
    attempt_t a;
    attempt_init(fx, &a);
    const char *use[] = {"n4"};
    a.req.hosts = use;
    a.req.nhosts = 1;
    a.req.world = 1;
    launch_handle_t h;
    answer(fx, "sbatch", 0, "90\n");
    assert_int_equal(launcher_start(l, &a.req, &h, err, sizeof err), 0);
    char *t = calls(fx);
    assert_non_null(strstr(t, "sbatch --parsable --job-name=pacer-j-7 --ntasks=1 --no-requeue"));
    assert_non_null(strstr(t, "--ntasks-per-node=1 --exclude=n1 "));
    free(t);
    launcher_close(l);
}

/* A host's benchmark output, read strictly: one good line passes; anything else is a
 * failing host with the reason (coordinator/preflight.c). */
static void test_preflight_parse(void **state)
{
    (void)state;
    double v = 0;
    char dev[16], why[256];
    const char *good = "=== pacer-coordinator header ===\n"
                       "device auto: no driver; training on the CPU\n"
                       "{\"benchmark\":{\"device\":\"cpu\",\"model\":\"lenet5\",\"samples_per_s\":812.5}}\n";
    assert_int_equal(preflight_parse_output(good, strlen(good), "lenet5", &v, dev, sizeof dev, why, sizeof why), 0);
    assert_true(v == 812.5);
    assert_string_equal(dev, "cpu");
    static const struct {
        const char *text, *why;
    } BAD[] = {
        {"", "no {\"benchmark\": ...} line"},
        {"benchmark: 812 samples/s\n", "no {\"benchmark\": ...} line"},
        {"{\"benchmark\": 5}\n", "not a JSON object"},
        {"{\"benchmark\":{\"model\":\"lenet5\",\"device\":\"cpu\",\"samples_per_s\":1}", "not a JSON object"},
        {"{\"benchmark\":{\"model\":\"mlp\",\"device\":\"cpu\",\"samples_per_s\":1}}", "model is mlp, not lenet5"},
        {"{\"benchmark\":{\"model\":\"lenet5\",\"device\":\"CPU; rm\",\"samples_per_s\":1}}", "device"},
        {"{\"benchmark\":{\"model\":\"lenet5\",\"device\":\"cpu\",\"samples_per_s\":-3}}", "samples_per_s"},
        {"{\"benchmark\":{\"model\":\"lenet5\",\"device\":\"cpu\",\"samples_per_s\":\"fast\"}}", "samples_per_s"},
        {"{\"benchmark\":{\"model\":\"lenet5\",\"device\":\"cpu\",\"samples_per_s\":1e300}}", "samples_per_s"},
        {"{\"benchmark\":{\"model\":\"lenet5\",\"model\":\"lenet5\",\"device\":\"cpu\",\"samples_per_s\":1}}",
         "not a JSON object"},
    };
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        why[0] = 0;
        assert_int_equal(preflight_parse_output(BAD[i].text, strlen(BAD[i].text), "lenet5", &v, dev, sizeof dev, why,
                                                sizeof why),
                         -1);
        if (!strstr(why, BAD[i].why)) fail_msg("case %zu: '%s' does not say '%s'", i, why, BAD[i].why);
    }
    /* Not NUL-terminated: only len bytes are read. */
    assert_int_equal(preflight_parse_output(good, 20, "lenet5", &v, dev, sizeof dev, why, sizeof why), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_kinds_and_hostfile, setup, teardown),
        cmocka_unit_test_setup_teardown(test_adopt, setup, teardown),
        cmocka_unit_test_setup_teardown(test_slurm_open, setup, teardown),
        cmocka_unit_test_setup_teardown(test_slurm_attempt, setup, teardown),
        cmocka_unit_test_setup_teardown(test_slurm_mpirun_inside, setup, teardown),
        cmocka_unit_test(test_slurm_parse),
        cmocka_unit_test(test_slurm_parse_drains),
        cmocka_unit_test_setup_teardown(test_hostfile_reload_and_probe, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mca_defaults, setup, teardown),
        cmocka_unit_test_setup_teardown(test_slurm_hosts, setup, teardown),
        cmocka_unit_test(test_preflight_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
