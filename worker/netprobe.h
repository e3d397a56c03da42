/* worker/netprobe.h - pacer-worker --netprobe S: does the job's network carry MPI
 * messages between these hosts? The worker side of the coordinator's network probe; the
 * coordinator side (when it runs, what it concludes) is coordinator/netprobe.h.
 *
 * Launched the way a job is (mpirun over the attempt's hosts, one rank per host), so the
 * path it tests is the job's: the launcher's remote shell and control channel, and MPI's
 * own transport over the interfaces the job's MPI settings name (btl_tcp_if_include, an
 * InfiniBand BTL, ...). Every rank sends a small message to every other rank and posts a
 * receive from each, then waits at most S seconds for them (never blocking in MPI: tests
 * and naps, errors returned instead of fatal). Each rank prints one line to stdout:
 *
 *   {"netprobe": {"rank": R, "ranks": N, "host": H, "heard": [ranks whose message arrived],
 *                 "sent": [ranks that took this rank's message], "waited_s": T}}
 *
 * A rank that heard every peer and whose messages were all taken finalises MPI and exits
 * 0; any other waits NETPROBE_LINGER_S (so its peers print their lines before the
 * launcher tears the job down) and exits 3 without finalising (a pending send to a peer
 * that is cut off would hold MPI_Finalize). Alone (no launcher, or one rank) it prints
 * the line with empty lists and exits 0: the launch itself is what was tested.
 */
#ifndef PACER_NETPROBE_H
#define PACER_NETPROBE_H

#define NETPROBE_MIN_S 0.1
#define NETPROBE_MAX_S 600.0
#define NETPROBE_LINGER_S 1.0

/* Runs the probe with a wait of seconds; returns the exit status. */
int netprobe_run(double seconds);

#endif
