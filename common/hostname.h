/* common/hostname.h - the name a process reports as its host (rank records, node
 * profiles, the coordinator's host list): the Slurm node name when it runs under slurmd
 * ($SLURMD_NODENAME, which slurmstepd sets for every task and batch script), else
 * gethostname(). On a Slurm cluster a node's name and its host name may differ
 * (NodeHostname=, FQDNs); profiles keyed by node name match what sinfo and the Slurm
 * launcher call the node. */
#ifndef PACER_HOSTNAME_H
#define PACER_HOSTNAME_H

#include <stddef.h>

/* Fills out (NUL-terminated, truncated to len - 1); "unknown" when nothing says. */
void host_name(char *out, size_t len);

#endif
