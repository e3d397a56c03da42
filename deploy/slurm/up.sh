#!/bin/sh
# deploy/slurm/up.sh DIR - a real Slurm cluster on this machine, for tests and benchmarks
# (root only). Debian's slurm-wlm and munge, started on the network-namespace cluster of
# deploy/netns (with its own prefix and /24, see below):
#
#   ${P}pc    munged, slurmctld (SlurmctldHost=pc), and what the caller runs there
#             (the coordinator, Redis): the cluster's login/head node
#   ${P}pwK   slurmd, NodeName=pwK, K = 1..WORKERS, each with its own UTS name
#
# Everything lives in DIR (made by the caller, e.g. mktemp -d): slurm.conf, the munge key,
# socket, seed and log, slurmctld's state, each slurmd's spool, pid and log files. No
# file outside DIR is touched except what deploy/netns/up.sh writes (/etc/netns/NS/hosts).
# Ports: slurmctld and slurmd listen on 6817 and 6818, but each inside its own network
# namespace, so they cannot collide with anything else on the machine; the only shared
# resources are the namespace names and the /24, which a caller serialises with a lock
# (tests/integration/slurm.sh holds /tmp/pacer-slurm.lock).
#
# Writes DIR/env (SLURM_CONF=DIR/slurm.conf, PACER_NETNS_*) for callers to source, and
# waits until sinfo shows every node idle. down.sh DIR stops all of it (every process in
# the namespaces: munged, slurmctld, slurmd and every job step), leaving nothing running.
#
# Environment: PACER_NETNS_PREFIX (default psl-), PACER_NETNS_NET (default 10.79.0),
# PACER_NETNS_WORKERS (default 2), PACER_SLURM_CPUS (CPUs per node, default: this
# machine's, as slurmd counts them).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
[ $# -eq 1 ] || { echo "usage: up.sh DIR" >&2; exit 2; }
D=$(cd "$1" && pwd)
export PACER_NETNS_PREFIX=${PACER_NETNS_PREFIX:-psl-}
export PACER_NETNS_NET=${PACER_NETNS_NET:-10.79.0}
export PACER_NETNS_WORKERS=${PACER_NETNS_WORKERS:-2}
. "$here/../netns/common.sh"

[ "$(id -u)" -eq 0 ] || { echo "slurm up.sh: must run as root" >&2; exit 1; }
for c in munged slurmctld slurmd sinfo scontrol; do
    command -v "$c" >/dev/null 2>&1 || { echo "slurm up.sh: $c not installed (make deps: slurmctld slurmd slurm-client munge)" >&2; exit 1; }
done
CPUS=${PACER_SLURM_CPUS:-$(nproc)}

# on HOST CMD... - CMD in HOST's network namespace, under its own UTS name, with the
# namespace's hosts file over /etc/hosts in a private mount namespace. Not `ip netns exec`
# (which rsh.sh uses): that also mounts a fresh sysfs over /sys, hiding /sys/fs/cgroup,
# and slurmd 22.05 refuses to start without a cgroup file system even when no cgroup
# plugin is configured ("Unable to initialize cgroup plugin").
on() {
    h=$1
    shift
    nsenter --net="/run/netns/$(host_ns "$h")" unshare --uts --mount sh -c \
        'mount --bind "/etc/netns/$1/hosts" /etc/hosts && hostname "$0" && shift && exec "$@"' \
        "$h" "$(host_ns "$h")" "$@"
}

sh "$here/../netns/up.sh"

mkdir -p "$D/munge" "$D/ctld" "$D/log" "$D/run"
chmod 700 "$D/munge"
# A fresh key for this cluster only (munge wants 0400/0600 and owned by its user).
dd if=/dev/urandom of="$D/munge/munge.key" bs=1024 count=1 2>/dev/null
chmod 600 "$D/munge/munge.key"
SOCK=$D/munge/munge.socket

nodes=""
k=1
while [ "$k" -le "$WORKERS" ]; do
    nodes="$nodes pw$k"
    mkdir -p "$D/spool/pw$k" "$D/tmp/pw$k"
    k=$((k + 1))
done

cat >"$D/slurm.conf" <<CONF
# Written by deploy/slurm/up.sh for a test cluster in $D.
ClusterName=pacer
SlurmctldHost=pc($(host_addr pc))
SlurmUser=root
SlurmdUser=root
SlurmctldPort=6817
SlurmdPort=6818
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$SOCK
StateSaveLocation=$D/ctld
SlurmdSpoolDir=$D/spool/%n
# Each node's scratch space: the PMIx plugin makes spmix_appdir_UID_JOB.STEP there, the
# same name on every node, so nodes that share one /tmp would collide.
TmpFS=$D/tmp/%n
SlurmctldPidFile=$D/run/slurmctld.pid
SlurmdPidFile=$D/run/slurmd-%n.pid
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdLogFile=$D/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
# No cgroups: every slurmd shares this machine's cgroup tree; processes are tracked by
# /proc parentage, which is enough for scancel to reach a whole job.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
MpiDefault=none
ReturnToService=2
# Short timers: a test waits for these. MinJobAge keeps a finished job visible to
# scontrol/squeue for 5 min (there is no accounting database for sacct).
SlurmdTimeout=30
SlurmctldTimeout=30
KillWait=5
MinJobAge=300
InactiveLimit=0
CONF
for n in $nodes; do
    echo "NodeName=$n NodeAddr=$(host_addr "$n") CPUs=$CPUS State=UNKNOWN" >>"$D/slurm.conf"
done
echo "PartitionName=pacer Nodes=$(echo $nodes | tr ' ' ',') Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO" >>"$D/slurm.conf"

cat >"$D/env" <<ENV
SLURM_CONF=$D/slurm.conf
PACER_NETNS_PREFIX=$PACER_NETNS_PREFIX
PACER_NETNS_NET=$PACER_NETNS_NET
PACER_NETNS_WORKERS=$PACER_NETNS_WORKERS
export SLURM_CONF PACER_NETNS_PREFIX PACER_NETNS_NET PACER_NETNS_WORKERS
ENV
export SLURM_CONF=$D/slurm.conf

# munged in pc: its socket is a file in DIR, reachable from every namespace. It forks
# into the background by itself (still inside pc, so down.sh finds it).
on pc munged --socket="$SOCK" --key-file="$D/munge/munge.key" --pid-file="$D/munge/munged.pid" \
    --seed-file="$D/munge/munged.seed" --log-file="$D/log/munged.log" --force ||
    { tail -5 "$D/log/munged.log" >&2; echo "slurm up.sh: munged did not start" >&2; exit 1; }

# slurmctld -D stays in the foreground (no double fork), backgrounded here; -i ignores
# state from an older run (there is none: DIR is new).
on pc slurmctld -D -i -f "$D/slurm.conf" >>"$D/log/slurmctld.out" 2>&1 &
for n in $nodes; do
    on "$n" slurmd -D -N "$n" -f "$D/slurm.conf" >>"$D/log/slurmd-$n.out" 2>&1 &
done

# Ready when every node is idle (slurmd registered with slurmctld).
i=0
want=$(echo $nodes | wc -w)
while :; do
    idle=$(ip netns exec "$(host_ns pc)" sinfo -h -N -o '%N %t' 2>/dev/null | awk '$2 == "idle"' | wc -l)
    [ "$idle" -eq "$want" ] && break
    i=$((i + 1))
    if [ $i -gt 300 ]; then
        echo "slurm up.sh: nodes not idle after 30 s:" >&2
        ip netns exec "$(host_ns pc)" sinfo -N >&2 || true
        tail -5 "$D/log/slurmctld.log" "$D"/log/slurmd-*.log >&2 || true
        exit 1
    fi
    sleep 0.1
done
echo "slurm: up: slurmctld on pc ($(host_addr pc)), slurmd on$nodes ($CPUS CPUs each); SLURM_CONF=$D/slurm.conf"
