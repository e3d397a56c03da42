#!/bin/sh
# bench/sched_policies.sh - issue 46's experiment: fifo, agnostic, fair and hetero in
# pacer-sched-sim on the 48-host cluster (bench/sched/cluster48.json: 16 fast, 16 half, 16
# quarter; four job types whose class ratios differ), 200-job Philly-like traces
# (bench/sched_trace.py) at low, medium and high load (1.0, 1.5 and 2.0 jobs/h: offered
# loads 0.98, 1.48, 1.97), 5 seeds each. Prints, per load and policy, the mean ± sd over the
# seeds of average JCT, makespan, p95 queueing delay (hours) and max-over-users FTF rho;
# then hetero's JCT over fifo's and agnostic's (mean over seeds), in how many seeds some
# user's mean rho under hetero is worse than under fifo, and the bound's JCT over fifo's
# (every job alone on its fastest class at its ask: what no policy that keeps jobs at their
# ask beats). agnostic and hetero let elastic jobs grow past their ask onto idle slots, to
# GROW x their workers (pacer-sched-sim --grow-past-ask; default 2), a fifth of a step not
# shrinking past the ask (--grow-overhead OVERHEAD, 0.2); "hetero at ask" is hetero with
# jobs kept at their ask (the daemon's rule today). Then, at medium load, hetero's JCT over
# fifo's for other GROW and OVERHEAD (how much the result rests on those assumptions).
# Appends it to $OUT (bench/lib.sh).
#   make build/pacer-sched-sim && sh bench/sched_policies.sh   (about two minutes)
. bench/lib.sh
SIM=$BUILD/pacer-sched-sim
CL=bench/sched/cluster48.json
SEEDS=${SEEDS:-1 2 3 4 5}
GROW=${GROW:-2} OVERHEAD=${OVERHEAD:-0.2}
POLICIES="fifo agnostic fair hetero hetero-ask"
# sim POLICY TRACE SEED [GROW OVERHEAD] - pacer-sched-sim's summary for one run
sim() {
    case $1 in
        hetero-ask) "$SIM" --cluster $CL --trace "$2" --policy hetero --seed "$3" --grow-past-ask 1 ;;
        *) "$SIM" --cluster $CL --trace "$2" --policy "$1" --seed "$3" --grow-past-ask "${4:-$GROW}" \
            --grow-overhead "${5:-$OVERHEAD}" ;;
    esac
}
[ -x "$SIM" ] || { echo "build $SIM first (make $SIM)"; exit 1; }
md ""
md "### Scheduling policies, 48 hosts in 3 classes, 200 Philly-like jobs, seeds $SEEDS, growth to ${GROW}x the ask, overhead $OVERHEAD ($(date -u +%Y-%m-%d), $(nproc) cores)"
md ""
md "| load | policy | avg JCT (h) | makespan (h) | p95 wait (h) | max user FTF rho | resizes |"
md "|---|---|---|---|---|---|---|"
for load in low:1.0 medium:1.5 high:2.0; do
    name=${load%%:*} rate=${load#*:}
    for s in $SEEDS; do
        python3 bench/sched_trace.py --cluster $CL --jobs 200 --rate "$rate" --seed "$s" >"$TMP/$name-$s.jsonl" 2>/dev/null
        for p in $POLICIES; do
            sim "$p" "$TMP/$name-$s.jsonl" "$s" >"$TMP/$name-$s-$p.json" || exit 1
        done
    done
    for p in $POLICIES; do
        col() { for s in $SEEDS; do jq "$1" "$TMP/$name-$s-$p.json"; done | meansd "$2"; }
        md "| $name | $(echo "$p" | sed "s/-ask/ at ask/") | $(col '.avg_jct_s / 3600' 1) | $(col '.makespan_s / 3600' 0) | $(col '.p95_wait_s / 3600' 1) | $(col .max_ftf_rho 2) | $(col .resizes 0) |"
    done
done
md ""
md "| load | hetero JCT / fifo | hetero JCT / agnostic | seeds where a user's FTF under hetero is worse than under fifo | hetero at ask JCT / fifo | bound at ask JCT / fifo |"
md "|---|---|---|---|---|---|"
# bound: the average JCT no policy can beat, each job from its arrival alone on the fastest
# class for its type at the workers it asks (no wait, no restart): samples / (workers x speed)
bound() {
    jq -s --slurpfile c $CL '[.[] | .samples / (.workers * ($c[0].speeds[.type] | [.[]] | max))] | add / length' "$1"
}
for name in low medium high; do
    r() { for s in $SEEDS; do jq -n --slurpfile a "$TMP/$name-$s-hetero.json" --slurpfile b "$TMP/$name-$s-$1.json" \
        '$a[0].avg_jct_s / $b[0].avg_jct_s'; done | meansd 2; }
    rb() { for s in $SEEDS; do jq -n --argjson a "$(bound "$TMP/$name-$s.jsonl")" --slurpfile b "$TMP/$name-$s-fifo.json" \
        '$a / $b[0].avg_jct_s'; done | meansd 2; }
    worse=0
    for s in $SEEDS; do
        jq -e -n --slurpfile h "$TMP/$name-$s-hetero.json" --slurpfile f "$TMP/$name-$s-fifo.json" \
            '[$h[0].ftf_rho_by_user | to_entries[] | select(.value > $f[0].ftf_rho_by_user[.key])] | length > 0' \
            >/dev/null && worse=$((worse + 1))
    done
    ra() { for s in $SEEDS; do jq -n --slurpfile a "$TMP/$name-$s-hetero-ask.json" --slurpfile b "$TMP/$name-$s-fifo.json" \
        '$a[0].avg_jct_s / $b[0].avg_jct_s'; done | meansd 2; }
    md "| $name | $(r fifo) | $(r agnostic) | $worse of $(echo $SEEDS | wc -w) | $(ra) | $(rb) |"
done
md ""
md "Medium load, hetero's JCT over fifo's (and over agnostic's with the same growth), growth to G x the ask with overhead O:"
md ""
md "| G | O | hetero JCT / fifo | per seed | hetero JCT / agnostic |"
md "|---|---|---|---|---|"
for go in 1.5:0.2 2:0 2:0.1 2:0.2 2:0.4 3:0.2 4:0.2; do
    g=${go%%:*} o=${go#*:}
    for s in $SEEDS; do
        for p in hetero agnostic; do sim $p "$TMP/medium-$s.jsonl" "$s" "$g" "$o" >"$TMP/sens-$s-$p.json" || exit 1; done
        jq -n --slurpfile a "$TMP/sens-$s-hetero.json" --slurpfile b "$TMP/medium-$s-fifo.json" --slurpfile c "$TMP/sens-$s-agnostic.json" \
            '[$a[0].avg_jct_s / $b[0].avg_jct_s, $a[0].avg_jct_s / $c[0].avg_jct_s] | @tsv' -r
    done >"$TMP/sens.tsv"
    md "| $g | $o | $(cut -f1 "$TMP/sens.tsv" | meansd 2) | $(cut -f1 "$TMP/sens.tsv" | awk '{ printf "%s%.2f", (NR > 1 ? ", " : ""), $1 }') | $(cut -f2 "$TMP/sens.tsv" | meansd 2) |"
done
