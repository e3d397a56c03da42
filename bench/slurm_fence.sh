#!/bin/sh
# bench/slurm_fence.sh - how often an Open MPI rank started by `srun --mpi=pmix` dies in
# MPI_Init, with Slurm's PMIx plugin's default fences and with SLURM_PMIX_FENCE=tree (what
# the slurm launcher sets: coordinator/launcher_impl.c, docs/ARCHITECTURE.md "Slurm's
# fences").
#
# A plain MPI program (MPI_Init_thread, two broadcasts from rank 0, an allreduce: rank 0's
# first message leaves as soon as its MPI_Init returns) is launched on the two nodes of
# the Slurm test cluster of deploy/slurm, one rank on each, PAIRS times with each setting,
# the two taking turns. A launch fails when srun exits non-zero or runs past 20 s (the
# other rank waits forever for the one that died); each failure's srun output is printed.
# LOAD busy loops (default 3) keep the 2 cores contended, as a loaded CI machine is: the
# crash needs one rank to run late, and was not seen on an idle machine.
#
#   sudo PAIRS=1000 LOAD=3 sh bench/slurm_fence.sh      (the defaults; docs quote PAIRS=1500)
#
# Needs root (network namespaces, slurmd), slurm-wlm, munge and Open MPI's mpicc; takes
# /tmp/pacer-slurm.lock like tests/integration/slurm.sh.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PAIRS=${PAIRS:-1000}
LOAD=${LOAD:-3}
[ "$(id -u)" -eq 0 ] || { echo "slurm_fence: needs root" >&2; exit 2; }
command -v mpicc >/dev/null || { echo "slurm_fence: needs mpicc (libopenmpi-dev)" >&2; exit 2; }
exec 9>/tmp/pacer-slurm.lock
flock -w 300 9 || { echo "slurm_fence: /tmp/pacer-slurm.lock is held" >&2; exit 2; }

W=$(mktemp -d)
export PACER_NETNS_PREFIX=psl- PACER_NETNS_NET=10.79.0 PACER_NETNS_WORKERS=2
. "$ROOT/deploy/netns/common.sh"
busy=""
cleanup() {
    for p in $busy; do kill "$p" 2>/dev/null; done
    sh "$ROOT/deploy/slurm/down.sh" "$W/slurm" >/dev/null 2>&1
    rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

cat >"$W/hello.c" <<'EOF'
#include <mpi.h>
#include <string.h>
int main(void)
{
    int provided, rank;
    static char buf[200000];
    MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) memset(buf, 7, sizeof buf);
    MPI_Bcast(buf, 100, MPI_CHAR, 0, MPI_COMM_WORLD);
    MPI_Bcast(buf, sizeof buf, MPI_CHAR, 0, MPI_COMM_WORLD);
    double x = rank, y;
    MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();
    return buf[5] == 7 ? 0 : 3;
}
EOF
mpicc -O2 -o "$W/hello" "$W/hello.c" || exit 1

mkdir -p "$W/slurm"
sh "$ROOT/deploy/slurm/down.sh" >/dev/null 2>&1
sh "$ROOT/deploy/slurm/up.sh" "$W/slurm" 9>&- >"$W/up.log" 2>&1 || { cat "$W/up.log"; exit 1; }
. "$W/slurm/env"
export OMPI_MCA_pml=ob1 OMPI_MCA_btl=tcp,self
export OMPI_MCA_btl_tcp_if_include="$NET.0/24" OMPI_MCA_oob_tcp_if_include="$NET.0/24"
unset SLURM_PMIX_FENCE

for _ in $(seq "$LOAD"); do
    sh -c 'while :; do :; done' &
    busy="$busy $!"
done

# launch NAME [VAR=VALUE]: one srun of the program; counts a failure against NAME.
fail_default=0 fail_tree=0
launch() {
    name=$1
    shift
    (cd "$W" && ip netns exec "$(host_ns pc)" env "$@" timeout 20 srun -N2 --ntasks-per-node=1 --mpi=pmix \
        "$W/hello" >"$W/out" 2>&1) && return 0
    eval "fail_$name=\$((fail_$name + 1))"
    echo "--- $name, pair $p: srun failed"
    head -8 "$W/out"
}
p=1
while [ $p -le "$PAIRS" ]; do
    launch default
    launch tree SLURM_PMIX_FENCE=tree
    p=$((p + 1))
done
echo "slurm_fence: $PAIRS launches each, $LOAD busy loops: default fences $fail_default failed," \
    "SLURM_PMIX_FENCE=tree $fail_tree failed"
