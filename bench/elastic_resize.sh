# bench/elastic_resize.sh - how long an elastic resize takes: from the moment a host is
# lost under a running job to the job's first training step on the hosts that remain
# (issue 14), on the network-namespace cluster of deploy/netns (as tests/integration/
# elastic.sh: Redis and the coordinator in pc, hosts pw1..pw3, mpirun through a remote
# shell, the hostfile launcher).
#
# Each run: an ssgd job of 3 workers (LeNet-5, Fashion-MNIST) trains on pw1..pw3; once
# every rank is past step 12 and a checkpoint is written, pw3 is lost at time L, in one
# of two ways (both measured, RUNS runs each):
#   crash    its processes killed with SIGKILL, its remote shell refusing (as ssh to a
#            dead machine would); its link stays up, so its peers' TCP connections are
#            reset and mpirun notices at once;
#   vanish   the same, and its link down first: nothing is reset, the peers wait, and
#            the coordinator notices when pw3's rank misses its heartbeats for
#            --heartbeat-timeout (HEARTBEAT, default 20 s here; 60 s by default).
# Reported per run, from the job's own records:
#   detect   = the resize's time (the relaunch on pw1 + pw2, coordinator/run.c) - L:
#              the failure noticed, the coordinator's probes of the hosts (pw3 down);
#   restart  = the first step record after the resize - the resize's time: the new
#              attempt's start, MPI wire-up, data loading, resuming the checkpoint
#              re-planned for 2 workers, one step;
#   total    = detect + restart: host lost to training again.
# Then the job is cancelled, pw3 comes back (link up, remote shell answering) and the
# next run waits until the coordinator's probe has it up again. RUNS runs per way
# (default 3): median, min and max of each.
#
# Needs root and `ip netns` (skipped without root); takes /tmp/pacer-elastic.lock like the
# test. About 20 s a crash run, HEARTBEAT + 20 s a vanish run. Figures depend on the machine's load: measure on a quiet one.
. bench/lib.sh
RUNS=${RUNS:-3}
HEARTBEAT=${HEARTBEAT:-20}
ROOT=$(pwd)
case $BUILD in /*) B=$BUILD ;; *) B=$ROOT/$BUILD ;; esac
COORD=$B/pacer-coordinator
NETNS=$ROOT/deploy/netns
[ -x "$COORD" ] && [ -x "$B/pacer-worker" ] || { echo "elastic_resize: build first (make)" >&2; exit 1; }
# Without root (make bench as a user) there is nothing to measure: skipped, not failed.
[ "$(id -u)" -eq 0 ] || { echo "elastic_resize: skipped: needs root (network namespaces)"; exit 0; }
for c in ip flock redis-server redis-cli mpirun curl jq; do
    command -v "$c" >/dev/null 2>&1 || { echo "elastic_resize: $c not installed (make deps)" >&2; exit 1; }
done
[ -d "$PACER_SHARED/datasets" ] || [ -d /usr/share/datasets/fashion-mnist ] ||
    { echo "elastic_resize: no Fashion-MNIST (dataset-fashion-mnist)" >&2; exit 1; }
export PACER_SHARED

exec 9>/tmp/pacer-elastic.lock
flock -w 300 9 || { echo "elastic_resize: another run holds /tmp/pacer-elastic.lock" >&2; exit 1; }
export PACER_NETNS_PREFIX=pel- PACER_NETNS_NET=10.78.0 PACER_NETNS_WORKERS=3
. "$NETNS/common.sh"
cleanup() {
    sh "$NETNS/down.sh"
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
sh "$NETNS/down.sh"
sh "$NETNS/up.sh" >"$TMP/up.log" 2>&1 || { cat "$TMP/up.log" >&2; exit 1; }

PC=$(host_addr pc)
API=http://$PC:8080
REDIS=redis://$PC:6379
TOKEN=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
in_pc() { ip netns exec "$(host_ns pc)" unshare --uts sh -c 'hostname pc && exec "$@"' sh "$@"; }
in_pc redis-server --bind "$PC" --port 6379 --protected-mode no --save '' --appendonly no \
    --dir "$TMP" --logfile "$TMP/redis.log" 9>&- &
i=0
until redis-cli -h "$PC" ping >/dev/null 2>&1; do
    i=$((i + 1)); [ $i -gt 100 ] && { echo "elastic_resize: Redis did not start" >&2; exit 1; }
    sleep 0.1
done
mkdir -p "$TMP/dead"
cat >"$TMP/rsh" <<SH
#!/bin/sh
for a in "\$@"; do case \$a in -*) ;; *) [ -e "$TMP/dead/\$a" ] && { echo "\$a: host is down" >&2; exit 255; }; break ;; esac; done
exec sh "$NETNS/rsh.sh" "\$@"
SH
netns_mpi_env "sh $TMP/rsh"
printf 'pw1 slots=1\npw2 slots=1\npw3 slots=1\n' >"$TMP/hostfile"
# --preflight off: the resize, not a benchmark round, is measured.
PACER_TOKEN=$TOKEN in_pc "$COORD" --listen "$PC:8080" --redis "$REDIS" --worker-redis "$REDIS" \
    --state-dir "$TMP/var" --hostfile "$TMP/hostfile" --worker "$B/pacer-worker" \
    --heartbeat-timeout "$HEARTBEAT" --max-restarts 0 --host-probe 1 --preflight off >"$TMP/coord.log" 2>&1 9>&- &
i=0
until [ "$(curl -fsS --max-time 2 "$API/healthz" 2>/dev/null | jq -r .coordinator_alive)" = true ]; do
    i=$((i + 1)); [ $i -gt 300 ] && { tail -20 "$TMP/coord.log" >&2; echo "elastic_resize: no coordinator" >&2; exit 1; }
    sleep 0.2
done
get() { curl -sS --max-time 10 -H "Authorization: Bearer $TOKEN" "$API$1"; }

# 20 epochs of 3072 images: far longer than a run, which cancels it once measured.
cat >"$TMP/job.json" <<JSON
{"name": "resize", "model": "lenet5", "algorithm": {"name": "ssgd"}, "workers": 3, "batch_size": 32,
 "dataset": {"name": "fashion-mnist", "train_subset": 3072, "test_subset": 100},
 "optimizer": {"lr": 0.02, "momentum": 0.9}, "epochs": 20, "seed": 11, "log_every": 8,
 "checkpoint": {"every_steps": 8}}
JSON
now() { date +%s.%N; }
: >"$TMP/runs"
for mode in crash vanish; do
for r in $(seq "$RUNS"); do
    id=$(curl -sS --max-time 10 -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
        --data-binary "@$TMP/job.json" "$API/api/v1/jobs" | jq -r .id)
    end=$(($(date +%s) + 300))
    until [ "$(get "/api/v1/jobs/$id/nodes" | jq '[.ranks[] | select(.step >= 12)] | length' 2>/dev/null)" = 3 ] &&
        [ -s "$TMP/var/jobs/$id/checkpoints/resize.ckpt" ]; do
        [ "$(date +%s)" -ge "$end" ] && { tail -20 "$TMP/var/jobs/$id/log" >&2; echo "elastic_resize: $id not training" >&2; exit 1; }
        sleep 0.2
    done
    lost=$(now)
    touch "$TMP/dead/pw3"
    [ $mode = vanish ] && ip link set "$(host_veth pw3)" down
    for p in $(ip netns pids "$(host_ns pw3)"); do kill -9 "$p" 2>/dev/null; done
    end=$(($(date +%s) + 300))
    while :; do
        job=$(get "/api/v1/jobs/$id")
        rt=$(echo "$job" | jq '.resizes[0].time // empty')
        if [ -n "$rt" ]; then
            first=$(get "/api/v1/jobs/$id/metrics?limit=10000" |
                jq --argjson t "$rt" '[.items[] | select(.kind == "step" and .time > $t) | .time] | min // empty')
            [ -n "$first" ] && break
        fi
        [ "$(date +%s)" -ge "$end" ] && { tail -20 "$TMP/coord.log" >&2; echo "elastic_resize: $id not training again" >&2; exit 1; }
        sleep 0.2
    done
    echo "$job" | jq -e '.resizes[0].from == 3 and .resizes[0].to == 2' >/dev/null ||
        { echo "elastic_resize: unexpected resize: $(echo "$job" | jq -c .resizes)" >&2; exit 1; }
    awk -v m=$mode -v l="$lost" -v t="$rt" -v f="$first" 'BEGIN { printf "%s %.3f %.3f %.3f\n", m, t - l, f - t, f - l }' >>"$TMP/runs"
    echo "  $mode run $r: job $id: detect, restart, total (s): $(tail -1 "$TMP/runs" | cut -d' ' -f2-)" >&2
    curl -sS --max-time 10 -X DELETE -H "Authorization: Bearer $TOKEN" "$API/api/v1/jobs/$id" >/dev/null
    ip link set "$(host_veth pw3)" up
    rm -f "$TMP/dead/pw3"
    end=$(($(date +%s) + 120))
    until [ "$(get /api/v1/cluster | jq -r '.coordinator.hosts[] | select(.name == "pw3") | .state')" = up ] &&
        [ "$(get "/api/v1/jobs/$id" | jq -r .state)" = CANCELLED ]; do
        [ "$(date +%s)" -ge "$end" ] && { echo "elastic_resize: pw3 not back, or $id not cancelled" >&2; exit 1; }
        sleep 0.2
    done
done
done

col() { awk -v m="$1" -v c="$2" '$1 == m { print $(c + 1) }' "$TMP/runs"; }
stat() { echo "$(col "$1" "$2" | median) | $(col "$1" "$2" | sort -g | head -1) | $(col "$1" "$2" | sort -g | tail -1)"; }
md ""
md "### Elastic resize: host lost to training again (\`sudo sh bench/elastic_resize.sh\`)"
md ""
md "LeNet-5 ssgd, 3 workers on pw1..pw3 of the namespace cluster (hostfile launcher), pw3 lost past step 12: crash (SIGKILL, link up) or vanish (link down too; --heartbeat-timeout $HEARTBEAT); $RUNS runs each, $(nproc) cores."
md ""
md "| loss | phase | median s | min s | max s |"
md "|---|---|---|---|---|"
for m in crash vanish; do
    md "| $m | detect (lost to the relaunch on 2 hosts) | $(stat $m 1) |"
    md "| $m | restart (relaunch to the first step) | $(stat $m 2) |"
    md "| $m | **total** | $(stat $m 3) |"
done
