# bench/before_after.sh - the same benchmarks of bench/run.sh against two builds, rounds
# alternating old and new (the order flips every round, so drift in the machine's load
# favours neither), and per figure the medians, their ratio and the run-to-run spread.
# The scripts are this tree's (bench/*.sh); only BUILD differs, so both builds are timed
# by the same harness. A build dir needs pacer-worker, pacer-coordinator and bench/*
# (phase_cost, coord_tick, allreduce_raw, cpu_clock) built; a second worktree for the old
# commit:
#   git worktree add ../old COMMIT && make -C ../old -j2 build/pacer-worker \
#       build/pacer-coordinator build/bench/phase_cost build/bench/coord_tick \
#       build/bench/allreduce_raw build/bench/cpu_clock
#   OLD=../old/build NEW=build BENCHES="one_worker redis_overhead" ROUNDS=3 sh bench/before_after.sh
# Each benchmark's own knobs (RUNS, PAIRS, SEEDS, TICK_SECONDS, LOCAL_ONLY, ...) pass
# through the environment and apply to both builds alike. A figure is "within noise" when
# the old and new min..max ranges over the rounds overlap; with 3 rounds on a shared
# machine that is the most a difference can be said to be. The ratio is left out ("-")
# where a median is not positive (an overhead near 0 per cent). Every figure also has the
# benchmark's own wall time (wall_s) and the 1-minute load average as its runs started
# (load_1min). The table goes to stdout and to $TABLE
# (build/bench/before_after.md); every run's Markdown is kept under $KEEP when given.
set -u
cd "$(dirname "$0")/.." || exit 1
: "${OLD:?OLD=build dir of the old tree}" "${NEW:?NEW=build dir of the new tree}"
BENCHES=${BENCHES:-one_worker mpi_sync redis_overhead trace_overhead coord_tick launch_latency lenet_vs_pytorch}
ROUNDS=${ROUNDS:-3}
TABLE=${TABLE:-build/bench/before_after.md}
abs() { (cd "$1" && pwd); }
OLD=$(abs "$OLD") && NEW=$(abs "$NEW") || exit 1
for d in "$OLD" "$NEW"; do
    [ -x "$d/pacer-worker" ] || { echo "before_after: $d/pacer-worker not built" >&2; exit 1; }
done
. bench/lib.sh   # TMP (removed on exit), median
W=$TMP
mkdir -p "$(dirname "$TABLE")"

# figures BENCH MD - "name value" lines: the headline figures of one run's Markdown (the
# rows bench/BENCH.sh prints; a figure the run did not print is left out, not 0).
figures() {
    case $1 in
        one_worker) awk -F'|' '/^\| [0-9.]+ ± / { split($2, a, " "); split($3, b, " ")
            print "sgd_samples_per_s", a[1]; print "asgd_samples_per_s", b[1] }' "$2" ;;
        mpi_sync) awk -F'|' '
            /^\| [24] \| / { n = $2 + 0; split($3, a, " "); split($4, b, " ")
                print "ssgd_comm_us_np" n, a[1]; print "raw_allreduce_us_np" n, b[1] }
            /^\| [a-z-]+( \+ dynamic_batch)? \| [0-9.]+/ { g = $2; gsub(/^ | $/, "", g); gsub(/ \+ /, "+", g)
                split($3, a, " "); print "hetero_wall_s_" g, a[1] }' "$2"
            sed -n 's/^Time inside MPI per merge: \([0-9.]*\) us.*/hpsgd_mpi_us_per_merge \1/p' "$2" ;;
        redis_overhead) sed -n 's/.*included: \([0-9.]*\) s standalone.*/train_s_plain \1/p
            s/^\([0-9.]*\) s with --redis.*Overhead \*\*\(-*[0-9.]*\)%.*/train_s_redis \1\noverhead_pct \2/p' "$2" ;;
        trace_overhead) awk -F'|' '/^\| [0-9]+ µs \|/ { us = $2 + 0; sub(/%/, "", $6); sub(/%/, "", $7)
                print "marks_overhead_pct_" us "us", $6 + 0; print "ring_overhead_pct_" us "us", $7 + 0 }
            / ms without --trace/ { print "step_ms_plain", $0 + 0; sub(/.*without --trace, /, ""); print "step_ms_trace", $0 + 0 }' "$2" ;;
        coord_tick) awk -F'|' '/^\| \*\*job, all ticks\*\*/ { print "tick_wall_p50_ms", $4 + 0; print "tick_cpu_p50_ms", $7 + 0
                print "redis_round_trips", $9 + 0 }' "$2"
            sed -n 's/^Coordinator CPU with the job: \*\*\([0-9.]*\)% of one core.*/coord_cpu_pct \1/p' "$2" ;;
        launch_latency) awk -F'|' '/^\| local \|/ { print "local_latency_s", $3 + 0 }' "$2" ;;
        lenet_vs_pytorch) awk -F'|' '/^\| pacer \|/ && !p++ { print "pacer_samples_per_s", $4 + 0; print "pacer_rss_mb", $5 + 0 }
            /^\| PyTorch / && !t++ { print "torch_samples_per_s_control", $4 + 0 }' "$2" ;;
        hpsgd_overlap) awk -F'|' '/^\| [0-9]+ \| [0-9]+ \|/ { k = $2 + 0; print "in_mpi_us_per_round_k" k, $4 + 0
                print "overlap_saves_pct_k" k, $7 + 0 }' "$2" ;;
        async_compare) awk -F'|' '/^### / { ds = $0; sub(/ \/ .*/, "", ds); sub(/### /, "", ds) }
            /^\| [a-z-]+ \| [0-9.]+/ { a = $2; gsub(/ /, "", a); split($5, s, " "); print "speedup_" ds "_" a, s[1] }' "$2"
            sed -n 's/^Parameter server capacity.*"updates_per_s":\([0-9.]*\).*/ps_updates_per_s \1/p' "$2" ;;
    esac
}

