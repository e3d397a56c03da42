#!/bin/sh
# bench/exp_sim.sh - what a hyperparameter search costs on unequal nodes, in
# pacer-sched-sim (--experiment, docs/EXPERIMENTS.md "On unequal nodes"): the 32-trial ASHA
# search of bench/sched/asha32.json (LeNet-5-sized trials of 27 epochs of 60000 samples,
# 8 at a time, rungs at 1, 3 and 9 epochs, rf 3) on bench/sched/cluster_exp.json (2 fast,
# 2 half and 4 quarter slots: 2000, 1000, 500 samples/s), for search seeds 1 2 3. Per policy:
# agnostic (every slot alike: a trial stays where it started), hetero with every trial
# worth 1 (--trial-worth none: its completion-rate objective only), hetero with promoted
# trials worth rf^rung (the default); and the same search as a random search (every trial
# trains every epoch) under hetero, the cost ASHA saves. Prints per policy the mean ± sd
# over the seeds of the search's end (virtual s), the moves and the epochs trained, then
# the search's end over one trial's on a fast slot alone, and hetero's over agnostic's.
# The metric is synthetic (sim/sched_exp.c), so the best metric says only that every
# placement found the same best trial. Appends it to $OUT (bench/lib.sh).
#   make build/pacer-sched-sim && sh bench/exp_sim.sh   (a few seconds)
. bench/lib.sh
SIM=$BUILD/pacer-sched-sim
CL=bench/sched/cluster_exp.json
EXP=bench/sched/asha32.json
SEEDS=${SEEDS:-1 2 3}
OPTS="--round-s 30 --min-run-s 60 --restart-cost-s 10"
[ -x "$SIM" ] || { echo "exp_sim: $SIM not built (make $SIM)"; exit 1; }
for s in $SEEDS; do
    jq ".search.seed = $s" $EXP >"$TMP/asha-$s.json"
    jq ".search.seed = $s | .search.method = \"random\"" $EXP >"$TMP/random-$s.json"
    "$SIM" --cluster $CL --experiment "$TMP/asha-$s.json" --policy agnostic $OPTS >"$TMP/agnostic-$s.out" || exit 1
    "$SIM" --cluster $CL --experiment "$TMP/asha-$s.json" --policy hetero $OPTS --trial-worth none \
        >"$TMP/hetero-none-$s.out" || exit 1
    "$SIM" --cluster $CL --experiment "$TMP/asha-$s.json" --policy hetero $OPTS >"$TMP/hetero-$s.out" || exit 1
    "$SIM" --cluster $CL --experiment "$TMP/random-$s.json" --policy hetero $OPTS >"$TMP/random-$s.out" || exit 1
done
col() { for s in $SEEDS; do jq -r "$2" "$TMP/$1-$s.out"; done; }
md ""
md "### A 32-trial ASHA search on unequal nodes (pacer-sched-sim --experiment, seeds: $SEEDS)"
md ""
md "| placement | search ends (s) | / one trial on a fast slot | moves | epochs trained | best metric |"
md "|---|---|---|---|---|---|"
for p in agnostic hetero-none hetero random; do
    case $p in
        agnostic) name="ASHA, agnostic" ;;
        hetero-none) name="ASHA, hetero, trials worth 1" ;;
        hetero) name="ASHA, hetero, promoted trials worth rf^rung" ;;
        random) name="random (every trial to the end), hetero" ;;
    esac
    md "| $name | $(col $p .makespan_s | meansd 0) | $(col $p '.makespan_s / .experiment.one_trial_s.fast' | meansd 2) |" \
        "$(col $p .resizes | meansd 1) | $(col $p .experiment.epochs_trained | meansd 0) |" \
        "$(col $p .experiment.best.metric | meansd 4) |"
done
r=$(for s in $SEEDS; do echo "$(jq .makespan_s "$TMP/hetero-$s.out") $(jq .makespan_s "$TMP/agnostic-$s.out")"; done |
    awk '{ print $1 / $2 }' | meansd 2)
md ""
md "hetero's search end over agnostic's, per seed: $r (one trial alone: $(jq .experiment.one_trial_s.fast "$TMP/hetero-1.out") s" \
    "on a fast slot, $(jq .experiment.one_trial_s.quarter "$TMP/hetero-1.out") s on a quarter one)."
