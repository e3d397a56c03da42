/* coordinator/launcher_types.h - the words of the launcher interface (launcher.h): its
 * kinds, hosts, configuration, an attempt's request, handle and status, a probe, a drain
 * the resource manager makes. Apart from launcher.h's calls so that the kinds
 * (launcher_impl.h: launch_local.c, launch_slurm.c, launch_sim.c, launch_hostfile.c),
 * which the dispatcher (launcher.c) calls, speak them without seeing the dispatcher's
 * calls: no kind calls up into it. */
#ifndef PACER_LAUNCHER_TYPES_H
#define PACER_LAUNCHER_TYPES_H

#include <sys/types.h>

#include "supervise.h"

#define LAUNCH_MAX_HOSTS 256
#define LAUNCH_MAX_SLOTS 65536 /* per host: a bound on what a hostfile or sinfo says */

typedef enum { LAUNCHER_LOCAL, LAUNCHER_HOSTFILE, LAUNCHER_SLURM, LAUNCHER_SIM } launcher_kind_t;

typedef struct {
    char name[256]; /* what a rank reports as its host: gethostname(), or the Slurm node name */
    int slots;      /* ranks it takes before mpirun oversubscribes; Slurm: its CPUs (at most
                         --ntasks-per-node when --slurm-args sets it) */
    char addr[256]; /* where a probe reaches it: Slurm's NodeAddr; else the name */
} launch_host_t;

typedef struct {
    const char *kind;            /* "local", "hostfile", "slurm"; NULL or "": hostfile when
                                   hostfile is set, else local */
    const char *hostname;        /* this machine (the local launcher's only host) */
    const char *mpirun;          /* mpirun binary */
    const char *hostfile;        /* absolute path (hostfile only) */
    const char *slurm_mpi;       /* "pmix", "mpirun", or NULL/"" = pmix when `srun --mpi=list`
                                   names it, else mpirun */
    const char *slurm_partition; /* NULL or "" = the default partition */
    const char *slurm_args;      /* extra sbatch options, split on blanks (NULL = none) */
    const char *sim;             /* sim: the pacer-sim binary (absolute) */
    int sim_slots;               /* sim: simulations at a time (<= 0: 1) */
} launcher_config_t;

/* What one attempt runs. */
typedef struct {
    const char *id;             /* the job id */
    int attempt;                /* 1, 2, ...: for the log's header line */
    int world;                  /* ranks */
    const char *const *argv;    /* pacer-worker and its arguments, NULL-terminated */
    const char *dir;            /* STATE_DIR/jobs/{id}: the launcher may keep files there */
    const char *log_path;       /* stdout + stderr of every rank, appended */
    const char *exit_code_path; /* written by the wrapper when the command ends */
    const char *handle_path;    /* launcher_start records the handle here (adoption) */
    /* The hosts the attempt may use, by name (of launcher_hosts), or NULL for all of them:
     * an elastic restart leaves out hosts that were lost, a benchmark names one. hostfile:
     * a hostfile of these in dir; slurm: --exclude of the others. local: ignored. */
    const char *const *hosts;
    int nhosts;
    /* One rank per host, in the order of hosts (a network probe): hostfile and local:
     * mpirun --map-by node; slurm: --ntasks-per-node=1. 0: the launcher's usual placement. */
    int per_host;
} launch_req_t;

/* One attempt's processes, as a launcher follows them. All zero = nothing running. */
typedef struct {
    pid_t pid;                 /* local, hostfile: the wrapper, leader of the session */
    unsigned long long pstart; /* its start time: a reused pid is not it */
    int is_child;              /* started by this process: waitpid works */
    long slurm_job;            /* slurm: the batch job id */
    double next_poll;          /* slurm: when to ask slurmctld again */
    int slurm_seen;            /* slurm: scontrol answered about it at least once */
    int slurm_pending;         /* slurm: PENDING at the last answer */
    int slurm_done;            /* slurm: known to be over (nothing to scancel) */
    int unreachable;           /* slurm: the last question got no answer (logged once) */
} launch_handle_t;

/* What launcher_poll found. */
typedef struct {
    int ended;            /* the attempt is over: outcome and code say how */
    sv_outcome_t outcome; /* SV_EXITED (code = exit status), SV_SIGNALLED (code =
                                       signal), SV_LOST (gone without an exit status) */
    int code;
    int pending; /* queued by the resource manager, not started: no
                                       heartbeat can be expected yet */
    /* Hosts the attempt lost (space-separated; "" = none known): Slurm reports a node
     * that failed under a job (NODE_FAIL, or DOWN while the job ran). The seam for
     * elastic restarts: relaunch on the hosts that remain. */
    char lost_hosts[512];
} launch_status_t;

typedef struct launcher launcher_t;

/* A probe of one host (launcher.h, "is a host there?"). */
typedef struct {
    pid_t pid; /* hostfile: the remote shell */
    int fd;    /* slurm: the connecting socket (-1 none) */
    double deadline;
    int result;    /* -1 running, 0 down, 1 up */
    char why[200]; /* down: what failed */
} launch_probe_t;

/* A host the resource manager itself drains (slurm: `scontrol update nodename=N
 * state=drain reason=R`), which Slurm does not tell the jobs running there about. */
typedef struct {
    char name[256];
    char reason[200]; /* its reason as the resource manager has it ("" none) */
} launch_rm_drain_t;

#endif
