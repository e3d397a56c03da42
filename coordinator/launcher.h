/* coordinator/launcher.h - how a job attempt's ranks are started, followed and stopped:
 * one small interface, three kinds (pacer-coordinator --launcher):
 *
 *   local     mpirun on this machine, one slot per online CPU
 *   hostfile  mpirun over an Open MPI hostfile (--hostfile): its daemons reach the hosts
 *             through ssh, or whatever plm_rsh_agent names
 *   slurm     every attempt is a Slurm batch job (sbatch --no-requeue); inside the
 *             allocation the ranks are started by `srun --mpi=pmix` (Slurm's PMIx
 *             plugin is the PMIx server) or by `mpirun` (Open MPI's Slurm support: it
 *             reads the allocation and starts its daemons with srun); followed with
 *             `scontrol show job`, stopped with scancel. Host names are Slurm node names.
 *   sim       build/pacer-sim on this machine: the job's ranks run on a simulated
 *             cluster (SimGrid SMPI, sim/), all of them inside one process. The daemon
 *             opens it beside the launcher above and gives it the jobs whose spec says
 *             simulate.enabled; its slots are simulations at a time (--sim-slots), not
 *             ranks. Host names are the simulated hosts.
 *
 * The coordinator (run.c) decides what runs and when (queue, restarts, cancels,
 * heartbeats); a launcher only knows how. local and hostfile run mpirun under a shell
 * wrapper in a session of its own (launch.h); slurm runs the same wrapper as the batch
 * script. Either way the wrapper writes the command's exit status into the attempt's
 * exit-code file, which is how an attempt that a restarted coordinator did not start is
 * known to have ended.
 *
 * Every call is made by one thread at a time (the tick thread; coordinator_stop after
 * it ended). Calls that ask Slurm run a client command and wait for it (5 s at most).
 */
#ifndef PACER_LAUNCHER_H
#define PACER_LAUNCHER_H

#include <stddef.h>

#include "launcher_types.h"

/* Opens a launcher of cfg->kind and learns its hosts (hostfile: parses it; slurm: asks
 * sinfo, so slurmctld must answer now). Returns 0, or -1 with err. */
int launcher_open(const launcher_config_t *cfg, launcher_t **out, char *err, size_t errlen);
void launcher_close(launcher_t *l);

launcher_kind_t launcher_kind(const launcher_t *l);
const char *launcher_name(const launcher_t *l); /* "local", "hostfile", "slurm", "sim" */

/* The hosts ranks can run on and their slots, as learnt at open or the last reload. */
int launcher_hosts(const launcher_t *l, const launch_host_t **hosts);
int launcher_slots(const launcher_t *l);

/* Learns the hosts again, as launcher_open did (hostfile: reads the file again; slurm:
 * asks sinfo; local: counts the CPUs; sim: this machine with --sim-slots). Returns 0, or -1 with err: then the hosts known
 * before stay. Attempts that run are not touched. */
int launcher_reload(launcher_t *l, char *err, size_t errlen);

/* ---- is a host there? ----------------------------------------------------------------
 * A probe checks, without blocking the caller, that ranks can be started on a host now:
 *   local     this machine: up at once (sim too: its one host is this machine)
 *   hostfile  the remote shell Open MPI starts its daemons with runs `true` there: the
 *             first alternative of $OMPI_MCA_plm_rsh_agent, else ssh (with BatchMode and
 *             a 5 s ConnectTimeout)
 *   slurm     a TCP connection to the node's slurmd (NodeAddr:SlurmdPort): slurmctld
 *             notices a dead node only after SlurmdTimeout, too late for a restart
 * A probe (launch_probe_t, launcher_types.h) that has not answered within
 * LAUNCH_PROBE_TIMEOUT_S counts as down. */
