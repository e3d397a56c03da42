# The comparison of the DBS-SGD paper (issues 4 and 11): 4 workers with emulated
# slowdowns SLOW (default [1, 1, 2, 4] scaled to the cores by fit_slowdowns, bench/lib.sh:
# [4, 4, 8, 16] on 2 cores), the same wall-clock budget (BUDGET s) for every algorithm, on LeNet-5 /
# Fashion-MNIST, LeNet-5 / MNIST and cifar10_quick / CIFAR-10 (when present), over
# SEEDS. Per algorithm, mean ± sd over the seeds of: the final weights' training loss
# (train_loss, on a fixed training subset), test accuracy, the speedup (training
# samples/s against one worker as fast as the fastest emulated node, ideal
# sum(f_min / f_i)), the per-worker mean staleness (averaged over seeds) and its spread
# (max - min over workers, the figure dynamic batching changes: the update-weighted mean
# staleness is N - 1 whatever the speeds), and whether the emulation was faithful.
# Also the parameter server's capacity: pushes per second and its busy fraction.
# Timing figures mean something only on a quiet machine whose cores the emulated profile
# fits (docs/RESULTS.md).
# Momentum 0.5 applied as given (optimizer.async_momentum "explicit"), as when the figures
# in docs/RESULTS.md were measured (the default became "compensated" with issue 29).
#   SEEDS="1 2 3" BUDGET=40 SLOW="[4, 4, 8, 16]" DATASETS="fashion-mnist mnist cifar10"
. bench/lib.sh
BUDGET=${BUDGET:-40}
SEEDS=${SEEDS:-1 2 3}
SLOW=${SLOW:-$(fit_slowdowns "[1, 1, 2, 4]")}
DATASETS=${DATASETS:-fashion-mnist mnist cifar10}
ALGOS=${ALGOS:-asgd nsoftsync dc-asgd ddc-asgd dbs-sgd ssgd}
run() { # DATASET MODEL ALGO WORKERS NP SLOWDOWNS SEED
    cat > "$TMP/s.json" <<JSON
{"name": "cmp", "model": "$2", "dataset": {"name": "$1", "path": "$(dataset_dir "$1")"},
 "algorithm": {"name": "$3", "n": 2, "replan_steps": 10}, "workers": $4, "batch_size": 32, "epochs": 50,
 "seed": $7, "log_every": 0, "optimizer": {"lr": $LR, "momentum": 0.5, "async_momentum": "explicit"},
 "emulate": {"slowdown": $6}}
JSON
    $MPIRUN -np $5 $WORKER --spec "$TMP/s.json" --summary "$TMP/out.json" --time-budget "$BUDGET" >"$TMP/log" 2>&1 \
        || { cat "$TMP/log"; exit 1; }
}
dataset_dir() {
    case $1 in
        fashion-mnist) echo /usr/share/datasets/fashion-mnist ;;
        mnist) echo "$PACER_SHARED/datasets/mnist" ;;
        cifar10) echo "$PACER_SHARED/datasets/cifar-10" ;;
    esac
}
fmin=$(echo "$SLOW" | tr -d '[] ' | tr ',' '\n' | sort -g | head -1)
ideal=$(echo "$SLOW" | tr -d '[] ' | tr ',' '\n' | awk -v m="$fmin" '{ s += m / $1 } END { printf "%.2f", s }')
nseeds=$(echo $SEEDS | wc -w)
for ds in $DATASETS; do
    case $ds in fashion-mnist|mnist) model=lenet5 LR=0.04 ;; cifar10) model=cifar10_quick LR=0.02 ;; esac
    [ -d "$(dataset_dir "$ds")" ] || { md ""; md "($ds not found at $(dataset_dir "$ds"): skipped)"; continue; }
    md ""
    md "### $model / $ds, 4 workers, slowdowns $SLOW, ${BUDGET}s each, $nseeds seed(s) (\`SEEDS=\"$SEEDS\" BUDGET=$BUDGET sh bench/async_compare.sh\`, $(nproc) cores)"
    md ""
    md "| algorithm | train loss | test accuracy | speedup vs 1 worker (ideal ${ideal}x) | staleness mean per worker | spread of the workers' means | staleness p95 per worker | faithful |"
    md "|---|---|---|---|---|---|---|---|"
    : > "$TMP/one"
    for seed in $SEEDS; do
        run "$ds" "$model" sgd 1 1 "[$fmin]" "$seed"
        jq .train_samples_per_s "$TMP/out.json" >> "$TMP/one"
    done
    one=$(awk '{ s += $1 } END { print s / NR }' "$TMP/one")
    for a in $ALGOS; do
        np=5; [ $a = ssgd ] && np=4
        : > "$TMP/loss"; : > "$TMP/acc"; : > "$TMP/sp"; : > "$TMP/st"; : > "$TMP/p95"; : > "$TMP/spread"; fa=""
        for seed in $SEEDS; do
            run "$ds" "$model" $a 4 $np "$SLOW" "$seed"
            jq .train_loss "$TMP/out.json" >> "$TMP/loss"
            jq .test_accuracy "$TMP/out.json" >> "$TMP/acc"
            awk -v a="$(jq .train_samples_per_s "$TMP/out.json")" -v b="$one" 'BEGIN { print a / b }' >> "$TMP/sp"
            jq -c '[.per_rank[] | select(.role == "worker") | .staleness.mean]' "$TMP/out.json" >> "$TMP/st"
            jq -c '[.per_rank[] | select(.role == "worker") | .staleness.p95]' "$TMP/out.json" >> "$TMP/p95"
            jq '[.per_rank[] | select(.role == "worker") | .staleness.mean] | max - min' "$TMP/out.json" >> "$TMP/spread"
            fa="$fa$(faithful "$TMP/out.json"); "
            if [ $a = asgd ] && [ $ds = fashion-mnist ]; then ps=$(jq -c '.parameter_server' "$TMP/out.json"); fi
        done
        permean=$(jq -s -r 'transpose | map(add / length * 100 | round / 100) | join(", ")' "$TMP/st")
        perp95=$(jq -s -r 'transpose | map(max) | join(", ")' "$TMP/p95")
        fa=$(printf '%s' "$fa" | tr ';' '\n' | sed 's/^ *//' | grep -v '^$' | sort -u | paste -sd ';' -)
        md "| $a | $(meansd 3 < "$TMP/loss") | $(meansd 4 < "$TMP/acc") | $(meansd 2 < "$TMP/sp")x | $permean | $(meansd 2 < "$TMP/spread") | $perp95 | $fa |"
    done
done
md ""
md "Parameter server capacity (asgd, LeNet-5, 4 workers, last seed): ${ps:-not measured}"
