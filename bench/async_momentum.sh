# Asynchronous momentum (issue 29): how often an asynchronous job collapses with the
# momentum applied as given ("explicit") and with the staleness's own momentum taken out
# of it ("compensated", docs/JOB_SPEC.md "Asynchronous momentum"). The issue's spec:
# LeNet-5 on the first 20,000 Fashion-MNIST training samples, 3 workers and a parameter
# server, lr 0.02, batch 64, 3 epochs; for each algorithm x momentum x mode, one run per
# seed. A run counts as collapsed when the worker's detector says so (summary "health",
# worker/health.h; on_collapse "continue", so every run trains its 3 epochs); the test
# accuracy of the others is given as mean ± sd and range. The final test accuracy of the
# collapsed ones is listed too (a detector that called a learning run collapsed would show
# there, with the rule of worker/health.h that fired and the update that decided it).
# Arrival order at the parameter server depends on scheduling, so a seed does not
# fix a run: the fractions are what to read, over SEEDS.
# Seeds are the outer loop and every run leaves one line in RUNS (kept): a run cut short
# still leaves a balanced table, and `TABLE_ONLY=1` prints the table of what RUNS holds.
# RUNS is appended to (more seeds later add to the table): remove it to start afresh.
#   SEEDS="1 2 3 4 5" ALGOS="asgd dbs-sgd" MOMENTA="0.5 0.9" MODES="explicit compensated"
. bench/lib.sh
SEEDS=${SEEDS:-1 2 3 4 5}
ALGOS=${ALGOS:-asgd dbs-sgd}
MOMENTA=${MOMENTA:-0.5 0.9}
MODES=${MODES:-explicit compensated}
RUNS=${RUNS:-$BUILD/bench/async_momentum.runs}
FASHION=${FASHION:-/usr/share/datasets/fashion-mnist}
[ -d "$FASHION" ] || { echo "Fashion-MNIST not found at $FASHION (Debian package dataset-fashion-mnist)"; exit 1; }

# One line per run: algorithm momentum mode seed collapsed(0/1) test_accuracy applied wall note
if [ -z "${TABLE_ONLY:-}" ]; then
    for seed in $SEEDS; do
        for a in $ALGOS; do
            for mu in $MOMENTA; do
                for mode in $MODES; do
                    cat > "$TMP/s.json" <<JSON
{"name": "am", "model": "lenet5",
 "dataset": {"name": "fashion-mnist", "path": "$FASHION", "train_subset": 20000},
 "algorithm": {"name": "$a"}, "workers": 3, "batch_size": 64, "epochs": 3, "seed": $seed, "log_every": 0,
 "optimizer": {"lr": 0.02, "momentum": $mu, "async_momentum": "$mode"}}
JSON
                    t0=$(date +%s.%N)
                    $MPIRUN -np 4 $WORKER --spec "$TMP/s.json" --summary "$TMP/out.json" >"$TMP/log" 2>&1 \
                        || { cat "$TMP/log"; exit 1; }
                    wall=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
                    jq -r --arg a "$a" --arg mu "$mu" --arg mode "$mode" --arg seed "$seed" --arg wall "$wall" '
                        (if .health.state == "collapsed" then 1 else 0 end) as $c
                        | (.health.reason // "") as $r
                        | (if $c == 0 then "-" elif ($r | test("uniform")) then "loss at ln C"
                           elif ($r | test("chance")) then "accuracy at chance"
                           elif ($r | test("its best")) then "loss grown" else "not finite" end) as $why
                        | [$a, $mu, $mode, $seed, $c, .test_accuracy, .parameter_server.momentum.applied, $wall,
                           (if $c == 1 then "\($why), update \(.health.at_step)" else "-" end)] | @tsv' \
                        "$TMP/out.json" | tee -a "$RUNS"
                done
            done
        done
    done
fi

md ""
md "### Asynchronous momentum: LeNet-5, 20,000 Fashion-MNIST samples, 3 workers, lr 0.02, batch 64, 3 epochs (\`sh bench/async_momentum.sh\`, $(nproc) cores)"
md ""
md "| algorithm | momentum | async_momentum | runs (seeds) | collapsed | test accuracy of the rest | range | accuracy of the collapsed | applied at the end | wall s per run |"
md "|---|---|---|---|---|---|---|---|---|---|"
for a in $ALGOS; do
    for mu in $MOMENTA; do
        for mode in $MODES; do
            awk -F'\t' -v a="$a" -v mu="$mu" -v m="$mode" '$1 == a && $2 == mu && $3 == m' "$RUNS" > "$TMP/cell"
            n=$(wc -l < "$TMP/cell")
            [ "$n" -gt 0 ] || continue
            c=$(awk -F'\t' '$5 == 1' "$TMP/cell" | wc -l)
            seeds=$(cut -f4 "$TMP/cell" | sort -n | paste -sd, -)
            awk -F'\t' '$5 == 0 { print $6 }' "$TMP/cell" > "$TMP/acc"
            range=$(sort -g "$TMP/acc" | awk 'NR == 1 { lo = $1 } { hi = $1 } END { if (NR) printf "%.4f-%.4f", lo, hi; else print "-" }')
            bad=$(awk -F'\t' '$5 == 1 { printf "%s%.3f (%s)", (k++ ? ", " : ""), $6, $9 }' "$TMP/cell")
            md "| $a | $mu | $mode | $n ($seeds) | $c of $n | $(meansd 4 < "$TMP/acc") | $range | ${bad:--} | $(cut -f7 "$TMP/cell" | meansd 3) | $(cut -f8 "$TMP/cell" | meansd 1) |"
        done
    done
done
