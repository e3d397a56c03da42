/* coordinator/netprobe.h - the job's network between hosts, probed the way a job is
 * launched (the worker side is worker/netprobe.h).
 *
 * The remote-shell probe (launcher.h) says a host answers on the network ssh uses. A job
 * needs more: the launcher's control channel from here to the host, and MPI's messages
 * between the hosts, over whatever network the job's MPI settings name (a second
 * Ethernet, InfiniBand). A host can answer ssh and have neither (its data link is down).
 * So the coordinator checks, in this order:
 *
 *   0. the path from here: a TCP connection from the coordinator to each host's address
 *      (its name resolved) on port NETPROBE_REACH_PORT, on a thread of the probe's own
 *      (name resolution can block). An answer, accepted or refused, means the address is
 *      reachable; no answer within NETPROBE_REACH_S (or "no route to host") means it is
 *      not, and the host is failing ("the job's network: pw3 (10.78.0.13) does not
 *      answer from the coordinator: timed out after 3 s"). When no host answers, a
 *      firewall rather than the hosts is the likely cause: no verdict from this step.
 *      It takes seconds where the next step, over a host that is cut off, would wait for
 *      mpirun's daemon there until NETPROBE_LAUNCH_S.
 *
 * then runs `pacer-worker --netprobe NETPROBE_WAIT_S` through its own launcher, as a job,
 * over the hosts that answered:
 *
 *   1. the group: one rank on each host probed (mpirun --map-by node over a hostfile of
 *      them; Slurm: --ntasks-per-node=1), every rank exchanging a message with every
 *      other. A host whose rank printed its line is judged by the pairs: a pair is good
 *      when each side heard the other and each took the other's message; a host that has
 *      no good pair with more than half of the others is failing ("the job's network: no
 *      MPI message between pw3 and pw1, pw2 within 5 s"). When every host would fail, or
 *      two hosts fail each other, nothing tells which one is cut: no verdict.
 *   2. each host whose rank printed nothing (the group did not start: mpirun could not
 *      reach that host's daemon over its control channel), alone, one process: a host
 *      whose probe prints nothing within the time is failing ("the job's network: mpirun
 *      could not start a rank there: timed out after 60 s"), unless it fails on every
 *      host (then the worker or the launcher is to blame, as a benchmark failing on every
 *      host is).
 *
 * Each launch has NETPROBE_LAUNCH_S to start (mpirun over a loaded 2-core machine's
 * namespace hosts took up to 8 s) plus the wait; a launch past it is killed and what its
 * ranks printed counts. The files are STATE_DIR/netprobe/{n}/, removed when the probe is
 * over. Tick thread only.
 *
 * Who runs it: run_elastic.c, over an attempt's usable hosts when the attempt failed and no host
 * was found down (a host found failing is left out of the relaunch, as a lost one is);
 * hosts.c, every --host-probe s for a host failing so, with one usable host (alone when
 * none is usable): it is up again when the pair is good.
 */
#ifndef PACER_NETPROBE_H
#define PACER_NETPROBE_H

#include <limits.h>

#include "launcher.h"

#define NETPROBE_WAIT_S 5.0
#define NETPROBE_LAUNCH_S 60.0
#define NETPROBE_LOG_MAX 65536 /* bytes of a probe's output read back */
#define NETPROBE_REACH_S 3.0
#define NETPROBE_REACH_PORT "22" /* ssh's: open or closed, a reachable host answers on it */

#include <pthread.h>
#include <stdatomic.h>

typedef struct {
    char host[256];
    int reach;     /* step 0: 1 it answered, -1 it did not, 0 not checked */
    int lined;     /* its rank printed its line */
    int ok;        /* good pairs with every other host that printed one (alone: it printed) */
    int failing;   /* the verdict: leave it out */
    char why[200]; /* failing: why */
} netprobe_host_t;

typedef enum { NP_IDLE, NP_REACH, NP_GROUP, NP_ALONE, NP_DONE } netprobe_stage_t;

typedef struct {
    netprobe_stage_t stage;
    int n;
    netprobe_host_t *hosts;
    launch_handle_t *h; /* NP_GROUP: h[0]; NP_ALONE: h[i] for host i */
    pthread_t reach_th; /* NP_REACH: the thread that connects (writes hosts[].reach, .why) */
    atomic_int reach_done;
    int *grp, ng; /* NP_GROUP: the hosts in it (their indices) */
    int *running;
    double deadline;
    char dir[PATH_MAX + 64]; /* STATE_DIR/netprobe/{n} */
} netprobe_t;

struct coordinator;

/* Starts a probe of names[0..n) (n >= 1), numbered ++*seq (its directory's name; seq is
 * the daemon's count, hosts.h's netprobe_seq, passed in so that this module needs nothing
 * of hosts.h, which embeds a probe). Returns 0, or -1 with err (nothing runs; np stays
 * NP_IDLE, *seq unchanged). */
int netprobe_start(struct coordinator *c, netprobe_t *np, long *seq, const char *const *names, int n, double now,
                   char *err, size_t errlen);
/* 1 when it is over (np->hosts hold the verdicts), 0 while it runs. */
int netprobe_poll(struct coordinator *c, netprobe_t *np, double now);
/* Stops what still runs, removes its files, frees it (np is then not started). */
void netprobe_stop(struct coordinator *c, netprobe_t *np);

/* ---- pure (unit-tested; netprobe_parse has a fuzzer) ------------------------------------- */

/* The ranks' lines in a probe's output (text, len bytes, not NUL-terminated) of n hosts
 * names[0..n): for each line {"netprobe": {"rank", "ranks", "host", "heard", "sent"}}
 * with ranks == n and rank in [0, n), the host is the name it reports when that is one of
 * names, else names[rank] (one rank per host, in order); lined[h] = 1 and heard[h * n + p]
 * / sent[h * n + p] = 1 for each host p whose rank it lists. Anything else is ignored.
 * Returns the number of hosts that printed a line. */
int netprobe_parse(const char *text, size_t len, int n, const char *const *names, int *lined, unsigned char *heard,
                   unsigned char *sent);

/* The verdicts for n hosts from netprobe_parse's arrays (see above): ok[h] and
 * failing[h]; why[h] (200 bytes each) for a failing host, naming the hosts it could not
 * exchange messages with. A host without a line gets ok = failing = 0 here. */
void netprobe_verdict(int n, const char *const *names, const int *lined, const unsigned char *heard,
                      const unsigned char *sent, int *ok, int *failing, char (*why)[200]);

#endif
