/* common/notice.h - the note a worker leaves when it stopped on notice (SIGTERM: Slurm's
 * before its SIGKILL, a spot instance's, `kill`; a drain's SIGUSR1): which rank heard it, on which
 * host, the step every rank stopped at and the checkpoint it wrote there. Rank 0 writes it
 * beside the checkpoint (DIR/NAME.notice) before it exits with NOTICE_EXIT_STATUS; the
 * coordinator reads it to record the job's interruption, then removes it. The file is
 * input from outside for the coordinator: read bounded and checked field by field. */
#ifndef PACER_NOTICE_H
#define PACER_NOTICE_H

#include <signal.h>
#include <stddef.h>

/* The exit status of every rank of a run stopped on notice (sysexits' EX_TEMPFAIL:
 * "try again later"): the coordinator resumes it without counting a restart. */
#define NOTICE_EXIT_STATUS 75
/* The notice the coordinator itself gives (a drain): sent to mpirun, which forwards
 * SIGUSR1 to every rank at once and kills none. A SIGTERM to mpirun reaches the ranks
 * only as part of Open MPI's teardown: SIGTERM after odls_base_sigkill_timeout (1 s) and
 * SIGKILL as long again after it, so a rank whose step (or checkpoint) takes longer died
 * before its step boundary, without its checkpoint or note. The worker hears both. */
#define NOTICE_FORWARDED_SIGNAL SIGUSR1
#define NOTICE_HOST_MAX 64
#define NOTICE_FILE_MAX 4096 /* a note is a line of JSON; more is not one */

typedef struct {
    int signal;                 /* the signal heard (SIGTERM, or a drain's SIGUSR1) */
    int rank;                   /* the (highest) rank that heard it */
    char host[NOTICE_HOST_MAX]; /* that rank's host ("" unknown) */
    long long at_step;          /* the step every rank stopped after */
    long long checkpoint_step;  /* the step of the checkpoint it left (-1: none) */
} notice_t;

/* DIR/NAME.notice into out; -1 when it does not fit. */
int notice_path(char *out, size_t len, const char *dir, const char *name);
/* Writes n as one line of JSON to path, atomically. 0, or -1 with err set. */
int notice_write(const char *path, const notice_t *n, char *err, size_t errlen);
/* Parses a note's text (len bytes, no NUL needed): 0 with n filled, or -1 with err naming
 * the field that is wrong. Every number is bounded (rank 0..2^20, steps 0..2^53, the
 * checkpoint step -1.. at most at_step + 1), the host one line of printable bytes. */
int notice_parse(const char *text, size_t len, notice_t *n, char *err, size_t errlen);
/* Reads and parses path: 1 with n filled, 0 when there is no such file, -1 with err. */
int notice_read(const char *path, notice_t *n, char *err, size_t errlen);

#endif
