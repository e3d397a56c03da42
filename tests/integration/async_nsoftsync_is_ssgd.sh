# n-softsync with n = 1 is hard-sync: with 3 workers it aggregates all three gradients
# before each update, replies after it, and hands out batches in worker order, so it
# gives the same weights as ssgd on the same batches (issue 4): after 20 updates the max
# abs weight (and momentum) difference is below 1e-5 (summation order is the only
# difference), at the same step, epoch and position. ps_version is left out: it is the
# parameter server's update count on one side and 0 for ssgd.
. tests/lib.sh
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
spec() {
    cat > "$TMP/$1.json" <<JSON
{"name": "eq", "model": "lenet5", "dataset": {"name": "fashion-mnist", "train_subset": 4800, "test_subset": 200},
 "algorithm": {"name": "$1", "n": 1}, "workers": 3, "batch_size": 32, "epochs": 1, "seed": 3, "log_every": 0,
 "optimizer": {"lr": 0.05, "momentum": 0.9, "weight_decay": 0.0005},
 "checkpoint": {"every_steps": 20, "dir": "$TMP/$1"}}
JSON
}
spec ssgd
spec nsoftsync
$MPIRUN -np 3 $WORKER --spec "$TMP/ssgd.json" --stop-after-steps 20 || fail "ssgd failed"
$MPIRUN -np 4 $WORKER --spec "$TMP/nsoftsync.json" --stop-after-steps 20 || fail "nsoftsync failed"
$BUILD/tools/ckpt_diff --ignore ps_version "$TMP/ssgd/eq.ckpt" "$TMP/nsoftsync/eq.ckpt" 1e-5 || fail "nsoftsync (n=1) and ssgd weights differ"
