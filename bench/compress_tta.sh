# bench/compress_tta.sh - does gradient compression shorten the time to a target accuracy
# on slow links, and what does it cost in final accuracy (issue 47)? ssgd, ResNet-20 on
# CIFAR-10, EPOCHS epochs of the first TRAIN training images (SGD, lr LR with momentum
# 0.9, weight decay 1e-4, cosine to 0 over the run; no augmentation), the test accuracy
# on the first TEST test images EVALS times an epoch (eval_every_steps; evaluations are
# not training time), compression KINDS (none and powersgd rank RANK, no warm-up;
# powersgd-wN: the same after N uncompressed warm-up steps, algorithm.compression.
# warmup_steps; powersgd-wN-gG: and min_gain G, the measured choice) alternating within
# each seed of SEEDS. The defaults are a scale-down that fits a shared
# 2-core machine.
#
# Real (the default mode): 4 ranks (batch 32 each) on the cluster of bench/compress_netns.sh,
# one rank per namespace host, every worker host's link shaped to each of RATES Mbit/s.
# Simulated (sim): pacer-sim, SIM_WORKERS (16) workers of batch SIM_BATCH (8: the same
# global batch of 128; SIM_WORKERS=4 SIM_BATCH=32 is the real runs' layout),
# deterministic (10 Gflop/s a worker, links of SIM_GBPS Gbit/s to a non-blocking
# switch). Its accuracy is the real computation's, which does not depend on the links,
# so each kind and seed is trained once (at the first of SIM_GBPS); its timeline does not
# depend on the values, so each kind and link is then timed once with the compute skipped
# (simulate.skip_compute), and the time to target at a link is that run's training time
# at the step where the trained run first reached TARGET (the script checks that the two
# timelines agree at the first link). Run again into the same OUT (other KINDS or SEEDS,
# or after a stop), a simulated series keeps the runs and rows it has and adds the rest.
#
# TRAINED_AT=MBIT (real runs): each kind and seed was trained at MBIT Mbit/s already (in
# OUT.d/); ssgd is deterministic, so it learns the same on any link, and these runs only
# time it, evaluating on TIMED_TEST (32) test images (cheap: the accuracies are the
# trained run's, step by step). Checked: the final weights' training loss (the summary's
# train_loss) is the trained run's to the last digit, else the script stops.
#
# Per run (one TSV line, appended to OUT.tsv, so a long series can be read or resumed
# part by part): bytes per step (the summary's comm_bytes_per_step), the training step
# (train_s / steps), the time to TARGET test accuracy, the final test accuracy, the best,
# and (real runs) the 1-minute load average sampled during the run (mean and max: the
# machine is shared). Time to target is the training time (train_s) of the first
# evaluation record (--metrics) at or above TARGET: the same clock, loop_s, that the
# summary's time_to_target_s reads, but the spec sets no target_accuracy, because
# reaching it stops the run and the final accuracy at equal epochs is the other half of
# the comparison. Each run's evaluations (step, train_s, test accuracy) are kept in OUT.d/.
#
#   sudo sh bench/compress_tta.sh [OUT.tsv]     (root: network namespaces; docs/RESULTS.md
#                     ran RATES=100, then RATES=1000 TRAINED_AT=100 into the same OUT)
#   sh bench/compress_tta.sh sim [OUT.tsv]      (pacer-sim)
#   sh bench/compress_tta.sh table OUT.tsv [TARGET]   mean ± sd over seeds, as Markdown
#                                               (with TARGET: the time to that accuracy;
#                                               SMOOTH=K: to the mean of K evaluations)
#   sh bench/compress_tta.sh runs OUT.tsv [TARGET]    one Markdown row a run: link, kind,
#                     seed, bytes, step s, comm ms, steps and s to target, final accuracy, load
. bench/lib.sh
ROOT=$(pwd)
case $BUILD in /*) B=$BUILD ;; *) B=$ROOT/$BUILD ;; esac
NETNS=$ROOT/deploy/netns
RATES=${RATES:-100 1000}
SIM_GBPS=${SIM_GBPS:-0.1 1 10}
SIM_WORKERS=${SIM_WORKERS:-16}
SIM_BATCH=${SIM_BATCH:-8}
SEEDS=${SEEDS:-1 2 3}
KINDS=${KINDS:-none powersgd}
RANK=${RANK:-2}
TRAIN=${TRAIN:-20480}
TEST=${TEST:-5000}
EPOCHS=${EPOCHS:-4}
EVALS=${EVALS:-4}
TARGET=${TARGET:-0.50}
LR=${LR:-0.1}
TIMED_TEST=${TIMED_TEST:-32}
CIFAR_DIR=$PACER_SHARED/datasets/cifar-10

# enrich TSV [TARGET] - TSV's rows with two more columns from the runs kept in TSV.d/:
# 16 the steps to the target (the first evaluation at or above it), 17 communication ms
# per step (rank 0's comm phase over the steps); with TARGET, the time to that accuracy
# instead (columns 7 and 12). A simulated row (no load, "-") takes its accuracy from the
# trained run and its time from the timed run at its link.
enrich() {
    tail -n +2 "$1" | while IFS="$(printf '\t')" read -r mbit k s rest; do
        t=${2:-$(echo "$rest" | cut -f9)}
        if [ "$(echo "$rest" | cut -f7)" = "-" ]; then
            acc=$1.d/sim-$k-$s.evals timed=$1.d/sim-$k-$(awk -v m="$mbit" 'BEGIN { print m / 1000 }')-timed
        else
            acc=$1.d/$mbit-$k-$s.evals timed=$1.d/$mbit-$k-$s
        fi
        at=$(reached "$t" "$acc")
        tt=$([ -n "$at" ] && awk -v n="$at" '$1 == n { print $2 }' "$timed.evals")
        comm=$(jq -r '.per_rank[0].phases.comm / .steps * 1000' "$timed.json")
        echo "$mbit	$k	$s	$rest" | awk -F'\t' -v OFS='\t' -v tt="${tt:--}" -v t="$t" -v at="${at:--}" -v c="$comm" \
            '{ $7 = tt; $12 = t; $16 = at; $17 = c; print }'
    done
}
# reached TARGET EVALS - the step of the first evaluation in EVALS ("step train_s accuracy"
# lines) at or above TARGET; with SMOOTH=K (table and runs only), the first at which the
# mean of the last K evaluations is: with evaluations every few steps the accuracy at a
# high learning rate swings by several points from one to the next, and a single one
# crosses the target early by chance.
reached() {
    awk -v t="$1" -v k="${SMOOTH:-1}" '$3 != "" {
        a[n++] = $3; s += $3; if (n > k) s -= a[n - k - 1]
        if (n >= k && s / k >= t) { print $1; exit } }' "$2"
}
# table TSV [TARGET] - per link and compression: runs, bytes per step, the step and its
# communication, steps and time to target (mean ± sd over the runs that reached it, and
# how many did), final and best accuracy, load; and against none, seed by seed: the
# time to target (relative) and the final accuracy (points).
table() {
    enrich "$@" >"$TMP/e.tsv"
    e=$TMP/e.tsv
    printf '| link | compression | runs | bytes per step | training step s | comm ms per step | steps to target | time to target s | reached | time to target vs none | final accuracy | final vs none (points) | best accuracy | load (mean of runs) |\n'
    printf '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n'
    for rate in $(cut -f1 "$e" | sort -gu); do
        for k in $(awk -F'\t' -v r="$rate" '$1 == r { print $2 }' "$e" | awk '!seen[$0]++'); do
            col() { awk -F'\t' -v r="$rate" -v k="$k" -v c="$1" '$1 == r && $2 == k && $c != "-" { print $c }' "$e"; }
            # vs C SCALE OFFSET: per seed, (this kind's column C / none's) x SCALE - OFFSET,
            # or (with OFFSET "diff") the difference x SCALE.
            vs() {
                [ "$k" = none ] && return
                awk -F'\t' -v r="$rate" -v k="$k" -v c="$1" -v m="$2" -v o="$3" '$1 == r && $c != "-" {
                    if ($2 == "none") base[$3] = $c; else if ($2 == k) mine[$3] = $c }
                    END { for (s in mine) if (s in base) print o == "diff" ? (mine[s] - base[s]) * m : (mine[s] / base[s] - 1) * m }' "$e"
            }
            runs=$(col 3 | wc -l)
            printf '| %s Mbit/s | %s | %s | %s | %s | %s | %s | %s | %s of %s | %s | %s | %s | %s | %s |\n' "$rate" "$k" "$runs" \
                "$(col 4 | meansd 0)" "$(col 6 | meansd 3)" "$(col 17 | meansd 1)" "$(col 16 | meansd 0)" \
                "$(col 7 | meansd 1)" "$(col 7 | wc -l)" "$runs" "$(vs 7 100 ratio | meansd 1 | sed 's/^[0-9]/+&/;s/$/ %/;s/^- %$//')" \
                "$(col 8 | meansd 4)" "$(vs 8 100 diff | meansd 2 | sed 's/^[0-9]/+&/;s/^-$//')" "$(col 9 | meansd 4)" "$(col 10 | meansd 1)"
        done
    done
}
# spec KIND SEED WORKERS BATCH [SIMULATE] - the job spec of one run, on stdout (KIND
# powersgd-wN: powersgd with N warm-up steps; powersgd-wN-gG: and min_gain G, the
# measured choice, whose verdict depends on the link: train such a kind at every rate,
# not with TRAINED_AT, which stops when a run trains otherwise).
spec() {
    steps=$((TRAIN / ($3 * $4)))
    warm=$(echo "$1" | sed -n 's/.*-w\([0-9][0-9]*\).*/\1/p')
    gain=$(echo "$1" | sed -n 's/.*-g\([0-9.][0-9.]*\).*/\1/p')
    [ $((steps % EVALS)) -eq 0 ] || { echo "compress_tta: $steps steps an epoch do not split into $EVALS evaluations" >&2; exit 1; }
    jq -n --arg k "${1%%-*}" --argjson wu "${warm:-0}" --argjson g "${gain:-0}" --argjson s "$2" --argjson w "$3" --argjson b "$4" --argjson sim "${5:-null}" \
        --arg ds "$CIFAR_DIR" --argjson r "$RANK" --argjson e "$EPOCHS" --argjson n "$TRAIN" --argjson t "$TEST" \
        --argjson lr "$LR" --argjson ev $((steps / EVALS)) '{
        name: "compress-tta", model: "resnet20", workers: $w, batch_size: $b, epochs: $e, seed: $s,
        log_every: 0, eval_every_steps: $ev, dataset: {name: "cifar10", path: $ds, train_subset: $n, test_subset: $t},
        optimizer: {lr: $lr, momentum: 0.9, weight_decay: 0.0001, lr_schedule: {kind: "cosine"}},
        algorithm: {name: "ssgd", compression: ({kind: $k, rank: $r} + if $wu > 0 then {warmup_steps: $wu} else {} end
                                                + if $g > 0 then {min_gain: $g} else {} end)}} + if $sim then {simulate: $sim} else {} end'
}
# evals METRICS - rank 0's evaluations (it is the one that evaluates) as "step train_s
# test_accuracy" lines in step order (the accuracy null where the compute was skipped).
evals() {
    jq -r 'select(.rank == 0 and (.kind == "eval" or .kind == "epoch")) | [.step, .train_s, .test_accuracy] | @tsv' "$1" |
        sort -n
}
# row RATE KIND SEED SUMMARY EVALS STEP_S TT LOAD [ACCURACY] - one TSV line: the summary's
# bytes and final accuracy (ACCURACY's, a summary, where given), the best evaluation, the
# rest as given.
row() {
    best=$(awk 'BEGIN { b = 0 } $3 > b { b = $3 } END { print b }' "$5")
    jq -r --arg r "$1" --arg k "$2" --arg s "$3" --arg st "$6" --arg tt "$7" --arg b "$best" --arg l "$8" \
        --arg x "$TARGET	$EPOCHS	$TRAIN	$TEST" --argjson acc "$(jq .test_accuracy "${9:-$4}")" \
        '[$r, $k, $s, .comm_bytes_per_step, .steps, $st, $tt, $acc, $b] | @tsv + "\t" + $l + "\t" + $x' "$4"
}
header='mbit\tcompression\tseed\tbytes_per_step\tsteps\tstep_s\ttime_to_target_s\tfinal_accuracy\tbest_accuracy\tload_mean\tload_max\ttarget\tepochs\ttrain\ttest\n'

