# tests/lib.sh - helpers sourced by the integration scripts.
# Conventions: run from the repo root with BUILD set; exit 0 pass, 77 skip, else fail.
set -u
BUILD=${BUILD:-build}
WORKER=$BUILD/pacer-worker
PACER_SHARED=${PACER_SHARED:-$(cd .. && pwd)/shared}
FASHION=/usr/share/datasets/fashion-mnist
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# Python that imports torch or onnx: through tests/run.sh's forked server while it is up
# (tests/tools/pyfork.py: the import once per run, not once per tool), else the plain one.
# A test that starts while the server still imports (about 2 s after tests/run.sh began)
# waits for it, unless it has died (no torch here).
TORCH_PY=/usr/bin/python3
if [ -n "${PACER_PYFORK:-}" ] && [ -n "${PACER_PYFORK_PID:-}" ]; then
    i=0
    while [ ! -S "$PACER_PYFORK" ] && [ $i -lt 150 ] && kill -0 "$PACER_PYFORK_PID" 2>/dev/null; do
        sleep 0.1
        i=$((i + 1))
    done
    [ -S "$PACER_PYFORK" ] && TORCH_PY="/usr/bin/python3 $(pwd)/tests/tools/pyfork.py run"
fi

fail() { echo "FAIL: $*"; exit 1; }
skip() { echo "skip: $*"; exit 77; }
need_dir() { [ -d "$1" ] || skip "$2 not found at $1"; }

# json FILE FILTER - one value from a JSON file (jq is installed by make deps).
json() { jq -r "$2" "$1"; }

# Numeric checks. Every value must be a finite decimal number ("12", "-0.5", "3e-4"):
# null, nan, inf, an empty string or any other text fails the check, so a summary field
# that is missing (jq prints null) can never pass. awk alone would compare such values
# as strings.
# is_number VALUE - exit 0 when VALUE is a finite decimal number.
is_number() {
    printf '%s\n' "$1" | grep -Eq '^[+-]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][+-]?[0-9]+)?$'
}
# need_number NAME VALUE - fails the test unless VALUE is a finite number.
need_number() {
    is_number "$2" || fail "$1 = '$2' is not a number"
}
# cmp_num A OP B - awk's numeric comparison of two numbers (OP: < <= > >= ==).
cmp_num() {
    awk -v a="$1" -v b="$3" -v op="$2" 'BEGIN {
        a += 0; b += 0
        if (op == "<") r = a < b; else if (op == "<=") r = a <= b; else if (op == ">") r = a > b
        else if (op == ">=") r = a >= b; else if (op == "==") r = a == b; else r = 0
        exit !r }'
}

# at_least NAME VALUE MIN - VALUE >= MIN, with a message either way.
at_least() {
    need_number "$1" "$2"; need_number "$1 (minimum)" "$3"
    if cmp_num "$2" ">=" "$3"; then
        echo "ok: $1 = $2 (>= $3)"
    else
        fail "$1 = $2, want >= $3"
    fi
}

# at_most NAME VALUE MAX - VALUE <= MAX.
at_most() {
    need_number "$1" "$2"; need_number "$1 (maximum)" "$3"
    if cmp_num "$2" "<=" "$3"; then
        echo "ok: $1 = $2 (<= $3)"
    else
        fail "$1 = $2, want <= $3"
    fi
}

# between NAME VALUE LO HI - LO <= VALUE <= HI.
between() {
    need_number "$1" "$2"; need_number "$1 (low)" "$3"; need_number "$1 (high)" "$4"
    if cmp_num "$2" ">=" "$3" && cmp_num "$2" "<=" "$4"; then
        echo "ok: $1 = $2 (in [$3, $4])"
    else
        fail "$1 = $2, want in [$3, $4]"
    fi
}

# equals_num NAME VALUE WANT - numerically equal (1 == 1.0).
equals_num() {
    need_number "$1" "$2"; need_number "$1 (wanted)" "$3"
    if cmp_num "$2" "==" "$3"; then
        echo "ok: $1 = $2"
    else
        fail "$1 = $2, want $3"
    fi
}

# ratio_at_least NAME A B MIN - A >= MIN x B (both numbers, B > 0).
ratio_at_least() {
    need_number "$1 (numerator)" "$2"; need_number "$1 (denominator)" "$3"; need_number "$1 (minimum)" "$4"
    cmp_num "$3" ">" 0 || fail "$1: denominator $3 is not > 0"
    if awk -v a="$2" -v b="$3" -v m="$4" 'BEGIN { exit !(a + 0 >= (m + 0) * (b + 0)) }'; then
        echo "ok: $1: $2 >= $4 x $3"
    else
        fail "$1: $2 is not >= $4 x $3"
    fi
}

# onnx_graphs TOOL: python3 TOOL --graphs "$TMP/graphs" (small ONNX graphs written at test
# time), skipping when it exits 77 (no torch or onnx) and failing on another error; g NAME
# is then the path of graph NAME
onnx_graphs() {
    mkdir -p "$TMP/graphs"
    /usr/bin/python3 "$1" --graphs "$TMP/graphs" >"$TMP/graphs.log" 2>&1
    rc=$?
    [ $rc -eq 77 ] && skip "$(tail -1 "$TMP/graphs.log")"
    [ $rc -eq 0 ] || { cat "$TMP/graphs.log"; fail "$1 --graphs exited $rc"; }
}
g() { echo "$TMP/graphs/$1.onnx"; }

# expect_error STATUS PATTERN CMD... - CMD must exit with STATUS and print PATTERN.
expect_error() {
    want=$1 pat=$2
    shift 2
    "$@" >"$TMP/out" 2>&1
    got=$?
    [ "$got" -eq "$want" ] || { cat "$TMP/out"; fail "'$*' exited $got, want $want"; }
    grep -q -- "$pat" "$TMP/out" || { cat "$TMP/out"; fail "'$*' did not say '$pat'"; }
    echo "ok: exit $want, says: $(grep -m1 -- "$pat" "$TMP/out")"
}

