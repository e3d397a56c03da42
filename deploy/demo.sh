#!/bin/sh
# deploy/demo.sh - `make demo`: the job service end to end on this machine.
#
# Starts build/pacer-coordinator (with its embedded Redis, state in var/demo), submits
# deploy/demo-job.json over the REST API (4 LeNet-5 workers on Fashion-MNIST, emulated
# slowdowns [1, 1, 2, 4], dynamic batch sizing), prints the dashboard's URL, and follows
# the job until it ends. Interactive runs keep the dashboard up until Ctrl-C; otherwise
# the demo exits when the job ends. Ctrl-C (or SIGTERM) stops the coordinator, which
# stops the job (--stop-jobs-on-exit) and the embedded Redis: nothing is left running.
#
# Environment: BUILD (build), DEMO_STATE (var/demo), DEMO_LISTEN (127.0.0.1:8080),
# DEMO_SPEC (deploy/demo-job.json), PACER_TOKEN (optional: the API then needs it).
set -u
cd "$(dirname "$0")/.." || exit 1
BUILD=${BUILD:-build}
COORD=$BUILD/pacer-coordinator
STATE=${DEMO_STATE:-var/demo}
LISTEN=${DEMO_LISTEN:-127.0.0.1:8080}
SPEC=${DEMO_SPEC:-deploy/demo-job.json}
BASE=http://$LISTEN

die() { echo "demo: $*" >&2; exit 1; }
[ -x "$COORD" ] || die "$COORD is not built (run make)"
[ -f "$SPEC" ] || die "no job spec at $SPEC"
command -v curl >/dev/null || die "curl is not installed (make deps)"
command -v jq >/dev/null || die "jq is not installed (make deps)"
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

answer=$(api -X POST -H "Content-Type: application/json" --data-binary @"$SPEC" "$BASE/api/v1/jobs")
id=$(echo "$answer" | jq -r '.id // empty')
[ -n "$id" ] || die "the job was refused: $(echo "$answer" | jq -r '.detail // .')"
echo "demo: submitted $id from $SPEC: $(jq -c '{model, algorithm: .algorithm.name, workers, slowdown: .emulate.slowdown}' "$SPEC")"
echo
echo "    dashboard:  $BASE/#/jobs/$id"
echo "    API:        $BASE/api/v1/jobs/$id   (events: $BASE/api/v1/jobs/$id/events)"
echo "    metrics:    $BASE/metrics"
echo

# Follow: one line every 2 s with the state and, per worker, batch size and speed.
last=""
while :; do
    job=$(api "$BASE/api/v1/jobs/$id")
    state=$(echo "$job" | jq -r '.state // "?"')
    nodes=$(api "$BASE/api/v1/jobs/$id/nodes")
    line=$(echo "$nodes" | jq -r --arg st "$state" '
        [.ranks[] | select(.role == "worker")] as $w
        | if ($w | length) == 0 then $st else
          "\($st)  epoch \([$w[].epoch // 0] | max // 0)  step \([$w[].step // 0] | max // 0)"
          + "  batches \([$w[].batch // 0])  samples/s \([$w[] | (.samples_per_s // 0) | floor])"
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
if [ -t 0 ]; then
    echo "demo: the dashboard stays up at $BASE/#/jobs/$id - press Ctrl-C to stop"
    while kill -0 "$COORD_PID" 2>/dev/null; do sleep 1; done
fi
[ "$state" = SUCCEEDED ]
