#!/bin/sh
# bench/exp_asha.sh - an ASHA search against a random search of the same trials, on the
# real coordinator (local launcher, this machine's slots): TRIALS (32) LeNet-5 trials on a
# Fashion-MNIST subset (TRAIN 2048 images, TEST 1000, EPOCHS 9, batch 64), over the
# learning rate (log-uniform 0.001..0.3) and momentum (uniform 0.5..0.99), CONC (2) at a
# time; ASHA with rf 3 from 1 epoch (rungs at 1 and 3). random and asha draw the same
# trials for a seed (docs/EXPERIMENTS.md "Trial sets"), so the random search is every
# ASHA trial trained to the end. Per seed (SEEDS, "1 2 3"): each search's wall time
# (finished - submitted), its best trial's final test accuracy, and one full trial's wall
# time (the median of the random search's trials, each alone on its share of the slots).
# Prints the mean ± sd over the seeds, ASHA's best minus random's, and ASHA's wall time over
# one full trial's. Appends it to $OUT (bench/lib.sh). MIN_EPOCHS (1) and RF (3): ASHA's
# first rung and reduction factor; METHODS="asha" runs ASHA alone (each trial trains as it
# would in the random search, one process with a fixed seed, so an earlier run's random
# bests for the same seeds still compare: the per-seed bests are printed too). KEEP=DIR
# keeps each search's GET answer (METHOD-SEED.json) and every trial's test accuracy per
# epoch (METHOD-SEED-curves.json: [{"trial", "params", "acc": [epoch 1, 2, ...]}], from its
# job's history): a random search's curves are what bench/asha_replay.py replays ASHA on.
#   make && sh bench/exp_asha.sh   (about 5 minutes a seed on 2 cores)
ROOT=$(pwd)
. tests/integration/coordinator_lib.inc
need_api_tools
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
OUT=${OUT:-$BUILD/bench/results.md}
mkdir -p "$(dirname "$OUT")"
md() { printf '%s\n' "$*" | tee -a "$OUT"; }
median() { sort -g | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
meansd() {
    awk -v d="${1:-3}" '{ s += $1; q += $1 * $1; n++ }
        END { if (!n) { print "-"; exit }
              m = s / n; v = n > 1 ? (q - n * m * m) / (n - 1) : 0
              if (n == 1) printf "%.*f\n", d, m; else printf "%.*f ± %.*f\n", d, m, d, sqrt(v > 0 ? v : 0) }'
}
METHODS=${METHODS:-asha random} MIN_EPOCHS=${MIN_EPOCHS:-1} RF=${RF:-3}
SEEDS=${SEEDS:-1 2 3} TRIALS=${TRIALS:-32} CONC=${CONC:-2} EPOCHS=${EPOCHS:-9} TRAIN=${TRAIN:-2048} TEST=${TEST:-1000}
start_coord_admin
# body FILE METHOD SEED - the experiment
body() {
    jq -n --arg m "$2" --argjson s "$3" --argjson e "$EPOCHS" --argjson me "$MIN_EPOCHS" --argjson rf "$RF" --argjson t "$TRIALS" --argjson c "$CONC" \
        --argjson tr "$TRAIN" --argjson te "$TEST" '{name: "\($m)-\($s)", spec: {model: "lenet5",
        dataset: {name: "fashion-mnist", train_subset: $tr, test_subset: $te}, optimizer: {lr: 0.02, momentum: 0.9},
        batch_size: 64, epochs: $e, seed: 7, threads: 1, log_every: 50},
        search: {method: $m, trials: $t, max_concurrent: $c, metric: "test_accuracy", mode: "max", min_epochs: $me,
        reduction_factor: $rf, seed: $s, space: {"optimizer.lr": {log_uniform: [0.001, 0.3]},
        "optimizer.momentum": {uniform: [0.5, 0.99]}}}}' >"$1"
}
xq() { curl -s -H "Authorization: Bearer $PACER_TOKEN" "$BASE/api/v1/experiments/$1" | jq -r "$2"; }
ended() { case $(xq "$1" .state) in SUCCEEDED | FAILED | CANCELLED) true ;; *) false ;; esac; }
for s in $SEEDS; do
    for m in $METHODS; do
        body "$TMP/$m.json" $m "$s"
        ok 201 "$ADMIN" POST /api/v1/experiments -H "$JSON" -d @"$TMP/$m.json"
        x=$(jq -r .id "$TMP/body")
        await 7200 "experiment $x ($m, seed $s)" ended "$x"
        xq "$x" . >"$TMP/$m-$s.json"
        [ "$(jq -r .state "$TMP/$m-$s.json")" = SUCCEEDED ] || fail "$m seed $s: $(jq -c '{state, reason}' "$TMP/$m-$s.json")"
        jq -r '.finished - .submitted' "$TMP/$m-$s.json" >"$TMP/$m-$s.wall"
        jq -r .best.metric "$TMP/$m-$s.json" >"$TMP/$m-$s.best"
        if [ -n "${KEEP:-}" ]; then
            mkdir -p "$KEEP" && cp "$TMP/$m-$s.json" "$KEEP/$m-$s.json"
            jq -c '.trials[] | {trial, job, params}' "$TMP/$m-$s.json" | while read -r t; do
                curl -s -H "Authorization: Bearer $PACER_TOKEN" "$BASE/api/v1/jobs/$(echo "$t" | jq -r .job)/history" |
                    jq -c --argjson t "$t" '$t + {acc: ([.accuracy[] | select(.rank == 0)] | group_by(.epoch)
                        | map(.[-1].test_accuracy))}'
            done | jq -s . >"$KEEP/$m-$s-curves.json"
        fi
        echo "$m seed $s: $(cat "$TMP/$m-$s.wall") s, best $(cat "$TMP/$m-$s.best")," \
            "$(jq '[.trials[].epochs_trained] | add' "$TMP/$m-$s.json") epochs trained"
    done
    [ -f "$TMP/random-$s.json" ] || continue
    for j in $(jq -r '.trials[].job' "$TMP/random-$s.json"); do q "$j" '.finished - .started'; done |
        median >"$TMP/one-$s.wall"
