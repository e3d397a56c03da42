/* sim/platform.h - simulated clusters: SimGrid platform files and the mapping of MPI
 * ranks onto their hosts. Shared by build/pacer-sim (which generates a platform from a
 * spec's "simulate" section) and build/pacer-platform (the generator's command line, also
 * from the node profiles the coordinator keeps in Redis).
 *
 * Generated platforms are one star zone (SimGrid's "Cluster" routing): every host has
 * its own full-duplex link to a non-blocking switch, so a message between two hosts
 * crosses two links (each with half the one-way latency) and shares bandwidth only with
 * traffic on the same host's link. A node with k > 1 cores holds k ranks; messages
 * between them take the node's loopback route, a FATPIPE link of the intra-node bandwidth
 * (every pair of ranks gets the full bandwidth, as with NVLink-style fabrics).
 * A host's speed is in flop/s. */
#ifndef PACER_SIM_PLATFORM_H
#define PACER_SIM_PLATFORM_H

#include <stddef.h>
#include <stdio.h>

#include "spec.h"

#define PLATFORM_NAME_MAX 64
#define PLATFORM_MAX_HOSTS 1024
#define PLATFORM_FILE_MAX (16 << 20) /* platform files pacer-sim reads for host names */

typedef struct {
    char name[PLATFORM_NAME_MAX];
    double speed; /* flop/s per core */
    int cores;    /* ranks it holds (a node of `cores` GPUs) */
} platform_host_t;

typedef struct {
    platform_host_t hosts[PLATFORM_MAX_HOSTS];
    int nhosts;
    int has_ps;          /* hosts[0] is "ps", the parameter server's host */
    double bw_bps;       /* each host's link to the switch, bytes/s */
    double lat_s;        /* one-way latency host to host (split over two links) */
    double intra_bw_bps; /* between ranks of one host */
    double intra_lat_s;
    char comment[512]; /* how it was made: the zone's property made_by */
} platform_t;

/* The platform of a spec's simulate section (generator fields; simulate.platform empty):
 * host "ps" at gflops when with_ps, then one host per worker at gflops / slowdown[i]
 * ("w0", "w1", ...), or with gpus_per_node k one k-core host per k workers ("n0", ...). */
void platform_from_spec(const job_spec_t *s, int with_ps, platform_t *p);

/* Writes p as a SimGrid platform file (DTD 4.1). Returns 0, or -1 with err. */
int platform_write(const platform_t *p, FILE *f, char *err, size_t errlen);

/* Host slots of a platform in file order: each host as many times as its cores (so a
 * hostfile maps consecutive ranks onto one node, as Open MPI's by-slot mapping does).
 * The parameter server's host, "ps", is set apart in ps_host ("" when there is none).
 * hostfile, when given, lists worker hosts instead, one per line ("name" or "name:N").
 * Fills names (cap entries of PLATFORM_NAME_MAX) and returns the number of slots, or -1
 * with err (unreadable file, no hosts, a name with characters outside [A-Za-z0-9._-]). */
int platform_slots(const char *platform_path, const char *hostfile, char (*names)[PLATFORM_NAME_MAX], int cap,
                   char *ps_host, char *err, size_t errlen);

/* The same from a platform in memory. */
int platform_slots_of(const platform_t *p, char (*names)[PLATFORM_NAME_MAX], int cap, char *ps_host);

/* Writes the hostfile smpirun reads: one line per rank. With a parameter server, rank 0
 * goes to ps_host (or the first slot when ps_host is ""), then worker w to slot w modulo
 * nslots. Returns 0, or -1 with err. */
int platform_write_hostfile(FILE *f, char (*slots)[PLATFORM_NAME_MAX], int nslots, const char *ps_host, int workers,
                            int with_ps, char *err, size_t errlen);

#endif
