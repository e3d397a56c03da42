#!/bin/sh
# deploy/demo.sh - `make demo`: the job service end to end on this machine.
#
# Starts build/pacer-coordinator (with its embedded Redis, state in var/demo), submits
# deploy/demo-job.json over the REST API (4 LeNet-5 workers on Fashion-MNIST, emulated
# slowdowns in the ratio 1 : 1 : 2 : 4, dynamic batch sizing), prints the dashboard's
# URL, and follows the job until it ends; then it keeps serving the dashboard, with or
# without a terminal, until Ctrl-C (or SIGTERM), which stops the coordinator, which stops
# the job if it still runs (--stop-jobs-on-exit) and the embedded Redis: nothing is left
# running. The exit status is then 130 (or 143).
#
# The slowdowns are scaled to this machine by deploy/fit-slowdowns.jq, the rule the
# benchmarks use too: an emulated slow node is what it says only while the workers'
# compute (threads / slowdown each) fits in the cores (worker/emulate.h); [1, 1, 2, 4]
# asks for 2.75 cores, so on 2 cores it would show how the OS shares them. The factors
# are multiplied by the smallest power of two that brings that demand to at most half the
# cores: [4, 4, 8, 16] on 2 cores, [1, 1, 2, 4] from 6. The relative speeds stay. The job
# page says next to the slowdowns whether the emulation was faithful.
#
#   sh deploy/demo.sh                 run the demo
#   sh deploy/demo.sh --print-spec    print the spec it would submit here, and exit
#
# Environment: BUILD (build), DEMO_STATE (var/demo), DEMO_LISTEN (127.0.0.1:8080),
# DEMO_SPEC (deploy/demo-job.json), DEMO_CORES (the cores the slowdowns are scaled to:
# nproc, the CPUs this process may use, as the worker counts them), PACER_TOKEN
# (optional: the API then needs it).
set -u
cd "$(dirname "$0")/.." || exit 1
BUILD=${BUILD:-build}
COORD=$BUILD/pacer-coordinator
STATE=${DEMO_STATE:-var/demo}
LISTEN=${DEMO_LISTEN:-127.0.0.1:8080}
SPEC=${DEMO_SPEC:-deploy/demo-job.json}
BASE=http://$LISTEN

die() { echo "demo: $*" >&2; exit 1; }
command -v jq >/dev/null || die "jq is not installed (make deps)"
[ -f "$SPEC" ] || die "no job spec at $SPEC"
CORES=${DEMO_CORES:-$(nproc)}
case $CORES in '' | *[!0-9]* | 0*) die "DEMO_CORES: $CORES is not a positive whole number of cores" ;; esac

RUN_SPEC=$(jq --argjson cores "$CORES" -f deploy/fit-slowdowns.jq "$SPEC") || die "$SPEC is not JSON"
if [ "${1:-}" = --print-spec ]; then
    echo "$RUN_SPEC"
    exit 0
fi
[ -x "$COORD" ] || die "$COORD is not built (run make)"
command -v curl >/dev/null || die "curl is not installed (make deps)"
command -v redis-server >/dev/null || die "redis-server is not installed (make deps)"
[ -d /usr/share/datasets/fashion-mnist ] || die "Fashion-MNIST is not installed (Debian package dataset-fashion-mnist; make deps)"
if curl -s -o /dev/null "$BASE/healthz"; then
    die "something already answers on $LISTEN (another coordinator?); set DEMO_LISTEN=127.0.0.1:PORT"
fi

# mpirun as root inside containers, quiet about shared-memory copies.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
mkdir -p "$STATE"
LOG=$STATE/coordinator.log
"$COORD" --state-dir "$STATE" --listen "$LISTEN" --stop-jobs-on-exit >>"$LOG" 2>&1 &
COORD_PID=$!

stopped=0
stop() {
    [ "$stopped" = 1 ] && return
    stopped=1
    if kill -0 "$COORD_PID" 2>/dev/null; then
        echo
        echo "demo: stopping the coordinator (pid $COORD_PID): the job and the embedded Redis stop with it"
        kill -TERM "$COORD_PID" 2>/dev/null
        wait "$COORD_PID" 2>/dev/null
    fi
}
trap 'stop; exit 130' INT
trap 'stop; exit 143' TERM
trap stop EXIT

