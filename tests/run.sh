#!/bin/sh
# tests/run.sh BUILD [unit|integration|all] - runs pacer's tests and prints one closing line
#   N passed, N failed, N skipped
# tests/run.sh BUILD only NAME... - only the named tests (test_coordinator, async_accuracy,
#   ...), unit programs and integration scripts alike (tests/stress.sh uses it).
# tests/run.sh BUILD slow - the slow suite (SLOW_SUITE below; make test-slow).
# Unit tests are cmocka programs (build/tests/test_*); each cmocka test case counts once.
# Integration tests are scripts in tests/integration/*.sh (in parallel lanes,
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
# The slow suite: scripts `make test` leaves to `make test-slow` (tests/run.sh BUILD slow),
# which .ci/run runs after it. Each checks, at full size or length, a feature that a fast
# test in `make test` also checks (docs/TESTING.md, "Time", names the fast one of each).
SLOW_SUITE="onnx_transformers_224 mpi_algorithms_accuracy onnx_zoo_families_all onnx_torchvision_all
 train_lenet5_fashion train_lenet5_mnist train_mlp_fashion elastic"
SLOW_SUITE=$(echo $SLOW_SUITE) # one line: the matches below look for " NAME "
if [ "$WHAT" = slow ]; then
    WHAT=only ONLY=" $SLOW_SUITE "
fi
# QUARANTINE: scripts no suite runs until a flaw they found is understood, each with its
# reason in docs/TESTING.md ("Quarantined"); run them by name (tests/run.sh BUILD only NAME).
QUARANTINE=""
# wanted NAME - whether this run includes the test NAME.
wanted() {
    if [ -z "$ONLY" ]; then case " $SLOW_SUITE $QUARANTINE " in *" $1 "*) false ;; *) true ;; esac
    else case $ONLY in *" $1 "*) true ;; *) false ;; esac; fi
}
cd "$(dirname "$0")/.." || exit 1
export BUILD
export OPENBLAS_NUM_THREADS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Open MPI's vader BTL warns about ptrace/CMA inside containers; keep logs readable.
export OMPI_MCA_btl_vader_single_copy_mechanism=none
PACER_SHARED=${PACER_SHARED:-$(cd .. && pwd)/shared}
export PACER_SHARED
# Workers started without a coordinator (whose jobs cache under its state directory) keep
# the decoded data sets in $XDG_CACHE_HOME/pacer/data: one directory for the whole run, so
# that Fashion-MNIST's gzip is inflated once, not by every rank of every test (0.3 CPU s
# each, about 2,400 worker processes in a run), and removed at the end with whatever the
# tests' generated data sets left there.
XDG_CACHE_HOME=$(mktemp -d "${TMPDIR:-/tmp}/pacer-test-cache.XXXXXX")
export XDG_CACHE_HOME

passed=0 failed=0 skipped=0
failures=""
# each test's seconds, one line each (lanes append whole lines), for the closing recap
times=$(mktemp)
began=$(date +%s)
# Each failure's last lines again at the very end, just above the closing line: a CI log
# is often read from its tail, where the failing check's own message then is.
recap=$(mktemp)
# recap_add NAME FILE - the last lines of a failed test's output, for the closing recap.
recap_add() { { echo "--- $1 (its last lines; the whole output is above)"; tail -12 "$2"; } >>"$recap"; }

# One Python with torch, onnx and numpy imported, forked for each run of a tool that needs
# them (tests/tools/pyfork.py, tests/lib.sh's TORCH_PY): importing torch is 1.5 to 2.5 CPU s,
# and most of what such a tool costs. Until the server listens (or without torch, or with
# PYFORK=0) TORCH_PY is the plain /usr/bin/python3.
PACER_PYFORK="" pyfork_pid=""
pyfork_stop() {
    [ -n "$pyfork_pid" ] && kill "$pyfork_pid" 2>/dev/null
    [ -n "$PACER_PYFORK" ] && rm -f "$PACER_PYFORK" "$PACER_PYFORK.env" "$PACER_PYFORK.log"
}
if [ "${PYFORK:-1}" = 1 ] && [ -x /usr/bin/python3 ]; then
    PACER_PYFORK=$(mktemp -u /tmp/pacer-pyfork.XXXXXX)
    /usr/bin/python3 tests/tools/pyfork.py serve "$PACER_PYFORK" >"$PACER_PYFORK.log" 2>&1 &
    pyfork_pid=$!
fi
PACER_PYFORK_PID=$pyfork_pid
export PACER_PYFORK PACER_PYFORK_PID
trap 'rm -f "$recap" "$times"; rm -rf "$XDG_CACHE_HOME"; pyfork_stop' EXIT

