# resnet20 trains on a CIFAR-10 subset of the real data set (../shared): the training loss
# falls from epoch 1 to epoch 3. On 2 of the kernels' threads (`threads: 2`): faster on 2
# idle cores, and the multi-threaded kernels train a real network. Without ../shared, train_synthetic.sh still runs resnet20,
# batch norm and augmentation on generated CIFAR-10 files.
. tests/lib.sh
need_dir "$PACER_SHARED/datasets/cifar-10" "CIFAR-10"
cat > "$TMP/spec.json" <<JSON
{"name": "r20", "model": "resnet20", "dataset": {"name": "cifar10", "path": "$PACER_SHARED/datasets/cifar-10",
 "train_subset": 1536, "test_subset": 500, "augment": true},
 "optimizer": {"lr": 0.05, "momentum": 0.9, "weight_decay": 0.0001}, "batch_size": 64, "epochs": 3, "log_every": 0,
 "threads": 2}
JSON
$WORKER --spec "$TMP/spec.json" 2>"$TMP/log" >/dev/null || { cat "$TMP/log"; fail "training failed"; }
cat "$TMP/log"
first=$(sed -n 's/^epoch 1\/3 done: train_loss_running \([0-9.]*\).*/\1/p' "$TMP/log")
last=$(sed -n 's/^epoch 3\/3 done: train_loss_running \([0-9.]*\).*/\1/p' "$TMP/log")
need_number "epoch 1 train_loss_running" "$first"
at_most "resnet20 train_loss_running in epoch 3 (epoch 1: $first)" "$last" "$(awk -v a="$first" 'BEGIN { print a * 0.95 }')"