AUTH=""
[ -n "${PACER_TOKEN:-}" ] && AUTH="Authorization: Bearer $PACER_TOKEN"
api() { curl -s ${AUTH:+-H "$AUTH"} "$@"; }

tries=0
until curl -s -o /dev/null "$BASE/healthz"; do
    kill -0 "$COORD_PID" 2>/dev/null || { tail -20 "$LOG"; die "the coordinator exited (log: $LOG)"; }
    tries=$((tries + 1))
    [ "$tries" -gt 150 ] && { tail -20 "$LOG"; die "the coordinator did not come up in 15 s (log: $LOG)"; }
    sleep 0.1
done

from=$(jq -c '.emulate.slowdown // []' "$SPEC")
to=$(echo "$RUN_SPEC" | jq -c '.emulate.slowdown // []')
if [ "$from" != "$to" ]; then
    echo "demo: slowdowns $from scaled to $to (the same relative speeds) to fit in this machine's $CORES cores: each slow node is then as slow as it says"
fi
answer=$(echo "$RUN_SPEC" | api -X POST -H "Content-Type: application/json" --data-binary @- "$BASE/api/v1/jobs")
id=$(echo "$answer" | jq -r '.id // empty')
[ -n "$id" ] || die "the job was refused: $(echo "$answer" | jq -r '.detail // .')"
echo "demo: submitted $id from $SPEC: $(echo "$RUN_SPEC" | jq -c '{model, algorithm: .algorithm.name, workers, slowdown: .emulate.slowdown}')"
echo
echo "    dashboard:  $BASE/#/jobs/$id"
echo "    API:        $BASE/api/v1/jobs/$id   (events: $BASE/api/v1/jobs/$id/events)"
echo "    metrics:    $BASE/metrics"
echo

# Follow: one line every 2 s with the state and, per worker, batch size and speed ("-"
# where a worker has not measured one yet: never shown as 0).
last=""
while :; do
    job=$(api "$BASE/api/v1/jobs/$id")
    state=$(echo "$job" | jq -r '.state // "?"')
    nodes=$(api "$BASE/api/v1/jobs/$id/nodes")
    line=$(echo "$nodes" | jq -r --arg st "$state" '
        [.ranks[] | select(.role == "worker")] as $w
        | if ($w | length) == 0 then $st else
          "\($st)  epoch \([$w[].epoch // empty] | max // "-")  step \([$w[].step // empty] | max // "-")"
          + "  batches \([$w[] | .batch // "-"])  samples/s \([$w[] | .samples_per_s | if . == null then "-" else floor end])"
          + "  loss \([$w[].loss // empty] | if length > 0 then (add / length * 1000 | floor / 1000) else "-" end)" end' 2>/dev/null)
    [ -n "$line" ] || line=$state
    if [ "$line" != "$last" ]; then
        echo "$(date +%H:%M:%S) $id $line"
        last=$line
    fi
    case $state in SUCCEEDED | FAILED | CANCELLED) break ;; esac
    kill -0 "$COORD_PID" 2>/dev/null || die "the coordinator exited (log: $LOG)"
    sleep 2
done

echo
echo "$job" | jq -r '"demo: \(.id) \(.state)\(if .reason != "" and .reason != null then ": " + .reason else "" end)"'
echo "$job" | jq -r 'if .summary then "demo: final test_accuracy \(.summary.test_accuracy) after \(.summary.epochs // "?") epochs, \((.finished - .started) | floor) s" else empty end'
echo "$job" | jq -r '.summary.emulation // empty | if .simulated then empty elif .faithful
    then "demo: the emulation was faithful: the ranks asked for \(.demand_cores * 100 | round / 100) of \(.cores) cores"
    else "demo: the emulation was NOT faithful: the ranks asked for \(.demand_cores * 100 | round / 100) of \(.cores) cores, so the speeds show how the OS shared them, not the slowdowns" end'
# The page is the demo: it stays up whether or not a terminal is attached (a demo started
# from a script or over ssh without one is still looked at in a browser).
echo "demo: the dashboard stays up at $BASE/#/jobs/$id - press Ctrl-C (or kill -TERM $$) to stop"
while kill -0 "$COORD_PID" 2>/dev/null; do sleep 1; done
die "the coordinator exited (log: $LOG)"