#define LAUNCH_PROBE_TIMEOUT_S 10.0
void launcher_probe_start(launcher_t *l, const char *host, double now, launch_probe_t *p);
/* 1 up, 0 down (p->why says why), -1 not known yet. */
int launcher_probe_poll(launcher_t *l, launch_probe_t *p, double now);
/* Stops a probe that still runs (and reaps it). */
void launcher_probe_cancel(launcher_t *l, launch_probe_t *p);
/* Whether the resource manager would place ranks on host now (slurm: sinfo's state is
 * not down, drained, failing or not responding; others: 1). Asked when a host that was
 * lost answers a probe again: slurmd may be back before slurmctld takes the node. May
 * block (slurm: one sinfo, 5 s at most). */
int launcher_host_schedulable(launcher_t *l, const char *host);

/* Hosts the resource manager itself drains (launch_rm_drain_t, launcher_types.h). */
#define LAUNCH_RM_DRAINS_MAX LAUNCH_MAX_HOSTS
/* The hosts the resource manager drains now, into out (at most max): their number, 0
 * where the launcher has no drains of its own (local, hostfile, sim), -1 when the
 * resource manager did not answer (the caller keeps what it knew). May block (slurm:
 * one sinfo, 5 s at most). */
int launcher_rm_drains(launcher_t *l, launch_rm_drain_t *out, int max);
/* Whether launcher_rm_drains can say anything (the slurm launcher). */
int launcher_has_rm_drains(const launcher_t *l);

/* Where rank r will run, for the first batch plan (from stored host profiles): Open
 * MPI's default by-slot mapping over the hosts (names: only these, as an attempt with
 * launch_req_t.hosts; NULL = all), wrapping around when oversubscribed. Returns 0, or
 * -1 when the launcher cannot know before the job starts (slurm: Slurm places the
 * tasks). */
int launcher_rank_hosts(const launcher_t *l, int world, const char *const *names, int nnames, const char **out);

/* Starts an attempt. Appends the "=== pacer-coordinator ... ===" header to the log,
 * clears *h and fills it, and records it in req->handle_path. Returns 0, or -1 with err
 * (then nothing runs). */
int launcher_start(launcher_t *l, const launch_req_t *req, launch_handle_t *h, char *err, size_t errlen);

/* Has the attempt ended? Cheap enough for every tick: slurm asks slurmctld at most once a
 * second per attempt and reads the exit-code file in between. A question that gets no
 * answer means "still running" (unknown is not ended). log_path gets a line saying why
 * when the launcher knows more than an exit status (e.g. "Slurm job 12: NODE_FAIL"). */
void launcher_poll(launcher_t *l, launch_handle_t *h, const char *exit_code_path, const char *log_path, double now,
                   launch_status_t *st);

/* Asks the attempt to stop: hard = 0 SIGTERM to every process (slurm: scancel), hard = 1
 * SIGKILL (slurm: scancel --signal=KILL --full). launcher_poll says when it is over. */
void launcher_stop(launcher_t *l, launch_handle_t *h, int hard);
/* Asks the attempt's ranks to stop at their next step boundary, checkpointed (a drain):
 * local and hostfile send NOTICE_FORWARDED_SIGNAL (common/notice.h) to mpirun alone,
 * which forwards it to every rank and kills none, so the ranks have as long as they need
 * (the caller's SIGKILL, launcher_stop hard, is the limit); with no mpirun in the session
 * yet, and for the other kinds, launcher_stop soft; slurm: `scancel --signal=TERM` of the
 * job's steps (srun's ranks; with mpirun inside the allocation, launcher_stop soft). */
void launcher_notice(launcher_t *l, launch_handle_t *h);
/* Whether launcher_notice is a notice of its own (its ranks stop at their next step), not
 * launcher_stop soft: 1 for local, hostfile and slurm with srun's ranks (scancel
 * --signal=TERM of the job's steps), 0 for slurm with mpirun inside the allocation and for
 * the simulator. */
int launcher_has_notice(const launcher_t *l);

/* The attempt is over (or must be treated so): kills stragglers, reaps a child, and
 * clears *h. */
void launcher_reap(launcher_t *l, launch_handle_t *h);