# Per-test CPU time, where this shell may make cgroups (root with cgroup v1's cpuacct or
# cgroup v2): each test runs in a cgroup of its own, so its CPU seconds include every
# process it starts (the coordinator, mpirun, ranks on namespace "hosts"), whatever else
# the machine runs. The closing line then says how many cores the suite kept busy, which
# is what decides whether more lanes would help. Without cgroups the column is "-".
CG_ROOT=""
for d in /sys/fs/cgroup/cpuacct /sys/fs/cgroup/unified /sys/fs/cgroup; do
    probe="$d/pacer-test-$$"
    if mkdir "$probe" 2>/dev/null; then
        { [ -f "$probe/cpuacct.usage" ] || [ -f "$probe/cpu.stat" ]; } && CG_ROOT=$d
        rmdir "$probe" 2>/dev/null
        [ -n "$CG_ROOT" ] && break
    fi
done
# the cgroups of earlier runs' tests that had left processes behind, now gone (rmdir
# removes only an empty one)
[ -n "$CG_ROOT" ] && for d in "$CG_ROOT"/pacer-test-*; do rmdir "$d" 2>/dev/null; done
# cg_run NAME CMD... - runs CMD in cgroup NAME (if any); CPU seconds into $cg_cpu ("-" if unknown)
cg_run() {
    cg_cpu=-
    g="$CG_ROOT/pacer-test-$$-$1"; shift
    if [ -n "$CG_ROOT" ] && mkdir "$g" 2>/dev/null; then
        (echo 0 >"$g/cgroup.procs" 2>/dev/null; exec "$@")
        st=$?
        if [ -f "$g/cpuacct.usage" ]; then cg_cpu=$(awk '{ printf "%.0f", $1 / 1e9 }' "$g/cpuacct.usage")
        elif [ -f "$g/cpu.stat" ]; then cg_cpu=$(awk '$1 == "usage_usec" { printf "%.0f", $2 / 1e6 }' "$g/cpu.stat"); fi
        [ -n "$cg_cpu" ] || cg_cpu=-
        # a test that left processes behind keeps its cgroup; say so once, then leave it
        rmdir "$g" 2>/dev/null || echo "      (left processes running: $(cat "$g/cgroup.procs" | tr '\n' ' '))"
        return $st
    fi
    "$@"
}

count() { sed -n "s/^\[  *$1  *\] \([0-9][0-9]*\) test.*/\1/p" "$2" | tail -1; }

# run_unit PROGRAM LOG - one cmocka program: its verdict line, and the counters.
run_unit() {
    name=$(basename "$1")
    start=$(date +%s)
    cg_run "$name" "$1" >"$2" 2>&1
    status=$?
    p=$(count PASSED "$2"); f=$(count FAILED "$2"); s=$(count SKIPPED "$2")
    p=${p:-0}; f=${f:-0}; s=${s:-0}
    # A crash or a non-zero exit with no cmocka failure line still counts as a failure.
    if [ $status -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
    passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
    dur=$(( $(date +%s) - start ))
    echo "$dur $name $cg_cpu" >>"$times"
    echo "unit  $name: $p passed, $f failed, $s skipped (${dur}s, cpu ${cg_cpu}s)"
    grep -E '^skip:' "$2" | sed 's/^/      /'
    if [ "$f" -ne 0 ]; then
        failures="$failures $name"
        sed 's/^/      | /' "$2" | tail -60
        recap_add "$name" "$2"
    fi
}

# run_integ SCRIPT LOG - one integration script: its verdict line, and the counters.
run_integ() {
    name=$(basename "$1" .sh)
    start=$(date +%s)
    cg_run "$name" sh "$1" >"$2" 2>&1
    status=$?
    dur=$(( $(date +%s) - start ))
    echo "$dur $name $cg_cpu" >>"$times"
    case $status in
        0) passed=$((passed + 1)); echo "integ $name: passed (${dur}s, cpu ${cg_cpu}s)" ;;
        77) skipped=$((skipped + 1)); echo "integ $name: skipped: $(grep -m1 -i 'skip' "$2")" ;;
        *) failed=$((failed + 1)); failures="$failures $name"
           echo "integ $name: FAILED (exit $status, ${dur}s)"; sed 's/^/      | /' "$2" | tail -60
           recap_add "$name" "$2" ;;
    esac
}