# one TAG DIR BENCH ROUND - a run of BENCH against the build in DIR; its figures, wall_s
# and load_1min appended to $W/TAG.BENCH.
one() {
    md=$W/$1.$3.$4.md load=$(cut -d' ' -f1 /proc/loadavg) t0=$(date +%s.%N)
    BUILD=$2 OUT=$md sh "bench/$3.sh" >"$W/log" 2>&1 || { echo "before_after: $3 failed on $2:" >&2; tail -5 "$W/log" >&2; return 1; }
    t1=$(date +%s.%N)
    { figures "$3" "$md"; awk -v a="$t0" -v b="$t1" 'BEGIN { printf "wall_s %.1f\n", b - a }'; echo "load_1min $load"; } >>"$W/$1.$3"
    [ -n "${KEEP:-}" ] && mkdir -p "$KEEP" && cp "$md" "$KEEP/"
    echo "  round $4 $1 $3: $(tail -2 "$W/$1.$3" | head -1), load $load" >&2
}

status=0
for r in $(seq "$ROUNDS"); do
    for b in $BENCHES; do
        [ -f "bench/$b.sh" ] || { echo "before_after: no bench/$b.sh" >&2; status=1; continue; }
        if [ $((r % 2)) = 1 ]; then one old "$OLD" "$b" "$r" && one new "$NEW" "$b" "$r"
        else one new "$NEW" "$b" "$r" && one old "$OLD" "$b" "$r"; fi || status=1
    done
done

# stat TAG BENCH NAME - "median min max" of one figure over the rounds; nothing when no
# round printed it.
stat() {
    awk -v k="$3" '$1 == k { print $2 }' "$W/$1.$2" 2>/dev/null | sort -g >"$W/values"
    [ -s "$W/values" ] && echo "$(median <"$W/values") $(head -1 "$W/values") $(tail -1 "$W/values")"
}
{
    echo "| benchmark | figure | old median | new median | new / old | old min..max | new min..max | within noise |"
    echo "|---|---|---|---|---|---|---|---|"
    for b in $BENCHES; do
        [ -f "$W/old.$b" ] || continue
        for k in $(awk '!seen[$1]++ { print $1 }' "$W/old.$b"); do
            o=$(stat old "$b" "$k") n=$(stat new "$b" "$k")
            [ -n "$o" ] && [ -n "$n" ] || continue
            echo "$b $k $o $n" | awk '{ r = $3 > 0 && $6 > 0 ? sprintf("%.3f", $6 / $3) : "-"
                v = $2 == "load_1min" ? "(the machine)" : ($4 <= $8 && $7 <= $5) ? "yes" : "**no**"
                printf "| %s | %s | %g | %g | %s | %g..%g | %g..%g | %s |\n", $1, $2, $3, $6, r, $4, $5, $7, $8, v }'
        done
    done
    echo
    echo "OLD=$OLD NEW=$NEW ROUNDS=$ROUNDS, $(nproc) cores, $(date -u +%Y-%m-%dT%H:%MZ)."
} | tee "$TABLE"
exit $status
