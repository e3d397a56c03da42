# n-softsync with a split that leaves partial aggregates (4 workers, n = 2: updates of
# c = 2 gradients) on uneven workers must cross epoch ends: when the workers left are all
# waiting for an aggregate only parked workers could complete, the parameter server
# applies the partial one. Before that fix it stopped with "no receive posted".
. tests/lib.sh
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
cat > "$TMP/spec.json" <<JSON
{"name": "ns2", "model": "lenet5", "dataset": {"name": "fashion-mnist", "train_subset": 3000, "test_subset": 200},
 "algorithm": {"name": "nsoftsync", "n": 2}, "workers": 4, "batch_size": 32, "epochs": 3, "seed": 5, "log_every": 0,
 "optimizer": {"lr": 0.04, "momentum": 0.5}, "emulate": {"slowdown": [1, 1, 2, 4]}}
JSON
$MPIRUN -np 5 $WORKER --spec "$TMP/spec.json" --summary "$TMP/s.json" >"$TMP/log" 2>&1 || { cat "$TMP/log"; fail "nsoftsync n=2 failed"; }
[ "$(json "$TMP/s.json" .epochs)" = 3 ] && grep -q "epoch 3/3 done" "$TMP/log" || fail "did not finish 3 epochs"
echo "ok: 3 epochs, $(json "$TMP/s.json" .parameter_server.updates) updates"
