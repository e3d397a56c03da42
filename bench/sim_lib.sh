# bench/sim_lib.sh - the runner and the statistics of the simulated evidence benchmarks
# (bench/sim_async.sh, sim_sync.sh, sim_scaling.sh; sourced after bench/lib.sh).
#
# Every run is a deterministic simulation (build/pacer-sim, "deterministic": true): its
# result is a function of the spec, the seed and the platform, measured in simulated
# seconds, so it does not depend on how loaded this machine is (only how long it takes
# does). Runs are kept under $SIM_RUNS (default build/bench/sim-runs), one directory per
# run named after its configuration and seed; a run whose spec and arguments have not
# changed is not run again, so an interrupted benchmark resumes where it stopped and the
# tables can be printed again without rerunning anything.
#
#   sim_add NAME SPEC_JSON [WORKER ARGS]   queue a run (SPEC_JSON: the whole job spec)
#   sim_go                                 run the queue, $JOBS at a time (default 2)
#   sim_rows CONFIG                        the result rows (JSON lines) of CONFIG's seeds
#   sim_stat CONFIG FIELD                  "mean sd n" of FIELD over CONFIG's seeds
#   welch M1 S1 N1 M2 S2 N2 [A]           95% interval of mean1 - A x mean2 (Welch):
#                                          "diff lo hi"
#   paired A < "X Y" lines                 95% interval of the mean of X - A x Y over
#                                          pairs (the same seed of two configs): "diff lo hi"
SIM=${SIM:-$BUILD/pacer-sim}
SIM_RUNS=${SIM_RUNS:-$BUILD/bench/sim-runs}
SEEDS=${SEEDS:-1 2 3 4 5}
JOBS=${JOBS:-2}
mkdir -p "$SIM_RUNS"
[ -x "$SIM" ] || { echo "$SIM not built (make; make smpi needs libsimgrid-dev)"; exit 1; }
command -v smpirun >/dev/null 2>&1 || { echo "smpirun not found: install libsimgrid-dev (make deps)"; exit 1; }
: >"$TMP/queue"

sim_add() {
    d=$SIM_RUNS/$1
    mkdir -p "$d"
    printf '%s\n' "$2" | jq -S . >"$d/spec.new" || { echo "sim_add $1: bad spec"; exit 1; }
    shift 2
    printf '%s\n' "$*" >>"$d/spec.new"
    echo "$d" >>"$TMP/queue"
}

sim_go() {
    n=$(wc -l <"$TMP/queue")
    echo "simulated runs: $n queued under $SIM_RUNS, $JOBS at a time"
    xargs -P "$JOBS" -n 1 sh bench/sim_one.sh "$SIM" <"$TMP/queue" || { echo "some simulated runs failed"; exit 1; }
    : >"$TMP/queue"
}

sim_rows() {
    for s in $SEEDS; do cat "$SIM_RUNS/$1-s$s/row.json"; done
}

sim_stat() {
    sim_rows "$1" | jq -rs --arg f "$2" 'map(.[$f]) | length as $n | (add / $n) as $m |
        (if $n > 1 then (map((. - $m) * (. - $m)) | add / ($n - 1) | sqrt) else 0 end) as $sd |
        "\($m) \($sd) \($n)"'
}

# Welch's t interval (95%) of m1 - a m2, with the t quantile of its Welch-Satterthwaite
# degrees of freedom (table; 5 seeds give 4 to 8).
welch() {
    awk -v m1="$1" -v s1="$2" -v n1="$3" -v m2="$4" -v s2="$5" -v n2="$6" -v a="${7:-1}" 'BEGIN {
        split("12.706 4.303 3.182 2.776 2.571 2.447 2.365 2.306 2.262 2.228 2.201 2.179 2.160 2.145 2.131 2.120 2.110 2.101 2.093 2.086", t, " ")
        v1 = s1 * s1 / n1; v2 = a * a * s2 * s2 / n2; se = sqrt(v1 + v2)
        df = (v1 + v2 > 0) ? (v1 + v2) ^ 2 / (v1 * v1 / (n1 - 1) + v2 * v2 / (n2 - 1)) : 1000
        q = df >= 20 ? 1.96 + 0.126 * 20 / df : t[int(df) < 1 ? 1 : int(df)]
        d = m1 - a * m2
        printf "%.6g %.6g %.6g\n", d, d - q * se, d + q * se }'
}

# Paired t interval (95%): runs of two configs with the same seed share the initial
# weights and the data order, so per-seed differences cancel what the seed alone decides
# and need fewer seeds than Welch's unpaired interval.
paired() {
    awk -v a="${1:-1}" '{ x[NR] = $1 - a * $2; s += x[NR] } END {
        split("12.706 4.303 3.182 2.776 2.571 2.447 2.365 2.306 2.262 2.228 2.201 2.179 2.160 2.145 2.131 2.120 2.110 2.101 2.093 2.086", t, " ")
        n = NR; if (n < 2) { print "nan nan nan"; exit }
        m = s / n; for (i = 1; i <= n; i++) v += (x[i] - m) ^ 2
        df = n - 1; q = df > 20 ? 1.96 + 0.126 * 20 / df : t[df]
        h = q * sqrt(v / df / n)
        printf "%.6g %.6g %.6g\n", m, m - h, m + h }'
}

# fmt MEAN SD DIGITS: "m ± sd"
pm() { awk -v m="$1" -v s="$2" -v d="${3:-3}" 'BEGIN { printf "%.*f ± %.*f", d, m, d, s }'; }
# One cell: mean ± sd of FIELD over CONFIG's seeds.
cell() { set -- "$1" "$2" "${3:-3}" "$(sim_stat "$1" "$2")"; set -- $4 "$3"; pm "$1" "$2" "$4"; }