# Lanes (TEST_LANES, default one more than the cores, at most 4; 1 runs everything in
# turn): the tests run TEST_LANES at a time, each lane taking the next of one shared queue,
# longest first (SLOW below, then the unit programs, then the scripts) so that the last to
# finish is a short one. Most scripts spend much of their time waiting (for a heartbeat, a
# lock timeout, a coordinator's tick, ranks polling in an all-reduce): the tests of the
# lanes other than the light one kept 0.71 of a core busy on average (856 CPU s in 1,204
# s, a clean clone at 4b5316b), so two such lanes and the light one left about 0.3 of the
# 2 cores idle, and a third keeps them busy. Every test must pass on a loaded machine
# (tests/stress.sh checks the timing-dependent ones under two busy processes). The
# scripts that build network namespaces, veth pairs or a Slurm cluster (NETNS) run in
# turn in lane 1, as when they shared names; each now has its own prefix and /24, and
# the light ones (below) run beside. A test's output comes whole when it ends, whichever
# lane ran it.
cores=$(nproc 2>/dev/null || echo 1)
TEST_LANES=${TEST_LANES:-$((cores + 1 > 4 ? 4 : cores + 1))}
NETNS="deploy_config elastic hetero_adopt hetero_cluster_json hetero_grow hetero_netns hetero_resize hetero_start
 multihost partition preempt_netns slurm"
SLOW="onnx_zoo_families gpu_path_fake_device onnx_torchvision elastic mpi_compress mpi_resume coordinator_restart
 partition test_ops coordinator_redis http_api onnx_zoo train_synthetic http_browser async_accuracy test_coordinator"
# LIGHT: scripts that mostly wait (for a coordinator's ticks, a heartbeat timeout, a
# restart's backoff, a lock's expiry): each kept under 0.5 of a core busy on average
# (the CPU column above: test_coordinator 3 CPU s in 43 s, coordinator_redis 22 in 51,
# coordinator_lock 3 in 16). With both lanes busy the machine still had about 0.4 of its 2
# cores idle, so one more lane runs these, and only these, beside the two: the lanes
# take them too once their own queue is empty. None measures a speed. Also here, below
# half a core on average in a clean-clone run at e5e65cb: ranks sleeping through an
# emulated slowdown (coordinator_restart 9 CPU s in 41 s, preempt_shrink 18 in 38,
# mpi_dynamic_batch 7 in 24, async_dynamic_batch 6 in 15) and namespace clusters waiting
# on their ticks (preempt_netns 14 in 44, hetero_adopt 5 in 21, hetero_grow 8 in 20,
# hetero_start 8 in 19): each cluster has its own prefix and /24, so they may run beside
# lane 1's. Since 2026-11-27 also the scripts of the two lanes that kept under 0.6 of a core
# (a clean-clone run at f2de1a7: datasets_builtin 10 CPU s in 23, notice 10 in 20, cli 11
# in 20, coordinator_worker_crash 10 in 19, hetero_resize 9 in 20, ...): there the light
# lane ended about 200 s before the two (537 s of its tests against 737 each), and now
# the three carry about 670 s each. Longest first.
LIGHT="coordinator_redis preempt_netns coordinator_restart test_coordinator preempt_shrink mpi_dynamic_batch http_api
 drain_deadline coordinator_assignment datasets_builtin hetero_adopt notice hetero_resize drain cli hetero_start hetero_grow
 coordinator_worker_crash async_dynamic_batch coordinator_lock coordinator_heartbeat drain_rigid hardening_admission tls
 worker_grow hardening_secrets coordinator_stop_busy mpi_emulate_schedule webhooks coordinator_reload hardening_memory"
LIGHT_LANE=${LIGHT_LANE:-1}
in_list() { case " $(echo $2) " in *" $1 "*) true ;; *) false ;; esac; }
# item NAME - how the queue names the test NAME ("u PROGRAM" or "i SCRIPT"), if this run has it
item() {
    wanted "$1" || return 1
    if [ -x "$BUILD/tests/$1" ] && [ "$WHAT" != integration ]; then echo "u $BUILD/tests/$1"
    elif [ -f "tests/integration/$1.sh" ] && [ "$WHAT" != unit ]; then echo "i tests/integration/$1.sh"
    else return 1; fi
}

