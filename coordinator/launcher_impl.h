/* coordinator/launcher_impl.h - what the launcher kinds share (launcher.c dispatches,
 * launcher_impl.c has the helpers every kind calls;
 * launch_local.c runs local and hostfile, launch_hostfile.c reads hostfiles,
 * launch_slurm.c talks to Slurm, launch_sim.c runs pacer-sim). Not for the rest of the
 * coordinator: launcher.h is. It speaks launcher_types.h's words, not launcher.h's calls:
 * the dispatcher calls the kinds, never the reverse. */
#ifndef PACER_LAUNCHER_IMPL_H
#define PACER_LAUNCHER_IMPL_H

#include <limits.h>

#include "launcher_types.h"

typedef struct {
    const char *name;
    /* Takes what the kind needs from cfg (launcher.c then calls discover). */
    int (*open)(launcher_t *l, const launcher_config_t *cfg, char *err, size_t errlen);
    /* Learns the hosts into hosts (LAUNCH_MAX_HOSTS), *n and *slots; open and reload. */
    int (*discover)(launcher_t *l, launch_host_t *hosts, int *n, int *slots, char *err, size_t errlen);
    void (*probe_start)(launcher_t *l, const launch_host_t *host, double now, launch_probe_t *p);
    /* After probe_start set p->result = -1: finds out; the deadline is launcher.c's. */
    void (*probe_poll)(launcher_t *l, launch_probe_t *p);
    int (*schedulable)(launcher_t *l, const char *host);
    int (*rm_drains)(launcher_t *l, launch_rm_drain_t *out, int max); /* NULL: none */
    /* Starts the attempt (the header line and the handle file are launcher.c's). */
    int (*start)(launcher_t *l, const launch_req_t *req, launch_handle_t *h, char *err, size_t errlen);
    void (*poll)(launcher_t *l, launch_handle_t *h, const char *exit_code_path, const char *log_path, double now,
                 launch_status_t *st);
    void (*stop)(launcher_t *l, launch_handle_t *h, int hard);
    void (*notice)(launcher_t *l, launch_handle_t *h); /* NULL: stop soft */
    void (*reap)(launcher_t *l, launch_handle_t *h);
    int predicts_placement; /* launcher_rank_hosts can answer before the start */
} launcher_ops_t;

#define LAUNCH_SLURM_ARGS_MAX 32

struct launcher {
    launcher_kind_t kind;
    const launcher_ops_t *ops;
    launch_host_t hosts[LAUNCH_MAX_HOSTS];
    int nhosts, slots;
    char hostname[256];
    char mpirun[PATH_MAX];
    char hostfile[PATH_MAX];
    /* slurm */
    int slurm_pmix; /* srun --mpi=pmix, else mpirun in the allocation */
    char partition[128];
    char args_buf[1024]; /* --slurm-args, split in place */
    char *args[LAUNCH_SLURM_ARGS_MAX];
    int nargs;
    int tasks_per_node; /* --ntasks-per-node in --slurm-args (0 = none) */
    int slurmd_port;    /* SlurmdPort, for probes */
    /* sim */
    char sim[PATH_MAX];
    int sim_slots; /* simulations at a time (its one host's slots) */
};

extern const launcher_ops_t LAUNCH_LOCAL_OPS; /* local and hostfile */
extern const launcher_ops_t LAUNCH_SLURM_OPS;
extern const launcher_ops_t LAUNCH_SIM_OPS;

/* The local launcher's poll, stop and reap: every kind whose attempt is the shell wrapper
 * of launch.h in a session on this machine (local, hostfile, sim) follows it the same way. */
void launch_local_poll(launcher_t *l, launch_handle_t *h, const char *exit_code_path, const char *log_path, double now,
                       launch_status_t *st);
void launch_local_stop(launcher_t *l, launch_handle_t *h, int hard);
void launch_local_notice(launcher_t *l, launch_handle_t *h);
void launch_local_reap(launcher_t *l, launch_handle_t *h);

/* Open MPI's TCP eager limit and largest fragment (docs/PERFORMANCE.md, "Over TCP: Open
 * MPI's eager limit"): pacer's default, in bytes, for mpirun's jobs. */
#define LAUNCH_TCP_EAGER_BYTES "1048576"

/* The fence kind pacer names for srun's ranks, in Slurm's PMIx plugin's variable. */
#define LAUNCH_SLURM_FENCE_ENV "SLURM_PMIX_FENCE"
#define LAUNCH_SLURM_FENCE LAUNCH_SLURM_FENCE_ENV "=tree"

/* Appends pacer's MCA defaults to argv at a: "--mca btl_tcp_eager_limit B --mca
 * btl_tcp_max_send_size B" (6 words) for mpirun, or for srun (srun, 1) the same as one
 * "--export=ALL,OMPI_MCA_...=B,...,SLURM_PMIX_FENCE=tree" word (srun takes no --mca; its
 * ranks read the environment). The pair is left out when the user chose either setting
 * in the environment (OMPI_MCA_btl_tcp_eager_limit, OMPI_MCA_btl_tcp_max_send_size), the
 * fence when SLURM_PMIX_FENCE is set: theirs wins. Returns the new a. */
#define LAUNCH_MCA_WORDS 6
int launcher_mca_defaults(const char **argv, int a, int srun);

/* Appends "=== pacer-coordinator DATE: job ID attempt N: ARGV ===" to the log. */
void launcher_log_header(const char *log_path, const char *id, int attempt, const char *const *argv);

/* Appends one line to the log ("pacer-coordinator: ..."): a launcher's account of an
 * ending that the exit status does not tell (it becomes the job's reason when no rank
 * said more). */
void launcher_log_note(const char *log_path, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Reads an Open MPI hostfile ("NAME [slots=N]" lines, # comments) into hosts
 * (LAUNCH_MAX_HOSTS), *n and *slots. */
int launch_hostfile_parse(const char *path, launch_host_t *hosts, int *n, int *slots, char *err, size_t errlen);
/* Writes a hostfile of the named hosts (with the slots l knows for them) to path. */
int launch_hostfile_write(const launcher_t *l, const char *path, const char *const *names, int n, char *err,
                          size_t errlen);
/* The host of that name, or NULL. */
const launch_host_t *launcher_host(const launcher_t *l, const char *name);

#endif
