#!/bin/sh
# tests/tools/busy_cores.sh NAME... - how many cores each integration test keeps busy: runs
# tests/integration/NAME.sh alone, one after the other, and prints its exit status, wall
# time, the machine's busy CPU time over that span (user, nice, system, irq and softirq
# of /proc/stat's first line, so its child processes, mpirun's ranks and the coordinator
# it starts in a namespace count too) and their ratio, the cores busy on average. Run it
# on an otherwise idle machine: everything else running is counted. docs/TESTING.md
# ("Time") quotes it; a test that keeps less than a core busy is a candidate for
# tests/run.sh's second lane.
set -u
cd "$(dirname "$0")/../.." || exit 1
export BUILD=${BUILD:-build} OPENBLAS_NUM_THREADS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export PACER_SHARED=${PACER_SHARED:-$(cd .. && pwd)/shared}
hz=$(getconf CLK_TCK)
busy() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 }' /proc/stat; }
for t in "$@"; do
    [ -f "tests/integration/$t.sh" ] || { echo "$t: no tests/integration/$t.sh" >&2; exit 2; }
    b0=$(busy) s0=$(date +%s.%N)
    sh "tests/integration/$t.sh" >/dev/null 2>&1
    rc=$?
    b1=$(busy) s1=$(date +%s.%N)
    awk -v t="$t" -v rc="$rc" -v b="$((b1 - b0))" -v hz="$hz" -v w0="$s0" -v w1="$s1" 'BEGIN {
        w = w1 - w0; printf "%s: exit %d, wall %.1f s, busy %.1f CPU s, %.2f cores\n", t, rc, w, b / hz, b / hz / w }'
done
