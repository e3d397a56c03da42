#!/bin/sh
# tests/run.sh BUILD [unit|integration|all] - runs pacer's tests and prints one closing line
#   N passed, N failed, N skipped
# tests/run.sh BUILD only NAME... - only the named tests (test_coordinator, async_accuracy,
#   ...), unit programs and integration scripts alike (tests/stress.sh uses it).
# Unit tests are cmocka programs (build/tests/test_*); each cmocka test case counts once.
# Integration tests are scripts in tests/integration/*.sh, run from the repo root with
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
trap 'rm -f "$log"' EXIT

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
        fi
    done
fi

if [ "$WHAT" = all ] || [ "$WHAT" = integration ] || [ "$WHAT" = only ]; then
    for t in tests/integration/*.sh; do
        [ -f "$t" ] || continue
        name=$(basename "$t" .sh)
        wanted "$name" || continue
        start=$(date +%s)
        sh "$t" >"$log" 2>&1
        status=$?
        dur=$(( $(date +%s) - start ))
        case $status in
            0) passed=$((passed + 1)); echo "integ $name: passed (${dur}s)" ;;
            77) skipped=$((skipped + 1)); echo "integ $name: skipped: $(grep -m1 -i 'skip' "$log")" ;;
            *) failed=$((failed + 1)); failures="$failures $name"
               echo "integ $name: FAILED (exit $status, ${dur}s)"; sed 's/^/      | /' "$log" | tail -60 ;;
        esac
    done
fi

# A name given to "only" that matches no test is a failure, not a silent no-op.
for n in $ONLY; do
    [ -x "$BUILD/tests/$n" ] || [ -f "tests/integration/$n.sh" ] ||
        { echo "no test named $n"; failed=$((failed + 1)); failures="$failures $n"; }
done
[ -n "$failures" ] && echo "failed:$failures"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
