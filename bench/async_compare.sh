# The comparison of the DBS-SGD paper (issue 4), reproduced: 4 workers with emulated
# slowdowns [1,1,2,4], the same wall-clock budget for every algorithm, on LeNet-5 /
# Fashion-MNIST, LeNet-5 / MNIST and cifar10_quick / CIFAR-10 (if present). Reports final
# training loss (the mean over the last epoch or partial epoch), test accuracy, per-rank
# mean and p95 staleness, and speedup (training samples/s) over one worker.
# Also the parameter server's capacity: pushes per second and its busy fraction.
. bench/lib.sh
BUDGET=${BUDGET:-20}
run() { # DATASET MODEL ALGO WORKERS NP
    cat > "$TMP/s.json" <<JSON
{"name": "cmp", "model": "$2", "dataset": {"name": "$1", "path": "$(dataset_dir "$1")"},
 "algorithm": {"name": "$3", "n": 2, "replan_steps": 10}, "workers": $4, "batch_size": 32, "epochs": 50,
 "seed": 5, "log_every": 0, "optimizer": {"lr": $LR, "momentum": 0.5},
 "emulate": {"slowdown": $SLOW}}
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
for set in "fashion-mnist lenet5 0.04" "mnist lenet5 0.04" "cifar10 cifar10_quick 0.02"; do
    set -- $set
    ds=$1 model=$2 LR=$3
    [ -d "$(dataset_dir "$ds")" ] || { md ""; md "($ds not found at $(dataset_dir "$ds"): skipped)"; continue; }
    md ""
    md "### $model / $ds, 4 workers, slowdowns [1,1,2,4], ${BUDGET}s each (\`sh bench/async_compare.sh\`)"
    md ""
    md "| algorithm | train loss | test accuracy | staleness mean per worker | staleness p95 per worker | speedup vs 1 worker |"
    md "|---|---|---|---|---|---|"
    SLOW='[1]'
    run "$ds" "$model" sgd 1 1
    one=$(jq .train_samples_per_s "$TMP/out.json")
    SLOW='[1, 1, 2, 4]'
    for a in asgd nsoftsync dc-asgd ddc-asgd dbs-sgd ssgd; do
        np=5; [ $a = ssgd ] && np=4
        run "$ds" "$model" $a 4 $np
        md "| $a | $(jq '.train_loss * 1000 | round / 1000' "$TMP/out.json") | $(jq '.test_accuracy * 10000 | round / 10000' "$TMP/out.json") | $(jq -r '[.per_rank[] | select(.role == "worker") | .staleness.mean * 100 | round / 100] | join(", ")' "$TMP/out.json") | $(jq -r '[.per_rank[] | select(.role == "worker") | .staleness.p95] | join(", ")' "$TMP/out.json") | $(ratio "$(jq .train_samples_per_s "$TMP/out.json")" "$one")x |"
        if [ $a = asgd ] && [ $ds = fashion-mnist ]; then
            ps=$(jq -c '.parameter_server' "$TMP/out.json")
        fi
    done
done
md ""
md "Parameter server capacity (asgd, LeNet-5, 4 workers): $ps"
