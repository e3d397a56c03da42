# bench/sim_goodput.sh - the goodput planner's evidence (issue 28) on simulated
# heterogeneous clusters, deterministic (bench/sim_lib.sh): time to a target test
# accuracy, 5 seeds each, mean ± sd and 95% Welch intervals.
#
# 8 workers at speeds 1, 1, 1, 1, 1/2, 1/2, 1/4, 1/8 of 10 Gflop/s, each on its own link
# to a switch: 10 Gbit/s and 5 us, 1 Gbit/s and 50 us, or 100 Mbit/s and 100 us (100m:
# where communication is most of a step). MODEL=lenet5 (default): LeNet-5 /
# Fashion-MNIST (the whole training set; accuracy on the first 2,000 test samples), lr
# 0.05, target TARGET (default 0.87). MODEL=cifar10_quick: cifar10_quick / CIFAR-10 (the
# whole training set, accuracy on the first 1,000 test samples), lr 0.04, weight decay
# 5e-4, target 0.50. Both: ssgd, momentum 0.9, the spec's batch B0 = 8 x BATCH (default
# 16: B0 = 128), re-planning every 10 steps, at most EPOCHS (8) epochs. Configs:
#   fixed    ssgd at B0, even split (no planner)
#   dyn      ssgd at B0 with today's dynamic batching (split by speed, B0 fixed)
#   equal    the goodput planner with AdaptDL's model (every node, even split)
#   goodput  the goodput planner with a model per node
#   sweepK   the oracle's sweep: dynamic batching at K x B0 (K = 2, 4, 8), lr x K (the
#            linear scaling rule); the oracle is the best of dyn and the sweep by mean
# Time to target is the summary's time_to_target_s: simulated training seconds at the
# first evaluation that reached the target (evaluations every ~2,560 samples at B0:
# every 20 steps at B0, 20 / K at K x B0, 10 with a planner; they are not training time).
#
#   sh bench/sim_goodput.sh            # both platforms, 70 runs (about 40 minutes of CPU;
#                                      # 1g's sweep8 runs cost 70 s of CPU each)
#   PLATFORMS=1g SEEDS="1 2" sh ...    # fewer
#   SWEEP="2 4" sh ...                 # the oracle's sweep of K (default 2 4 8)
#   CONFIGS="goodput" sh ...           # only these configs (default: all); the tables
#                                      # show the configs whose runs are all present
. bench/lib.sh
. bench/sim_lib.sh
BATCH=${BATCH:-16}
EPOCHS=${EPOCHS:-8}
MODEL=${MODEL:-lenet5}
PLATFORMS=${PLATFORMS:-10g 1g}
case $MODEL in
lenet5)
    TARGET=${TARGET:-0.87} LR=${LR:-0.05} PFX=gp LABEL="LeNet-5 / Fashion-MNIST" OPT=""
    DATASET='{"name": "fashion-mnist", "test_subset": 2000}' ;;
cifar10_quick)
    TARGET=${TARGET:-0.50} LR=${LR:-0.04} PFX=gpc LABEL="cifar10_quick / CIFAR-10" OPT=', "weight_decay": 0.0005'
    [ -d "$PACER_SHARED/datasets/cifar-10" ] || { echo "CIFAR-10 not found at $PACER_SHARED/datasets/cifar-10"; exit 1; }
    DATASET="{\"name\": \"cifar10\", \"path\": \"$PACER_SHARED/datasets/cifar-10\", \"train_subset\": ${CIFAR_TRAIN:-10000}, \"test_subset\": 1000}" ;;
*) echo "MODEL: lenet5 or cifar10_quick"; exit 1 ;;
esac
B0=$((8 * BATCH))
SLOW='[1, 1, 1, 1, 2, 2, 4, 8]'
platform() {
    case $1 in
    10g) echo "{\"slowdown\": $SLOW, \"bandwidth_gbps\": 10, \"latency_us\": 5, \"deterministic\": true}" ;;
    1g) echo "{\"slowdown\": $SLOW, \"bandwidth_gbps\": 1, \"latency_us\": 50, \"deterministic\": true}" ;;
    100m) echo "{\"slowdown\": $SLOW, \"bandwidth_gbps\": 0.1, \"latency_us\": 100, \"deterministic\": true}" ;;
    esac
}
add() { # CONFIG PLATFORM BATCH LR EVAL ALGORITHM_JSON
    for s in $SEEDS; do
        sim_add "$PFX-b$BATCH-$2-$1-s$s" "{\"name\": \"goodput\", \"model\": \"$MODEL\",
          \"dataset\": $DATASET,
          \"algorithm\": $6, \"workers\": 8, \"batch_size\": $3, \"epochs\": $EPOCHS, \"seed\": $s, \"log_every\": 0,
          \"optimizer\": {\"lr\": $4, \"momentum\": 0.9$OPT}, \"target_accuracy\": $TARGET, \"eval_every_steps\": $5,
          \"simulate\": $(platform "$2")}"
    done
}
SWEEP=${SWEEP:-2 4 8}
CONFIGS=${CONFIGS:-fixed dyn equal goodput sweep}
want() { case " $CONFIGS " in *" $1 "*) return 0 ;; esac; return 1; }
# present CONFIG - every seed's run of CONFIG has its row
present() { for s in $SEEDS; do [ -f "$SIM_RUNS/$1-s$s/row.json" ] || return 1; done; }
for p in $PLATFORMS; do
    want fixed && add fixed "$p" "$BATCH" "$LR" 20 '{"name": "ssgd"}'
    want dyn && add dyn "$p" "$BATCH" "$LR" 20 '{"name": "ssgd", "dynamic_batch": true, "replan_steps": 10}'
    want equal && add equal "$p" "$BATCH" "$LR" 10 '{"name": "ssgd", "goodput": true, "goodput_model": "equal", "replan_steps": 10}'
    want goodput && add goodput "$p" "$BATCH" "$LR" 10 '{"name": "ssgd", "goodput": true, "replan_steps": 10}'
    want sweep || continue
    for k in $SWEEP; do
        e=$((20 / k))
        [ "$e" -ge 1 ] || e=1
        add "sweep$k" "$p" $((BATCH * k)) "$(awk -v l="$LR" -v k="$k" 'BEGIN { print l * k }')" "$e" \
            '{"name": "ssgd", "dynamic_batch": true, "replan_steps": 10}'
    done
