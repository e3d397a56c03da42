#!/bin/sh
# tests/stress.sh BUILD [ROUNDS] - the timing-dependent tests, ROUNDS (3) times each, while
# two busy processes keep both cores of a 2-core machine loaded (one per core elsewhere:
# STRESS_LOAD sets how many). Every run must pass: a test that depends on timing must pass
# on a loaded machine, every time (docs/TESTING.md, "Timing and noise"). `make test-stress`.
# Ends with the same closing line as tests/run.sh, over all rounds.
set -u
BUILD=${1:-build}
ROUNDS=${2:-3}
cd "$(dirname "$0")/.." || exit 1
# Tests whose verdict scheduling could move, or whose time limits a load could break.
TIMING="test_coordinator test_redis_report mpi_emulate_schedule mpi_emulation_faithful mpi_algorithms_accuracy async_accuracy
 mpi_rank_dies mpi_weights_agree mpi_dynamic_batch async_dynamic_batch coordinator_assignment
 coordinator_redis coordinator_heartbeat coordinator_lock http_api http_browser multihost coordinator_stop_race"
# coordinator_stop_race: a daemon stopped by SIGTERM right after a job was posted and
# deleted, many more rounds here than make test's few (STOP_RACE_ROUNDS of each kind).
export STOP_RACE_ROUNDS=${STOP_RACE_ROUNDS:-25}
LOAD=${STRESS_LOAD:-2}
pids=""
stop_load() { for p in $pids; do kill "$p" 2>/dev/null; done; pids=""; }
trap stop_load EXIT
trap 'exit 130' INT TERM
i=0
while [ $i -lt "$LOAD" ]; do
    sh -c 'while :; do :; done' &
    pids="$pids $!"
    i=$((i + 1))
done
echo "stress: $LOAD busy processes ($pids), $ROUNDS rounds of:" $TIMING
passed=0 failed=0 skipped=0 failures=""
start=$(date +%s)
r=1
while [ "$r" -le "$ROUNDS" ]; do
    echo "== round $r/$ROUNDS"
    out=$(mktemp)
    # shellcheck disable=SC2086
    sh tests/run.sh "$BUILD" only $TIMING | tee "$out"
    line=$(tail -1 "$out")
    p=$(echo "$line" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed, \([0-9]*\) skipped$/\1/p')
    f=$(echo "$line" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed, \([0-9]*\) skipped$/\2/p')
    s=$(echo "$line" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed, \([0-9]*\) skipped$/\3/p')
    [ -n "$p" ] || { f=1; p=0; s=0; }
    passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
    [ "$f" -eq 0 ] || failures="$failures round$r:$(sed -n 's/^failed://p' "$out" | tr ' ' ',')"
    rm -f "$out"
    r=$((r + 1))
done
echo "stress: $ROUNDS rounds in $(( $(date +%s) - start )) s under $LOAD busy processes"
[ -n "$failures" ] && echo "failed:$failures"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
