#!/bin/sh
# deploy/slurm/down.sh [DIR] - stops the Slurm test cluster of up.sh: every process in its
# namespaces (munged, slurmctld, slurmd, job steps) and the namespaces themselves, through
# deploy/netns/down.sh with the same PACER_NETNS_* (read from DIR/env when given). DIR is
# left for the caller to remove. Safe on a partial or absent cluster; never fails.
here=$(cd "$(dirname "$0")" && pwd)
if [ $# -ge 1 ] && [ -f "$1/env" ]; then
    . "$1/env"
fi
export PACER_NETNS_PREFIX=${PACER_NETNS_PREFIX:-psl-}
export PACER_NETNS_NET=${PACER_NETNS_NET:-10.79.0}
export PACER_NETNS_WORKERS=${PACER_NETNS_WORKERS:-2}
sh "$here/../netns/down.sh"
exit 0
