# Every asynchronous algorithm trains LeNet-5 on Fashion-MNIST with 3 workers (plus the
# parameter server) to at least 0.85 test accuracy in 2 epochs (issue 4): that claim, on
# the full training set, with PACER_TEST_FULL=1 (make test-full; docs/RESULTS.md quotes
# it). make test trains on a fifth of it (12000 images, each algorithm in about 3 s
# instead of 15) to at least 0.70: 0.741 to 0.760 at da9c81e (asgd 0.741, nsoftsync 0.741,
# dc-asgd 0.760, ddc-asgd 0.755, dbs-sgd 0.752), deterministic as below; on half of it
# (30000) they reached 0.818 to 0.838 at 563b651.
# Recipe: batch 32, lr 0.04, momentum 0.5 applied as given (optimizer.async_momentum
# "explicit": docs/RESULTS.md quotes these runs), cosine: with staleness ~2 (3 workers) the
# asynchrony already adds momentum of its own, and momentum 0.9 stays around 0.84.
# Deterministic: the parameter server takes pushes in worker order (--ps-round-robin,
# staleness 2 on every update after an epoch's first three), so the result does not
# depend on which worker the scheduler of a loaded machine lets push first.
. tests/lib.sh
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
if [ "${PACER_TEST_FULL:-0}" = 1 ]; then subset="" min=0.85; else subset=', "train_subset": 12000' min=0.70; fi
for a in asgd nsoftsync dc-asgd ddc-asgd dbs-sgd; do
    cat > "$TMP/$a.json" <<JSON
{"name": "acc-$a", "model": "lenet5", "dataset": {"name": "fashion-mnist"$subset},
 "algorithm": {"name": "$a", "n": 3}, "workers": 3, "batch_size": 32, "epochs": 2, "seed": 5, "log_every": 0,
 "optimizer": {"lr": 0.04, "momentum": 0.5, "async_momentum": "explicit", "lr_schedule": {"kind": "cosine"}}}
JSON
    $MPIRUN -np 4 $WORKER --spec "$TMP/$a.json" --summary "$TMP/$a.out" --ps-round-robin >"$TMP/$a.log" 2>&1 ||
        { cat "$TMP/$a.log"; fail "$a failed"; }
    at_least "$a test_accuracy (mean staleness $(json "$TMP/$a.out" .staleness.mean))" "$(json "$TMP/$a.out" .test_accuracy)" $min
done