/* ---- are the attempt's ranks gone? ------------------------------------------------------
 * mpirun can exit before its ranks on other hosts do (the remote daemons tear them down a
 * moment later): until they are gone, the job's slots are not free and its checkpoint may
 * still change. A drain, started once launcher_poll said the attempt ended and before
 * launcher_reap, kills what is left of the attempt on this machine (its session) and asks
 * every other host of the attempt through the remote shell whether a process whose command
 * line names mark (the attempt's spec path) still runs (`pgrep -f`), every
 * LAUNCH_DRAIN_PERIOD_S. A host whose ranks are still there grace_s after the start gets
 * `pkill -KILL -f` through the same shell (logged); one still not clear grace_s after that,
 * or that the remote shell cannot reach (exit 255: mpirun cannot start ranks there either),
 * is given up on, logged: the checkpoint fence (common/ckptdir.h) keeps what such a rank
 * writes from being taken. slurm: nothing to do (Slurm reports the job over only once its
 * steps are). Polled like a probe: nothing blocks. */
#define LAUNCH_DRAIN_PERIOD_S 0.2
typedef struct {
    char name[256];
    pid_t pid;   /* the remote shell running the check or the kill (0: none) */
    int killing; /* pid is the kill */
    int done;    /* no rank left there (or given up) */
} launch_drain_host_t;
typedef struct {
    char id[64];                /* the job, for the log */
    char pattern[4200];         /* the remote command (pgrep/pkill's pattern, quoted) */
    launch_drain_host_t *hosts; /* the attempt's hosts but this machine (heap) */
    int nhosts;
    int killed;                 /* the remote kill was sent */
    double kill_at, give_up_at; /* start + grace_s, start + 2 grace_s */
    double next_round;
    int active; /* started and not finished */
} launch_drain_t;
/* Starts the drain of h's attempt over hosts (names as in launch_req_t.hosts; NULL: all of
 * the launcher's). Returns 0 (d is then polled), or -1 when out of memory (then only this
 * machine was cleared: logged). */
int launcher_drain_start(launcher_t *l, launch_handle_t *h, const char *id, const char *const *hosts, int nhosts,
                         const char *mark, double grace_s, double now, launch_drain_t *d);
/* 1 when no rank of the attempt is left anywhere (or none can be waited for any longer),
 * 0 while it waits. */
int launcher_drain_poll(launcher_t *l, launch_handle_t *h, launch_drain_t *d, double now);
/* Ends a drain early (the coordinator stops): its remote shells are killed and reaped. */
void launcher_drain_cancel(launcher_t *l, launch_drain_t *d);

/* After a coordinator restart: the handle recorded at handle_path. Returns 1 when it
 * names something to follow (alive or not: launcher_poll finds out how it ended), 0
 * when there is none or it belongs to another kind of launcher (then *h is zero; what
 * says why goes to what). */
int launcher_adopt(launcher_t *l, const char *handle_path, launch_handle_t *h, char *what, size_t whatlen);

/* "session 1234" or "Slurm job 12": for log lines. */
const char *launcher_describe(const launch_handle_t *h, char *buf, size_t len);

/* Parsing `scontrol show job -o ID` (exposed for the unit tests): fills the state name
 * ("RUNNING", "COMPLETED", ...; "" when absent), the exit status and signal of ExitCode=S:G,
 * and NodeList ("" when absent). Returns 0, or -1 when text is not a job record. */
int launch_slurm_parse_job(const char *text, char *state, size_t statelen, int *exit_status, int *signal, char *nodes,
                           size_t nodeslen);
/* Parsing `sinfo --noheader --Node --format=%N|%t|%E` (exposed for the unit tests): the
 * nodes whose compact state says drained or draining ("drain", "drng", with any of
 * sinfo's suffixes), each once (sinfo lists a node once per partition), their reasons
 * cut to fit; a line that is not NAME|STATE|REASON, or whose name is empty or longer than
 * 255 bytes, is skipped. Returns how many went into out (at most max). */
int launch_slurm_parse_drains(const char *text, launch_rm_drain_t *out, int max);

#endif
