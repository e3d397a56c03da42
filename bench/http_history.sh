#!/bin/sh
# bench/http_history.sh - what the dashboard's history costs (GET /api/v1/jobs/{id}/history,
# coordinator/jobhistory.h) on a long job whose streams are full: the job's metrics
# stream at its MAXLEN (20000 records: 4 worker ranks x 5000 steps) and its coarse stream
# at its MAXLEN (30000 older records), synthetic records of the worker's shape written
# straight into the coordinator's embedded Redis (a job hash with world 4; nothing runs).
# For ?points=100, 1000 (the dashboard's) and 5000: the answer's size and the wall time
# per request, REPS sequential requests (median and max), against the raw records a
# browser would otherwise fetch (GET .../metrics?limit=10000, two pages of the full
# stream alone). Run by bench/run.sh (make bench) or alone; numbers go to
# docs/PERFORMANCE.md ("Dashboard history"). Environment: BUILD (build), REPS (20).
set -u
cd "$(dirname "$0")/.." || exit 1
BUILD=${BUILD:-build}
REPS=${REPS:-20}
COORD=$BUILD/pacer-coordinator
TMP=$(mktemp -d)
COORD_PID=""
die() { echo "bench: $*" >&2; exit 1; }
cleanup() {
    if [ -n "$COORD_PID" ]; then
        kill -TERM "$COORD_PID" 2>/dev/null
        wait "$COORD_PID" 2>/dev/null
    fi
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
[ -x "$COORD" ] || die "$COORD not built (make)"
for c in curl jq python3 redis-cli; do command -v $c >/dev/null || die "$c not installed (make deps)"; done

"$COORD" --state-dir "$TMP/var" --listen 127.0.0.1:0 >"$TMP/coord.log" 2>&1 &
COORD_PID=$!
i=0
until grep -q 'REST API and dashboard on' "$TMP/coord.log"; do
    i=$((i + 1))
    [ $i -gt 200 ] && { cat "$TMP/coord.log"; die "the coordinator did not start"; }
    sleep 0.1
done
BASE=$(grep -o 'REST API and dashboard on http://[0-9.:]*' "$TMP/coord.log" | tail -1 | sed 's/.* on //')
R="redis-cli -s $TMP/var/redis.sock"
id=j-900001
$R HSET "pacer:job:$id" id "$id" state SUCCEEDED world 4 workers 4 name history-bench >/dev/null || die "redis"

# RESP for redis-cli --pipe: the coarse stream (older), then the full one.
python3 - "$id" >"$TMP/fill.resp" <<'PY'
import json, sys
job = sys.argv[1]
def cmd(*a):
    out = "*%d\r\n" % len(a)
    for x in a:
        b = x.encode()
        out += "$%d\r\n%s\r\n" % (len(b), x)
    return out
def rec(rank, step, t):
    return json.dumps({"kind": "step", "job": job, "time": t, "rank": rank, "role": "worker", "host": "h%d" % rank,
                       "device": "cpu", "step": step, "epoch": 1 + step // 1000, "batch": 64,
                       "loss": 2.3 / (1 + step / 2000.0) + 0.01 * (step % 7), "compute_s": 0.01, "comm_s": 0.002,
                       "idle_s": 0.001, "samples_per_s": 5000.0 + rank * 100, "samples": 64 * step, "slowdown": 1,
                       "plan_version": 1, "step_s": 0.013,
                       "phases": {"data": 0.001, "compute": 0.01, "comm": 0.002, "wait": 0, "optimizer": 0, "emulated": 0, "other": 0},
                       "staleness": {"count": step, "mean": 0, "p50": 0, "p95": 0, "max": 0, "hist": [step, 0, 0, 0, 0, 0, 0, 0, 0]},
                       "test_loss": None, "test_accuracy": None}, separators=(",", ":"))
t0 = 1.7e9
w = sys.stdout.write
for k in range(30000):  # coarse: 4 ranks x 7500 older steps
    rank, step = k % 4, 1 + k // 4
    w(cmd("XADD", "pacer:job:%s:metrics:coarse" % job, "*", "json", rec(rank, step, t0 + step * 0.05)))
for k in range(20000):  # full: 4 ranks x 5000 newer steps
    rank, step = k % 4, 10001 + k // 4
    w(cmd("XADD", "pacer:job:%s:metrics" % job, "*", "json", rec(rank, step, t0 + step * 0.05)))
PY
$R --pipe <"$TMP/fill.resp" >/dev/null || die "filling the streams failed"
echo "## Dashboard history ($(nproc) CPUs, $(date -u +%Y-%m-%dT%H:%MZ)): $($R XLEN "pacer:job:$id:metrics") + $($R XLEN "pacer:job:$id:metrics:coarse") records"
echo
echo "| request | bytes | median s | max s |"
echo "|---|---|---|---|"
measure() {
    : >"$TMP/times"
    n=0
    while [ $n -lt "$REPS" ]; do
        curl -s -o "$TMP/body" -w '%{time_total}\n' "$BASE$1" >>"$TMP/times"
        n=$((n + 1))
    done
    med=$(sort -n "$TMP/times" | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
    max=$(sort -n "$TMP/times" | tail -1)
    echo "| GET ${1#/api/v1/jobs/$id} | $(wc -c <"$TMP/body") | $med | $max |"
}
for p in 100 1000 5000; do
    measure "/api/v1/jobs/$id/history?points=$p"
    [ "$(jq .records "$TMP/body")" = 50000 ] || die "history read $(jq .records "$TMP/body") records, not 50000"
done
measure "/api/v1/jobs/$id/metrics?limit=10000"
