# bench/launch_latency.sh - time from a job's submission to its first training step,
# through each of the coordinator's launchers (coordinator/launcher.h):
#
#   local            mpirun on this machine (ranks in the head node's namespace)
#   hostfile         mpirun over a hostfile of pw1, pw2 through deploy/netns/rsh.sh
#   slurm (pmix)     sbatch; srun --mpi=pmix starts the ranks on pw1 and pw2
#   slurm (mpirun)   sbatch; mpirun inside the allocation (orted on pw2 through srun)
#
# on the Slurm test cluster of deploy/slurm (network namespaces pc, pw1, pw2 with munged,
# slurmctld and two slurmd; docs/TESTING.md). Redis runs in pc; so does each coordinator,
# one launcher at a time. The job: LeNet-5 ssgd, 2 workers, Fashion-MNIST (1024 training
# images, one epoch), submitted with `pacer-coordinator submit`.
#
# Latency = the earliest `time` of the job's step metrics records (the end of the first
# training step on any rank; ssgd's first step ends with an allreduce, so on all ranks at
# once) minus the job's `submitted` time. It includes the coordinator's tick (0.2 s),
# starting the processes (and, under Slurm, scheduling, the batch script and the step),
# MPI wire-up, loading the data and building the model, and one step. Each job is
# submitted once the previous one is over and every Slurm node is idle again. RUNS jobs
# per launcher (default 3): median, min and max. The coordinators run with --preflight
# off: the pre-flight benchmark of the hosts (before a job's first launch when they have
# no profile for its model) is not the launcher's latency.
#
# Needs root (namespaces, slurmd) and slurm-wlm + munge; without root only `local` is
# measured, with an embedded Redis. Takes /tmp/pacer-slurm.lock like the Slurm test.
# LOCAL_ONLY=1 measures the local launcher alone, as without root (bench/before_after.sh
# on a machine whose Slurm lock other runs hold).
# On a shared, loaded machine the figures vary from run to run: quote them with that.
. bench/lib.sh
RUNS=${RUNS:-3}
ROOT=$(pwd)
case $BUILD in /*) B=$BUILD ;; *) B=$ROOT/$BUILD ;; esac
COORD=$B/pacer-coordinator
[ -x "$COORD" ] && [ -x "$B/pacer-worker" ] || { echo "launch_latency: build first (make)" >&2; exit 1; }
[ -d /usr/share/datasets/fashion-mnist ] || { echo "launch_latency: no Fashion-MNIST (dataset-fashion-mnist)" >&2; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none

FULL=1
[ "${LOCAL_ONLY:-0}" = 1 ] && FULL=0
if [ $FULL = 1 ] && [ "$(id -u)" -ne 0 ]; then
    echo "launch_latency: not root: local launcher only"
    FULL=0
fi
for c in slurmctld slurmd munged sbatch nsenter; do
    command -v "$c" >/dev/null 2>&1 || { [ $FULL = 1 ] && echo "launch_latency: $c missing: local launcher only"; FULL=0; }
done

STATE=$TMP/var
SD=$TMP/slurm
COORD_PID=""
cleanup() {
    [ -n "$COORD_PID" ] && kill -TERM "$COORD_PID" 2>/dev/null
    [ $FULL = 1 ] && sh "$ROOT/deploy/slurm/down.sh" "$SD"
    [ -f "$STATE/redis.pid" ] && kill "$(cat "$STATE/redis.pid")" 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if [ $FULL = 1 ]; then
    exec 9>/tmp/pacer-slurm.lock
    flock -w 600 9 || { echo "launch_latency: /tmp/pacer-slurm.lock is held" >&2; exit 1; }
    export PACER_NETNS_PREFIX=psl- PACER_NETNS_NET=10.79.0 PACER_NETNS_WORKERS=2
    . "$ROOT/deploy/netns/common.sh"
    mkdir -p "$SD"
    sh "$ROOT/deploy/slurm/down.sh"
    sh "$ROOT/deploy/slurm/up.sh" "$SD" 9>&- || { echo "launch_latency: the Slurm cluster did not start" >&2; exit 1; }
    . "$SD/env"
    PC=$(host_addr pc)
    REDIS=redis://$PC:6379
    ip netns exec "$(host_ns pc)" redis-server --bind "$PC" --port 6379 --protected-mode no --save '' \
        --appendonly no --dir "$TMP" --logfile "$TMP/redis.log" 9>&- &
    i=0
    until redis-cli -h "$PC" ping >/dev/null 2>&1; do
        i=$((i + 1)); [ $i -gt 50 ] && { echo "launch_latency: Redis did not start" >&2; exit 1; }
        sleep 0.1
    done
    REDIS_ARG="--redis $REDIS"
    printf 'pw1 slots=1\npw2 slots=1\n' >"$TMP/hostfile"
else
    REDIS_ARG=""
fi

cli() { "$COORD" --state-dir "$STATE" $REDIS_ARG "$@"; }

# start LAUNCHER-OPTIONS... - a coordinator (in pc when FULL) with these options.
start() {
    if [ $FULL = 1 ]; then
        ip netns exec "$(host_ns pc)" unshare --uts sh -c 'hostname pc && exec "$@"' sh \
            "$COORD" --listen 127.0.0.1:0 --state-dir "$STATE" --redis "$REDIS" --worker "$B/pacer-worker" \
            --max-restarts 0 --preflight off "$@" >>"$TMP/coord.log" 2>&1 9>&- &
    else
        "$COORD" --listen 127.0.0.1:0 --state-dir "$STATE" --worker "$B/pacer-worker" --max-restarts 0 --preflight off "$@" \
            >>"$TMP/coord.log" 2>&1 &
    fi
    COORD_PID=$!
    i=0
    until [ "$(cli cluster 2>/dev/null | jq -r .alive)" = true ]; do
        i=$((i + 1)); [ $i -gt 100 ] && { tail -5 "$TMP/coord.log" >&2; echo "launch_latency: no coordinator" >&2; exit 1; }
        sleep 0.2
    done
}
stop() {
    # ip netns exec and unshare exec (no fork): the pid is the coordinator's.
    kill -TERM "$COORD_PID"
    wait "$COORD_PID" 2>/dev/null
    COORD_PID=""
}

cat >"$TMP/spec.json" <<'JSON'
{"name": "latency", "model": "lenet5", "algorithm": {"name": "ssgd"}, "workers": 2,
 "dataset": {"name": "fashion-mnist", "train_subset": 1024, "test_subset": 100},
 "optimizer": {"lr": 0.02, "momentum": 0.9}, "batch_size": 64, "epochs": 1, "seed": 7}
JSON

# measure NAME - RUNS jobs through the running coordinator; one "NAME median min max" line.
measure() {
    : >"$TMP/lat"
    for r in $(seq "$RUNS"); do
        # Every job starts on an idle cluster: Slurm keeps a node COMPLETING for a moment
        # after the previous job (epilogue, step clean-up), which is not launch latency.
        i=0
        while [ $FULL = 1 ] && [ -n "$(ip netns exec "$(host_ns pc)" sinfo --noheader --Node --format=%t | grep -v '^idle$')" ]; do
            i=$((i + 1)); [ $i -gt 300 ] && { echo "launch_latency: nodes not idle" >&2; exit 1; }
            sleep 0.1
        done
        id=$(cli submit "$TMP/spec.json") || { echo "launch_latency: submit failed" >&2; exit 1; }
        cli wait "$id" --timeout 300 >/dev/null || {
            tail -20 "$STATE/jobs/$id/log" >&2; echo "launch_latency: $1: job $id did not succeed" >&2; exit 1; }
        sub=$(cli status "$id" | jq .submitted)
        first=$(cli metrics "$id" --limit 1000 | jq '[.items[] | select(.kind == "step") | .time] | min')
        awk -v a="$first" -v b="$sub" 'BEGIN { printf "%.3f\n", a - b }' >>"$TMP/lat"
        echo "  $1 run $r: job $id: $(tail -1 "$TMP/lat") s" >&2
    done
    echo "$1 $(median <"$TMP/lat") $(sort -g "$TMP/lat" | head -1) $(sort -g "$TMP/lat" | tail -1)" >>"$TMP/table"
}

: >"$TMP/table"
start --launcher local
measure local
stop
if [ $FULL = 1 ]; then
    # Open MPI over the bridge only; the hostfile launcher's daemons through rsh.sh.
    netns_mpi_env "sh $ROOT/deploy/netns/rsh.sh"
    start --launcher hostfile --hostfile "$TMP/hostfile"
    measure hostfile
    stop
    unset OMPI_MCA_plm_rsh_agent OMPI_MCA_plm_rsh_no_tree_spawn
    start --launcher slurm --slurm-mpi pmix --slurm-args "--ntasks-per-node=1"
    measure "slurm-pmix"
    stop
    start --launcher slurm --slurm-mpi mpirun --slurm-args "--ntasks-per-node=1"
    measure "slurm-mpirun"
    stop
fi

md ""
md "### Submission to first training step, by launcher (\`sh bench/launch_latency.sh\`)"
md ""
md "LeNet-5 ssgd, 2 workers, 1024 Fashion-MNIST images; $RUNS jobs per launcher, $(nproc) cores$([ $FULL = 1 ] && echo ", hosts pw1 + pw2 of the namespace cluster (deploy/slurm)")."
md ""
md "| launcher | median s | min s | max s |"
md "|---|---|---|---|"
while read -r name med lo hi; do md "| $name | $med | $lo | $hi |"; done <"$TMP/table"