done
sim_go

# tstat CONFIG - "mean sd n reached" of time_to_target_s over the seeds that reached it.
tstat() {
    sim_rows "$1" | jq -rs 'length as $all | map(.time_to_target_s | select(. != null)) | length as $n |
        (if $n > 0 then add / $n else 0 end) as $m |
        (if $n > 1 then (map((. - $m) * (. - $m)) | add / ($n - 1) | sqrt) else 0 end) as $sd |
        "\($m) \($sd) \($n) \($all)"'
}
cmp_lt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 < b + 0) }'; }
# mean of FIELD over the seeds ("-" when null)
fmean() { sim_rows "$1" | jq -rs --arg f "$2" --argjson d "${3:-1}" 'map(.[$f] | select(. != null)) |
    if length == 0 then "-" else (add / length * pow(10; $d) | round / pow(10; $d) | tostring) end'; }
verdict() { # LABEL HELD_IF_UPPER_BELOW_0 : "diff lo hi"
    awk -v lo="$2" -v hi="$3" 'BEGIN { if (hi < 0) print "**held**"; else if (lo > 0) print "**missed**"; else print "**not shown** (the interval includes the goal)" }'
}
for p in $PLATFORMS; do
    md ""
    md "#### $LABEL to $TARGET, 8 workers at 1, 1, 1, 1, 1/2, 1/2, 1/4, 1/8 x 10 Gflop/s, $(case $p in 1g) echo "1 Gbit/s, 50 us" ;; 100m) echo "100 Mbit/s, 100 us" ;; *) echo "10 Gbit/s, 5 us" ;; esac), B0 = $B0 (\`MODEL=$MODEL PLATFORMS=$p sh bench/sim_goodput.sh\`, $(echo $SEEDS | wc -w) seeds)"
    md ""
    md "| config | time to target, simulated s | reached | steps | mean global batch | noise scale at the end | test accuracy at the stop |"
    md "|---|---|---|---|---|---|---|"
    best="" bestm=""
    for c in fixed dyn equal goodput $(for k in $SWEEP; do echo "sweep$k"; done); do
        k="$PFX-b$BATCH-$p-$c"
        present "$k" || continue
        set -- $(tstat "$k")
        t=$(pm "$1" "$2" 2)
        [ "$3" -eq 0 ] && t="-"
        gb=$(fmean "$k" gb_mean 0)
        [ "$gb" = "-" ] && gb=$(sim_rows "$k" | jq -rs 'map(.batch_final | add) | add / length | round')
        md "| $c | $t | $3/$4 | $(fmean "$k" steps 0) | $gb | $(fmean "$k" noise_scale 0) | $(fmean "$k" test_accuracy 4) |"
        case $c in dyn | sweep*)
            if [ "$3" -eq "$4" ] && { [ -z "$bestm" ] || cmp_lt "$1" "$bestm"; }; then best=$c bestm=$1; fi ;;
        esac
    done
    g=$(present "$PFX-b$BATCH-$p-goodput" && tstat "$PFX-b$BATCH-$p-goodput")
    md ""
    md "Oracle (best of dyn and the sweep, every seed reaching the target): $best."
    md ""
    md "| goal | measured [95% interval] | verdict |"
    md "|---|---|---|"
    claim() { # LABEL OTHER A SUFFIX
        present "$PFX-b$BATCH-$p-goodput" && present "$PFX-b$BATCH-$p-$2" || return 0
        set -- "$1" "$2" "$3" $g $(tstat "$PFX-b$BATCH-$p-$2")
        d=$(welch "$4" "$5" "$6" "$8" "$9" "${10}" "$3")
        set -- "$1" "$2" "$3" $d "$4" "$8"
        rel=$(awk -v g="$7" -v o="$8" 'BEGIN { printf "%+.0f%%", 100 * (g / o - 1) }')
        md "| $1 | goodput $rel against $2; goodput - $3 x $2: $(awk -v d="$4" -v lo="$5" -v hi="$6" 'BEGIN { printf "%+.2f s [%+.2f, %+.2f]", d, lo, hi }') | $(verdict x "$5" "$6") |"
        # the same seeds' runs paired (every seed reached the target in both configs)
        pairs=$(for s in $SEEDS; do jq -r '.time_to_target_s // "null"' "$SIM_RUNS/$PFX-b$BATCH-$p-goodput-s$s/row.json" "$SIM_RUNS/$PFX-b$BATCH-$p-$2-s$s/row.json" | paste -sd' '; done)
        case $pairs in *null*) return 0 ;; esac
        set -- "$1" "$2" "$3" $(printf '%s\n' "$pairs" | paired "$3")
        md "| $1, paired by seed | goodput - $3 x $2: $(awk -v d="$4" -v lo="$5" -v hi="$6" 'BEGIN { printf "%+.2f s [%+.2f, %+.2f]", d, lo, hi }') | $(verdict x "$5" "$6") |"
    }
    claim "at least 30% less time than dynamic batching at B0" dyn 0.7
    [ -n "$best" ] && claim "within 10% of the oracle" "$best" 1.1
    claim "ahead of the equal-nodes model" equal 1
done
