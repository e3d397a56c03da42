#!/bin/sh
# tests/run.sh BUILD [unit|integration|all] - runs pacer's tests and prints one closing line
#   N passed, N failed, N skipped
# tests/run.sh BUILD only NAME... - only the named tests (test_coordinator, async_accuracy,
#   ...), unit programs and integration scripts alike (tests/stress.sh uses it).
# Unit tests are cmocka programs (build/tests/test_*); each cmocka test case counts once.
# Integration tests are scripts in tests/integration/*.sh (a few of them in a second lane,
# TEST_LANES below), run from the repo root with
# BUILD exported; each counts once; exit 0 = pass, 77 = skip (the automake convention,
# with the reason on stdout), anything else = fail. A test that fails prints its output.
set -u
BUILD=${1:-build}
WHAT=${2:-all}
ONLY=""
if [ "$WHAT" = only ]; then
    shift 2
    ONLY=" $* "
fi
# wanted NAME - whether this run includes the test NAME.
wanted() { [ -z "$ONLY" ] || case $ONLY in *" $1 "*) true ;; *) false ;; esac; }
cd "$(dirname "$0")/.." || exit 1
export BUILD
export OPENBLAS_NUM_THREADS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Open MPI's vader BTL warns about ptrace/CMA inside containers; keep logs readable.
export OMPI_MCA_btl_vader_single_copy_mechanism=none
PACER_SHARED=${PACER_SHARED:-$(cd .. && pwd)/shared}
export PACER_SHARED

passed=0 failed=0 skipped=0
failures=""
log=$(mktemp)
# Each failure's last lines again at the very end, just above the closing line: a CI log
# is often read from its tail, where the failing check's own message then is.
recap=$(mktemp)
trap 'rm -f "$log" "$recap"' EXIT
# recap_add NAME FILE - the last lines of a failed test's output, for the closing recap.
recap_add() { { echo "--- $1 (its last lines; the whole output is above)"; tail -12 "$2"; } >>"$recap"; }

count() { sed -n "s/^\[  *$1  *\] \([0-9][0-9]*\) test.*/\1/p" "$log" | tail -1; }

if [ "$WHAT" = all ] || [ "$WHAT" = unit ] || [ "$WHAT" = only ]; then
    for t in "$BUILD"/tests/test_*; do
        [ -x "$t" ] || continue
        name=$(basename "$t")
        wanted "$name" || continue
        start=$(date +%s)
        "$t" >"$log" 2>&1
        status=$?
        p=$(count PASSED); f=$(count FAILED); s=$(count SKIPPED)
        p=${p:-0}; f=${f:-0}; s=${s:-0}
        # A crash or a non-zero exit with no cmocka failure line still counts as a failure.
        if [ $status -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
        passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
        echo "unit  $name: $p passed, $f failed, $s skipped ($(( $(date +%s) - start ))s)"
        grep -E '^skip:' "$log" | sed 's/^/      /'
        if [ "$f" -ne 0 ]; then
            failures="$failures $name"
            sed 's/^/      | /' "$log" | tail -60
            recap_add "$name" "$log"
        fi
    done
fi

# run_integ SCRIPT LOG - one integration script: its verdict line, and the counters.
run_integ() {
    name=$(basename "$1" .sh)
    start=$(date +%s)
    sh "$1" >"$2" 2>&1
    status=$?
    dur=$(( $(date +%s) - start ))
    case $status in
        0) passed=$((passed + 1)); echo "integ $name: passed (${dur}s)" ;;
        77) skipped=$((skipped + 1)); echo "integ $name: skipped: $(grep -m1 -i 'skip' "$2")" ;;
        *) failed=$((failed + 1)); failures="$failures $name"
           echo "integ $name: FAILED (exit $status, ${dur}s)"; sed 's/^/      | /' "$2" | tail -60
           recap_add "$name" "$2" ;;
    esac
}

# A second lane (TEST_LANES=2, the default; 1 runs everything in turn): these scripts
# spend most of their time waiting for a heartbeat or lock timeout, so they run beside
# the others on the cores that waiting leaves idle. Each is in tests/stress.sh's list,
# which runs them while two busy processes load both cores: they pass on a loaded
# machine. Their output comes after the first lane's.
BESIDE="coordinator_redis coordinator_heartbeat coordinator_lock"
TEST_LANES=${TEST_LANES:-2}
beside() { [ "$TEST_LANES" -ge 2 ] && case " $BESIDE " in *" $1 "*) true ;; *) false ;; esac; }

if [ "$WHAT" = all ] || [ "$WHAT" = integration ] || [ "$WHAT" = only ]; then
    lane_out=$(mktemp) lane_counts=$(mktemp) lane_log=$(mktemp)
    trap 'rm -f "$log" "$recap" "$lane_out" "$lane_counts" "$lane_log"' EXIT
    (
        passed=0 failed=0 skipped=0 failures=""
        for t in tests/integration/*.sh; do
            [ -f "$t" ] || continue
            n=$(basename "$t" .sh)
            beside "$n" && wanted "$n" || continue
            run_integ "$t" "$lane_log"
        done >"$lane_out"
        echo "$passed $failed $skipped $failures" >"$lane_counts"
    ) &
    lane_pid=$!
    for t in tests/integration/*.sh; do
        [ -f "$t" ] || continue
        n=$(basename "$t" .sh)
        wanted "$n" || continue
        beside "$n" && continue
        run_integ "$t" "$log"
    done
    wait "$lane_pid"
    cat "$lane_out"
    read -r p f s fl <"$lane_counts"
    passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s)); failures="$failures${fl:+ $fl}"
fi

# A name given to "only" that matches no test is a failure, not a silent no-op.
for n in $ONLY; do
    [ -x "$BUILD/tests/$n" ] || [ -f "tests/integration/$n.sh" ] ||
        { echo "no test named $n"; failed=$((failed + 1)); failures="$failures $n"; }
done
[ -s "$recap" ] && { echo "=== failures, last lines of each"; cat "$recap"; }
[ -n "$failures" ] && echo "failed:$failures"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
