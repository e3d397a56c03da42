/* worker/sigterm.h - a notice to stop (SIGTERM: Slurm's before its SIGKILL, a spot
 * instance's, `kill`; SIGUSR1, NOTICE_FORWARDED_SIGNAL: a coordinator's drain, which
 * mpirun forwards to every rank without tearing the job down): heard by a signal handler that only sets a
 * flag; the training loops read it at each step boundary, every rank agrees on it there
 * (in ssgd's gradient all-reduce, else worker_t.notice_agree), rank 0 checkpoints, and
 * every rank exits with NOTICE_EXIT_STATUS (common/notice.h), which the coordinator reads as "interrupted with
 * notice", not as a failure. */
#ifndef PACER_WORKER_SIGTERM_H
#define PACER_WORKER_SIGTERM_H

/* Installs the handler for SIGTERM and SIGUSR1 (SA_RESTART: a system call it interrupts
 * goes on). Called first thing, before MPI_Init: a notice during start-up (MPI_Init,
 * reading the data, building the model, resuming) is remembered, not a death by the
 * default action, and the first step boundary acts on it. 0, or -1 with errno. */
int sigterm_install(void);
/* 1 while both signals still run this handler (MPI_Init may install its own: the caller
 * installs it again then), else 0. */
int sigterm_installed(void);
/* The signal heard (SIGTERM or SIGUSR1), or 0 while none was. */
int sigterm_heard(void);

/* The notice rides in the synchronous all-reduce a step makes anyway (ssgd: the fused
 * gradient buffer's last extra, model.h's MODEL_GRAD_EXTRA), so that agreeing on it costs
 * no collective of its own: the slot a rank sends is its contribution (0 or 1, the count
 * of contributing ranks once summed) plus (nranks + 1) when it heard a notice. The SUM
 * then stays below (nranks + 1)^2, exact in a float for any world up to 4000 ranks, and
 * every rank decodes the same two counts from it. */
float sigterm_slot_pack(int contributes, int heard_one, int nranks);
/* The summed slot: the contributing ranks, and *heard_ranks the ranks that heard a notice. */
int sigterm_slot_unpack(float sum, int nranks, int *heard_ranks);

#endif
