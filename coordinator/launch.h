/* coordinator/launch.h - processes the coordinator starts and watches: the job wrapper
 * (sh around mpirun), the embedded redis-server and short probes; sessions,
 * liveness that survives a coordinator restart, exit-code files and bounded logs.
 *
 * Every process is started with posix_spawn in a new session (so a Ctrl-C or a kill of
 * the coordinator does not reach it, and all its descendants can be found by session id), with
 * an empty signal mask and default dispositions (the daemon blocks and ignores signals
 * its children must not inherit), stdin on /dev/null and no other inherited descriptor.
 */
#ifndef PACER_LAUNCH_H
#define PACER_LAUNCH_H

#include <stddef.h>
#include <sys/types.h>

#define LAUNCH_LOG_MAX (8L << 20) /* a job log is rotated into log.1 beyond 8 MiB */

/* Starts argv (argv[0] is searched in PATH when it has no '/') in a new session, with
 * stdout and stderr appended to out_path (or /dev/null when NULL). *pid is the new
 * process, also its session and process group id. Returns 0 or -1 with err. */
int launch_spawn(const char *const *argv, const char *out_path, pid_t *pid, char *err, size_t errlen);

/* Starts the job: a /bin/sh wrapper runs argv, then writes its exit status into
 * exit_code_path (through a temporary file and a rename, so a reader never sees half a
 * number). The wrapper traps SIGTERM (its children do not inherit the trap) so that it
 * survives a group-wide SIGTERM and still records how mpirun ended. */
int launch_job(const char *tag, const char *const *argv, const char *log_path, const char *exit_code_path, pid_t *pid,
               char *err, size_t errlen);

/* The wrapper's text (a /bin/sh script: $1 = exit-code file, the rest = the command), for
 * launchers that hand it to something else to run (the Slurm launcher's batch script). */
const char *launch_wrapper_script(void);

/* Runs argv to completion with stdout and stderr captured into out (NUL-terminated,
 * truncated to len-1), killing it after timeout_s. Returns its exit status, 128 + the
 * signal's number when a signal ended it (as a shell reports it; SIGKILL after the
 * timeout too), or -1 when it could not run. */
int launch_capture(const char *const *argv, char *out, size_t len, double timeout_s);

/* Start time of pid in clock ticks since boot (/proc/PID/stat field 22) and its state
 * letter. Returns 0, or -1 when there is no such process. */
int proc_stat(pid_t pid, unsigned long long *start, char *state);

/* 1 when pid exists, is not a zombie and (when start != 0) started at start: a pid that
 * was reused by another process after a coordinator restart does not count. */
int proc_alive(pid_t pid, unsigned long long start);

/* The job's processes are its session (the wrapper is a session leader): the wrapper,
 * mpirun and the local ranks, which Open MPI puts in process groups of their own, so a
 * kill(-pgid) alone would miss them. session_alive: 1 while a non-zombie process of
 * session sid exists. session_signal: signals every one of them (scans /proc). */
int session_alive(pid_t sid);
void session_signal(pid_t sid, int sig);
/* Signals only MPI's launchers (mpirun, orterun, prterun, mpiexec) of session sid;
 * returns how many it signalled (0: none there). A notice to stop goes to mpirun alone:
 * it forwards SIGTERM to every rank, local or behind its daemons on other hosts, while a
 * SIGTERM to the whole session also reaches those daemons and remote shells, which die
 * at once and take their ranks with them before the step boundary the notice waits for. */
int session_signal_launchers(pid_t sid, int sig);

/* Reads the number in an exit-code file. Returns 0 with *code, or -1 (missing/garbage). */
int exit_code_read(const char *path, int *code);

/* The last meaningful line of a job log: the last line printed by pacer-worker itself
 * when there is one, else the last non-empty line outside mpirun's dashed banners.
 * Returns 0, or -1 when the log cannot be read or has no such line. */
int log_last_line(const char *path, char *out, size_t len);

/* The last cap - 1 bytes of path into buf, NUL-terminated (empty when it cannot be
 * read); returns the length. */
size_t log_read_tail(const char *path, char *buf, size_t cap);

/* Copy-truncate rotation: when path is larger than max_bytes, copies it to path.1 and
 * truncates it (the writers use O_APPEND, so they continue at the new end). A few lines
 * written during the copy can be lost; the log stays bounded at about 2 x max_bytes.
 * Returns 1 when it rotated, 0 when not needed, -1 on error. */
int log_bound(const char *path, long max_bytes);

#endif
