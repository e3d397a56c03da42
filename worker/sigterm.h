/* worker/sigterm.h - a notice to stop (SIGTERM: Slurm's before its SIGKILL, a spot
 * instance's, `kill`, a coordinator's drain): heard by a signal handler that only sets a
 * flag; the training loops read it at each step boundary, every rank agrees on it there
 * (worker_t.notice_agree), rank 0 checkpoints, and every rank exits with
 * NOTICE_EXIT_STATUS (common/notice.h), which the coordinator reads as "interrupted with
 * notice", not as a failure. */
#ifndef PACER_WORKER_SIGTERM_H
#define PACER_WORKER_SIGTERM_H

/* Installs the handler for SIGTERM (SA_RESTART: a system call it interrupts goes on).
 * Called where the loop will read the flag: the ranks of the synchronous loop and the
 * parameter server; elsewhere SIGTERM keeps its default. 0, or -1 with errno. */
int sigterm_install(void);
/* The signal heard (SIGTERM), or 0 while none was. */
int sigterm_heard(void);

#endif