# sim OUT - the simulated runs (see the top).
sim() {
    [ -d "$CIFAR_DIR" ] || { echo "compress_tta: no CIFAR-10 at $CIFAR_DIR"; exit 1; }
    bw0=${SIM_GBPS%% *}
    # A min_gain kind trains as its verdict says, and the verdict depends on the link:
    # what the other links' timed runs reuse (the first link's accuracy) would be wrong.
    for k in $KINDS; do
        case $k in *-g*) [ "$SIM_GBPS" = "$bw0" ] || {
            echo "compress_tta: $k (min_gain) trains as its verdict at each link says: one SIM_GBPS per OUT" >&2
            exit 1
        } ;;
        esac
    done
    for s in $SEEDS; do
        for k in $KINDS; do
            run=$1.d/sim-$k-$s
            # Trained already (a series resumed into the same OUT): deterministic, so again
            # would give the same.
            [ -s "$run.json" ] && [ -s "$run.evals" ] && continue
            spec "$k" "$s" "$SIM_WORKERS" "$SIM_BATCH" "{\"deterministic\": true, \"bandwidth_gbps\": $bw0}" >"$TMP/s.json"
            rm -f "$TMP/m.jsonl"
            "$B/pacer-sim" --spec "$TMP/s.json" --summary "$run.json" --metrics "$TMP/m.jsonl" >"$run.log" 2>&1 ||
                { tail "$run.log" >&2; echo "compress_tta: simulated $k, seed $s failed" >&2; exit 1; }
            evals "$TMP/m.jsonl" >"$run.evals"
        done
    done
    for bw in $SIM_GBPS; do
        for k in $KINDS; do
            t=$1.d/sim-$k-$bw-timed
            # Not timed already (a resumed series keeps its timed runs).
            if [ ! -s "$t.json" ] || [ ! -s "$t.evals" ]; then
                spec "$k" 1 "$SIM_WORKERS" "$SIM_BATCH" "{\"deterministic\": true, \"skip_compute\": true, \"bandwidth_gbps\": $bw}" >"$TMP/s.json"
                rm -f "$TMP/m.jsonl"
                "$B/pacer-sim" --spec "$TMP/s.json" --summary "$t.json" --metrics "$TMP/m.jsonl" >"$t.log" 2>&1 ||
                    { tail "$t.log" >&2; echo "compress_tta: simulated $k at $bw Gbit/s failed" >&2; exit 1; }
                evals "$TMP/m.jsonl" >"$t.evals"
            fi
            step_s=$(jq -r '.train_s / .steps' "$t.json")
            mbit=$(awk -v g="$bw" 'BEGIN { print g * 1000 }')
            for s in $SEEDS; do
                # One row a link, kind and seed, however often a series is resumed.
                awk -F'\t' -v m="$mbit" -v k="$k" -v s="$s" '$1 == m && $2 == k && $3 == s { f = 1 } END { exit !f }' \
                    "$2" && continue
                run=$1.d/sim-$k-$s
                if [ "$bw" = "$bw0" ]; then
                    cut -f1,2 "$t.evals" >"$TMP/t"
                    cut -f1,2 "$run.evals" | cmp -s - "$TMP/t" ||
                        echo "compress_tta: $k seed $s: the trained and the skipped timelines differ at $bw Gbit/s" >&2
                fi
                at=$(awk -v t="$TARGET" '$3 != "" && $3 >= t { print $1; exit }' "$run.evals")
                tt=$([ -n "$at" ] && awk -v n="$at" '$1 == n { print $2 }' "$t.evals")
                row "$mbit" "$k" "$s" "$run.json" "$run.evals" "$step_s" "${tt:--}" "$(printf -- '-\t-')" | tee -a "$2"
            done
        done
    done
}