done
col() { for s in $SEEDS; do cat "$TMP/$1-$s.$2" 2>/dev/null; done; }
md ""
md "### ASHA against random search, $TRIALS LeNet-5 trials ($EPOCHS epochs of $TRAIN Fashion-MNIST images, $CONC at a time; seeds: $SEEDS; $(nproc) cores)"
md ""
md "| search | wall time (s) | best final test accuracy |"
md "|---|---|---|"
md "| ASHA (rf $RF, rungs from $MIN_EPOCHS epochs) | $(col asha wall | meansd 0) | $(col asha best | meansd 4) |"
[ -f "$TMP/random-${SEEDS%% *}.json" ] || exit 0
md "| random (every trial to the end) | $(col random wall | meansd 0) | $(col random best | meansd 4) |"
md "| one full trial | $(col one wall | meansd 1) | - |"
md ""
[ -f "$TMP/asha-${SEEDS%% *}.json" ] || exit 0
md "Per seed ($SEEDS): ASHA's best $(col asha best | tr '\n' ' ')and random's $(col random best | tr '\n' ' ')(final test accuracy)."
md "ASHA's best minus random's (points): $(for s in $SEEDS; do awk -v a="$(cat "$TMP/asha-$s.best")" -v r="$(cat "$TMP/random-$s.best")" 'BEGIN { print 100 * (a - r) }'; done | meansd 2);" \
    "ASHA's wall time over one full trial's: $(for s in $SEEDS; do awk -v a="$(cat "$TMP/asha-$s.wall")" -v o="$(cat "$TMP/one-$s.wall")" 'BEGIN { print a / o }'; done | meansd 2);" \
    "random's over ASHA's: $(for s in $SEEDS; do awk -v a="$(cat "$TMP/asha-$s.wall")" -v r="$(cat "$TMP/random-$s.wall")" 'BEGIN { print r / a }'; done | meansd 2)."
