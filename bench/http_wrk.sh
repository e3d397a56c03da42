#!/bin/sh
# bench/http_wrk.sh - benchmarks of the REST API (make bench-http; numbers go to
# docs/PERFORMANCE.md, "REST API").
#
#   1. wrk --latency against GET /api/v1/jobs/{id} (a finished job: the largest answer,
#      with its summary) and GET /metrics, each for DURATION seconds with CONNS
#      connections on THREADS wrk threads. Target on 2 cores: >= 10,000 req/s, p99 < 20 ms.
#   2. SSE_CLIENTS concurrent clients on the event stream of one running 4-worker job, all
#      from the start of the streams (Last-Event-ID 0-0,0-0), until the job ends: every
#      client must see exactly the same frame ids, and as many metrics events as the job's
#      Redis stream holds (no missed events).
#
# The coordinator runs with its embedded Redis in a temporary state dir, on a free port,
# with --sse-max and --sse-per-client above SSE_CLIENTS. Environment: BUILD (build), DURATION (10), CONNS (32),
# THREADS (2), HTTP_THREADS (the coordinator's --http-threads, 4), API_CACHE_MS (its
# --api-cache-ms, 500; 0 measures every GET reading Redis), SSE_CLIENTS (100).
set -u
cd "$(dirname "$0")/.." || exit 1
BUILD=${BUILD:-build}
DURATION=${DURATION:-10}
CONNS=${CONNS:-32}
THREADS=${THREADS:-2}
HTTP_THREADS=${HTTP_THREADS:-4}
SSE_CLIENTS=${SSE_CLIENTS:-100}
API_CACHE_MS=${API_CACHE_MS:-500}
COORD=$BUILD/pacer-coordinator
TMP=$(mktemp -d)
COORD_PID=""
CURL_PIDS=""