# expect_accepts FILE OUT - pacer-worker --check-onnx accepts the ONNX file FILE; its JSON
# answer (layers, parameters, classes) is left in OUT for the caller's checks. The test fails
# with the importer's own message when it refuses.
expect_accepts() {
    $WORKER --check-onnx "$1" >"$2" 2>&1 || { cat "$2"; fail "$(basename "$1") refused by --check-onnx"; }
}

# mpirun as the tests use it: more ranks than cores, as root, quiet about the container;
# through tests/tools/mpirun.sh, which runs a job once more only when Open MPI reports its
# own finalize race (see there). MPIRUN_RAW is plain mpirun, for tests that signal it.
MPIRUN_RAW="mpirun --oversubscribe --allow-run-as-root --mca btl_vader_single_copy_mechanism none"
MPIRUN="sh $(pwd)/tests/tools/mpirun.sh --oversubscribe --allow-run-as-root --mca btl_vader_single_copy_mechanism none"
# mpi NP LOG ARGS... - pacer-worker ARGS on NP ranks, its output in LOG; the test fails,
# printing LOG, when the run does.
mpi() {
    np=$1 log=$2
    shift 2
    $MPIRUN -np "$np" $WORKER "$@" >"$log" 2>&1 || { cat "$log"; fail "mpirun -np $np pacer-worker $* failed"; }
}

# Test accuracy per epoch (issue 29): what the history, the records and the dashboard show
# must be what the run measured, one evaluation per epoch, never a 0 for "not measured".
# log_accuracy LOG... - "EPOCH ACCURACY" per epoch end the logs print (rank 0's "epoch K/E
# done: ... test_accuracy A"), in the order printed.
log_accuracy() {
    cat "$@" | sed -n 's/^.*epoch \([0-9][0-9]*\)\/[0-9][0-9]* done: .* test_accuracy \([^ ]*\).*$/\1 \2/p'
}
# same_accuracy WHAT GOT WANT - two files of "EPOCH ACCURACY" lines agree: at least one line,
# the same epochs in the same order, every accuracy a number within 5e-5 of the wanted one
# (the log prints four decimals).
same_accuracy() {
    if ! awk 'function num(x) { return x ~ /^[0-9]*[.]?[0-9]+([eE][-+]?[0-9]+)?$/ }
        FILENAME == ARGV[1] { e[++n] = $1; a[n] = $2; next }
        { m++; d = $2 - a[m]; if (m > n || $1 != e[m] || !num($2) || !num(a[m]) || d > 5.01e-5 || d < -5.01e-5) bad = 1 }
        END { exit bad || m != n || n == 0 }' "$3" "$2"; then
        echo "--- $1: got (epoch, test accuracy)"; cat "$2"; echo "--- wanted (the log)"; cat "$3"
        fail "$1: the test accuracy per epoch is not the one the run printed"
    fi
    echo "ok: $1: one test accuracy per evaluated epoch ($(wc -l <"$3") epochs), each the log's"
}
# history_accuracy_is_log HISTORY WHAT LOG... - a GET /api/v1/jobs/{id}/history answer's
# accuracy series: one point per epoch the logs print, rank 0's (the parameter server, or
# the root of a synchronous job: the rank that evaluates), each the accuracy printed last
# for that epoch (a resumed attempt evaluates again the epochs it trains again, and the run
# went on from that evaluation).
history_accuracy_is_log() {
    h=$1 what=$2
    shift 2
    jq -e '.accuracy | all(.rank == 0)' "$h" >/dev/null ||
        fail "$what: an evaluation in the history is not rank 0's: $(jq -c '[.accuracy[] | {epoch, rank}]' "$h")"
    jq -r '.accuracy[] | "\(.epoch) \(.test_accuracy)"' "$h" >"$TMP/acc.got"
    log_accuracy "$@" | awk '{ last[$1] = $2 } END { for (e in last) print e, last[e] }' | sort -n >"$TMP/acc.want"
    same_accuracy "$what" "$TMP/acc.got" "$TMP/acc.want"
}
# records_match_log METRICS WHAT LOG... - a --metrics file (every attempt appended): every
# record that carries an evaluation (a test_accuracy that is not null) is rank 0's; its epoch
# records' evaluations are the epoch ends the logs print, in order, one each; a final record
# carries one only in a run resumed after its last epoch end (which evaluates the restored
# weights: "nothing left to train").
records_match_log() {
    m=$1 what=$2
    shift 2
    jq -s -e 'map(select(.test_accuracy != null)) | all(.rank == 0)' "$m" >/dev/null ||
        fail "$what: a record of a rank that did not evaluate carries a test accuracy: $(jq -s -c 'map(select(.test_accuracy != null and .rank != 0) | {kind, rank, epoch, test_accuracy}) | .[:4]' "$m")"
    jq -r 'select(.kind == "epoch" and .test_accuracy != null) | "\(.epoch) \(.test_accuracy)"' "$m" >"$TMP/acc.got"
    log_accuracy "$@" >"$TMP/acc.want"
    same_accuracy "$what (records)" "$TMP/acc.got" "$TMP/acc.want"
    finals=$(jq -s 'map(select(.kind == "final" and .test_accuracy != null)) | length' "$m")
    [ "$finals" = "$(cat "$@" | grep -c 'nothing left to train')" ] ||
        fail "$what: $finals final records carry an evaluation, for $(cat "$@" | grep -c 'nothing left to train') runs resumed after their last epoch"
}