case ${1:-} in
    table)
        table "$2" "${3:-}"
        exit 0
        ;;
    runs)
        enrich "$2" ${3:+"$3"} | awk -F'\t' '{ printf "| %s Mbit/s | %s | %s | %s | %.3f | %.1f | %s | %s | %.4f | %s |\n",
            $1, $2, $3, $4, $6, $17, $16, $7 == "-" ? "-" : sprintf("%.1f", $7), $8, $10 }'
        exit 0
        ;;
    sim)
        out=${2:-$BUILD/bench/compress_tta_sim.tsv}
        case $out in /*) ;; *) out=$ROOT/$out ;; esac
        mkdir -p "$out.d"
        [ -s "$out" ] || printf "$header" >"$out"
        sim "$out" "$out"
        exit 0
        ;;
esac

out=${1:-$BUILD/bench/compress_tta.tsv}
case $out in /*) ;; *) out=$ROOT/$out ;; esac
[ "$(id -u)" -eq 0 ] || { echo "compress_tta: needs root (network namespaces)"; exit 1; }
[ -d "$CIFAR_DIR" ] || { echo "compress_tta: no CIFAR-10 at $CIFAR_DIR"; exit 1; }
mkdir -p "$out.d"
[ -s "$out" ] || printf "$header" >"$out"
compress_cluster_up
for rate in $RATES; do
    compress_shape "$rate"
    for s in $SEEDS; do
        for k in $KINDS; do
            run=$out.d/$rate-$k-$s
            trained=${TRAINED_AT:+$out.d/$TRAINED_AT-$k-$s}
            if [ -n "$trained" ]; then
                [ -f "$trained.evals" ] || { echo "compress_tta: no run $trained to take the accuracy of"; exit 1; }
                TEST=$TIMED_TEST spec "$k" "$s" 4 32 >"$TMP/s.json"
            else
                spec "$k" "$s" 4 32 >"$TMP/s.json"
            fi
            rm -f "$TMP/m.jsonl"
            # The load of the shared machine while this run trains (the sleep paces the
            # sampler; nothing waits on it).
            (while :; do cut -d' ' -f1 /proc/loadavg; sleep 10; done) >"$TMP/load" &
            sampler=$!
            compress_mpirun "$TMP/s.json" "$run.log" --summary "$run.json" --metrics "$TMP/m.jsonl"
            rc=$?
            kill "$sampler"
            [ $rc -eq 0 ] || { echo "compress_tta: $k at $rate Mbit/s, seed $s failed" >&2; exit 1; }
            evals "$TMP/m.jsonl" >"$run.evals"
            if [ -n "$trained" ]; then
                a=$(jq .train_loss "$run.json") b=$(jq .train_loss "$trained.json")
                [ "$a" = "$b" ] || {
                    echo "compress_tta: $k, seed $s at $rate Mbit/s did not train as at $TRAINED_AT (train_loss $a, $b)"
                    exit 1
                }
                # This run's times, the trained run's accuracy at each step.
                awk -F'\t' -v OFS='\t' 'NR == FNR { a[$1] = $3; next } { print $1, $2, a[$1] }' "$trained.evals" \
                    "$run.evals" >"$TMP/e" && mv "$TMP/e" "$run.evals"
            fi
            tt=$(awk -v t="$TARGET" '$3 >= t { print $2; exit }' "$run.evals")
            load=$(awk '{ s += $1; if ($1 > m) m = $1 } END { printf "%.2f\t%.2f", s / NR, m }' "$TMP/load")
            row "$rate" "$k" "$s" "$run.json" "$run.evals" "$(jq -r '.train_s / .steps' "$run.json")" "${tt:--}" "$load" \
                ${trained:+"$trained.json"} | tee -a "$out"
        done
    done
done