die() { echo "bench: $*" >&2; exit 1; }
cleanup() {
    for p in $CURL_PIDS; do kill "$p" 2>/dev/null; done
    if [ -n "$COORD_PID" ]; then
        kill -TERM "$COORD_PID" 2>/dev/null
        wait "$COORD_PID" 2>/dev/null
    fi
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

[ -x "$COORD" ] || die "$COORD not built (make)"
command -v wrk >/dev/null || die "wrk not installed (deploy/install-deps.sh bench)"
command -v jq >/dev/null || die "jq not installed (make deps)"
[ -d /usr/share/datasets/fashion-mnist ] || die "Fashion-MNIST not installed (make deps)"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none

# Every client here is one address (127.0.0.1): the per-client limits (--sse-per-client,
# 8, and --max-conns-per-client, 32, by default) are raised with the global one.
"$COORD" --state-dir "$TMP/var" --listen 127.0.0.1:0 --sse-max $((SSE_CLIENTS + 16)) --http-threads "$HTTP_THREADS" \
    --sse-per-client $((SSE_CLIENTS + 16)) --max-conns-per-client $((CONNS + SSE_CLIENTS + 16)) \
    --api-cache-ms "$API_CACHE_MS" \
    --stop-jobs-on-exit >"$TMP/coord.log" 2>&1 &
COORD_PID=$!
i=0
until grep -q 'REST API and dashboard on' "$TMP/coord.log"; do
    i=$((i + 1))
    [ $i -gt 200 ] && { cat "$TMP/coord.log"; die "the coordinator did not start"; }
    sleep 0.1
done
BASE=$(grep -o 'REST API and dashboard on http://[0-9.:]*' "$TMP/coord.log" | tail -1 | sed 's/.* on //')

submit() { curl -s -X POST -H 'Content-Type: application/json' --data-binary "$1" "$BASE/api/v1/jobs" | jq -r .id; }
state() { curl -s "$BASE/api/v1/jobs/$1" | jq -r .state; }
await_state() {
    i=0
    while [ "$(state "$1")" != "$2" ]; do
        i=$((i + 1))
        [ $i -gt 1200 ] && die "job $1 never reached $2"
        sleep 0.1
    done
}

echo "## REST API benchmark ($(nproc) CPUs, $(uname -r), $(date -u +%Y-%m-%dT%H:%MZ))"
echo "coordinator: $BASE, --http-threads $HTTP_THREADS --api-cache-ms $API_CACHE_MS; wrk -t$THREADS -c$CONNS -d${DURATION}s --latency"

small='{"name":"bench","model":"lenet5","dataset":{"name":"fashion-mnist","train_subset":2048,"test_subset":500},"epochs":1,"batch_size":64,"workers":1}'
id=$(submit "$small")
await_state "$id" SUCCEEDED
echo "warm-up job $id SUCCEEDED; $(curl -s "$BASE/api/v1/jobs/$id" | wc -c) bytes per GET /api/v1/jobs/$id"

run_wrk() {
    wrk -t"$THREADS" -c"$CONNS" -d"${DURATION}s" --latency "$BASE$1" >"$TMP/wrk.txt" 2>&1
    rps=$(awk '/^Requests\/sec/ { print $2 }' "$TMP/wrk.txt")
    p50=$(awk '$1 == "50%" { print $2 }' "$TMP/wrk.txt")
    p99=$(awk '$1 == "99%" { print $2 }' "$TMP/wrk.txt")
    errs=$(grep -E 'Non-2xx|Socket errors' "$TMP/wrk.txt" | tr -s ' ' | tr '\n' ' ')
    echo "| GET $1 | $rps | $p50 | $p99 | ${errs:-none} |"
}
echo
echo "| endpoint | req/s | p50 | p99 | errors |"
echo "|---|---|---|---|---|"
curl -s -o /dev/null "$BASE/metrics"
run_wrk "/api/v1/jobs/$id"
run_wrk /metrics

# ---- SSE fan-out -------------------------------------------------------------------------------
sse='{"name":"sse-bench","model":"lenet5","dataset":{"name":"fashion-mnist","train_subset":16384,"test_subset":500},"epochs":2,"batch_size":64,"workers":4,"algorithm":{"name":"ssgd","dynamic_batch":true},"emulate":{"slowdown":[1,1,2,4]}}'
job=$(submit "$sse")
await_state "$job" RUNNING
n=0
while [ $n -lt "$SSE_CLIENTS" ]; do
    curl -sN --max-time 300 -H 'Last-Event-ID: 0-0,0-0' "$BASE/api/v1/jobs/$job/events" >"$TMP/sse.$n" 2>/dev/null &
    CURL_PIDS="$CURL_PIDS $!"
    n=$((n + 1))
done
streams() { curl -s "$BASE/metrics" | awk '$1 == "pacer_sse_streams" { print $2 }'; }
i=0
while [ "$(streams)" -lt "$SSE_CLIENTS" ] && [ $i -lt 100 ]; do
    i=$((i + 1))
    sleep 0.1
done
open=$(streams)
t0=$(date +%s.%N)
cpu0=$(awk '{ print $14 + $15 }' "/proc/$COORD_PID/stat")
for p in $CURL_PIDS; do wait "$p"; done
CURL_PIDS=""
t1=$(date +%s.%N)
cpu1=$(awk '{ print $14 + $15 }' "/proc/$COORD_PID/stat")
[ "$(state "$job")" = SUCCEEDED ] || die "SSE job $job did not succeed"

expected=$(curl -s "$BASE/api/v1/jobs/$job/metrics?limit=10000" | jq '.items | length')
grep '^id: ' "$TMP/sse.0" >"$TMP/ids.0"
frames=$(wc -l <"$TMP/ids.0")
same=0 complete=0
n=0
while [ $n -lt "$SSE_CLIENTS" ]; do
    grep '^id: ' "$TMP/sse.$n" >"$TMP/ids"
    cmp -s "$TMP/ids" "$TMP/ids.0" && same=$((same + 1))
    [ "$(grep -c '^event: metrics' "$TMP/sse.$n")" = "$expected" ] && complete=$((complete + 1))
    n=$((n + 1))
done
hz=$(getconf CLK_TCK)
echo
echo "SSE: $SSE_CLIENTS clients on job $job (4 workers; $open streams open during the run) for $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s:"
echo "  $frames frames per client ($expected metrics records in the job's Redis stream, plus state events)"
echo "  clients with the identical id sequence: $same/$SSE_CLIENTS; with every metrics record: $complete/$SSE_CLIENTS"
echo "  coordinator CPU during the fan-out: $(awk -v a="$cpu0" -v b="$cpu1" -v hz="$hz" -v s0="$t0" -v s1="$t1" 'BEGIN { printf "%.0f%% of one core", 100 * (b - a) / hz / (s1 - s0) }')"
if [ "$same" != "$SSE_CLIENTS" ] || [ "$complete" != "$SSE_CLIENTS" ]; then die "some SSE clients missed events"; fi
echo "  no missed events"
