# ssgd on 3 ranks with unequal batches 16, 32, 48 matches one rank on the concatenated
# batch of 96 samples from the same initial weights: after 20 steps (momentum, weight
# decay) the max abs weight difference is below 1e-5. Float sums in a different order
# are the only difference (measured: ~3e-8).
. tests/lib.sh
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
cat > "$TMP/ssgd.json" <<JSON
{"name": "eq", "model": "lenet5", "dataset": {"name": "fashion-mnist", "train_subset": 4800, "test_subset": 500},
 "algorithm": {"name": "ssgd", "max_batch": 96}, "workers": 3, "batch_size": 32, "epochs": 1, "seed": 3, "log_every": 0,
 "optimizer": {"lr": 0.05, "momentum": 0.9, "weight_decay": 0.0005},
 "checkpoint": {"every_steps": 20, "dir": "$TMP/ssgd"}}
JSON
sed 's/"name": "ssgd", "max_batch": 96/"name": "sgd"/; s/"workers": 3, "batch_size": 32/"workers": 1, "batch_size": 96/; s#/ssgd"#/sgd"#' \
    "$TMP/ssgd.json" > "$TMP/sgd.json"
$MPIRUN -np 3 $WORKER --spec "$TMP/ssgd.json" --batch-plan 16,32,48 --stop-after-steps 20 || fail "ssgd run failed"
$WORKER --spec "$TMP/sgd.json" --stop-after-steps 20 || fail "single-rank run failed"
$BUILD/tools/ckpt_diff "$TMP/ssgd/eq.ckpt" "$TMP/sgd/eq.ckpt" 1e-5 || fail "ssgd and single-rank weights differ"