if [ "$WHAT" = all ] || [ "$WHAT" = unit ] || [ "$WHAT" = integration ] || [ "$WHAT" = only ]; then
    qdir=$(mktemp -d)
    trap 'rm -f "$recap" "$times"; rm -rf "$qdir" "$XDG_CACHE_HOME"; pyfork_stop' EXIT
    # the queues: lane 1's own (the NETNS scripts), then the shared one, SLOW first
    : >"$qdir/own" && : >"$qdir/shared" && : >"$qdir/light"
    light=0
    [ "$TEST_LANES" -ge 2 ] && [ "$LIGHT_LANE" = 1 ] && light=1
    for n in $SLOW; do
        in_list "$n" "$NETNS" || { [ $light = 1 ] && in_list "$n" "$LIGHT"; } || item "$n" >>"$qdir/shared"
    done
    [ $light = 1 ] && for n in $LIGHT; do item "$n" >>"$qdir/light"; done
    for t in "$BUILD"/tests/test_* tests/integration/*.sh; do
        n=$(basename "$t" .sh)
        in_list "$n" "$SLOW" && ! in_list "$n" "$NETNS" && continue
        [ $light = 1 ] && in_list "$n" "$LIGHT" && continue
        if [ "$TEST_LANES" -ge 2 ] && in_list "$n" "$NETNS"; then item "$n" >>"$qdir/own"
        else item "$n" >>"$qdir/shared"; fi
    done
    # take QUEUE - pops the queue's first name into $next (a mkdir lock: atomic in sh).
    take() {
        next=""
        until mkdir "$qdir/lock" 2>/dev/null; do sleep 0.1; done
        next=$(head -1 "$qdir/$1")
        [ -n "$next" ] && { tail -n +2 "$qdir/$1" >"$qdir/$1.tmp"; mv "$qdir/$1.tmp" "$qdir/$1"; }
        rmdir "$qdir/lock"
        [ -n "$next" ]
    }
    # lane K - runs queued tests until none is left; its counters into $qdir/counts.K
    lane() {
        passed=0 failed=0 skipped=0 failures="" out="$qdir/out.$1" llog="$qdir/log.$1" recap="$qdir/recap.$1"
        while if [ "$1" = light ]; then take light
              else { [ "$1" = 1 ] && take own; } || take shared || take light; fi; do
            case $next in
                u\ *) run_unit "${next#u }" "$llog" >"$out" ;;
                *) run_integ "${next#i }" "$llog" >"$out" ;;
            esac
            until mkdir "$qdir/print" 2>/dev/null; do sleep 0.1; done
            cat "$out"
            rmdir "$qdir/print"
        done
        echo "$passed $failed $skipped $failures" >"$qdir/counts.$1"
    }
    k=2 lanes=""
    while [ "$k" -le "$TEST_LANES" ]; do
        lane "$k" &
        lanes="$lanes $!" k=$((k + 1))
    done
    [ $light = 1 ] && { lane light & lanes="$lanes $!"; }
    (lane 1)
    # the lanes only: the Python server (above) is a child too, and lives until the end
    wait $lanes
    for k in $(seq 1 "$TEST_LANES") $([ $light = 1 ] && echo light); do
        [ -f "$qdir/recap.$k" ] && cat "$qdir/recap.$k" >>"$recap"
        read -r p f s fl <"$qdir/counts.$k"
        passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s)); failures="$failures${fl:+ $fl}"
    done
fi

# A name given to "only" that matches no test is a failure, not a silent no-op.
for n in $ONLY; do
    [ -x "$BUILD/tests/$n" ] || [ -f "tests/integration/$n.sh" ] ||
        { echo "no test named $n"; failed=$((failed + 1)); failures="$failures $n"; }
done
# where the time went: the wall time, the sum of the tests' own times (above it by what the
# lanes overlapped) and the longest tests
if [ -s "$times" ]; then
    echo "=== $(( $(date +%s) - began )) s of wall time for $(awk '{ s += $1 } END { print s }' "$times") s of tests in" \
        "$TEST_LANES lane(s)$([ "${light:-0}" = 1 ] && echo " and the light one"); the longest: $(sort -rn "$times" | head -12 | awk '{ printf "%s%s %ds", (NR > 1 ? ", " : ""), $2, $1 }')"
    [ -n "$CG_ROOT" ] && awk -v wall=$(( $(date +%s) - began )) '$3 != "-" { c += $3 } END {
        printf "=== %d CPU s in the tests: %.2f cores busy on average over the wall time\n", c, c / (wall ? wall : 1) }' "$times" &&
        echo "=== the most CPU: $(sort -k3,3rn "$times" | head -12 | awk '{ printf "%s%s %ss", (NR > 1 ? ", " : ""), $2, $3 }')"
fi
# every test's line (seconds, name, CPU seconds) kept for whoever profiles the suite next
[ -s "$times" ] && sort -k3,3rn "$times" >"$BUILD/test-times.txt" 2>/dev/null
[ -s "$recap" ] && { echo "=== failures, last lines of each"; cat "$recap"; }
[ -n "$failures" ] && echo "failed:$failures"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
