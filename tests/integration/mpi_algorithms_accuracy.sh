# hpsgd, hier-bsp and local-sgd end close to ssgd's test accuracy on LeNet-5 /
# Fashion-MNIST after the same number of epochs (issues 3 and 11): 4 ranks x batch 32,
# 3 epochs, momentum 0.9, lr 0.04 with a cosine schedule. hpsgd must be within 1 point
# (its merge moves the model as far per step as ssgd in steady state; it used to lag by
# 7 points at momentum 0.9), hier-bsp and local-sgd within 1.5.
# ssgd, hier-bsp and local-sgd are deterministic for a seed; hpsgd's round lengths follow
# the allreduce's timing, so its accuracy varies a little from run to run, which the
# margin covers (measured 0.8870 against ssgd's 0.8920 on the loaded 2-core machine).
. tests/lib.sh
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
acc() {
    cat > "$TMP/$1.json" <<JSON
{"name": "acc-$1", "model": "lenet5", "dataset": {"name": "fashion-mnist"},
 "algorithm": {"name": "$1", "group_size": 2, "k_steps": 4, "local_steps": 4}, "workers": 4, "batch_size": 32,
 "epochs": 3, "seed": 5, "log_every": 0, "optimizer": {"lr": 0.04, "momentum": 0.9, "lr_schedule": {"kind": "cosine"}}}
JSON
    $MPIRUN -np 4 $WORKER --spec "$TMP/$1.json" --summary "$TMP/$1.out" >"$TMP/$1.log" 2>&1 || { cat "$TMP/$1.log"; fail "$1 failed"; }
    json "$TMP/$1.out" .test_accuracy
}
base=$(acc ssgd)
echo "ssgd test_accuracy $base"
for a in hpsgd:0.01 hier-bsp:0.015 local-sgd:0.015; do
    got=$(acc ${a%%:*})
    awk -v a="$got" -v b="$base" -v m="${a#*:}" 'BEGIN { exit !(b - a <= m) }' \
        && echo "ok: ${a%%:*} test_accuracy $got (ssgd $base)" \
        || fail "${a%%:*} test_accuracy $got is more than ${a#*:} below ssgd's $base"
done
