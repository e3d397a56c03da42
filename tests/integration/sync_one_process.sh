# Every synchronous algorithm runs a workers: 1 spec as one process without mpirun, as
# sgd does (issue 11; ssgd used to abort inside MPI_Bcast before MPI_Init). The same spec
# then gives the same weights as under mpirun -np 1 (bit for bit: on one rank every
# collective is the identity), and ssgd's equal sgd's to float tolerance (ssgd scales the
# gradient by the batch and back).
. tests/lib.sh
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
spec() {   # NAME ALGORITHM
    cat > "$TMP/$1.json" <<JSON
{"name": "one", "model": "lenet5", "dataset": {"name": "fashion-mnist", "train_subset": 1600, "test_subset": 200},
 "algorithm": {"name": "$2", "k_steps": 3, "local_steps": 3, "group_size": 1}, "workers": 1, "batch_size": 32,
 "epochs": 1, "seed": 3, "log_every": 0, "optimizer": {"lr": 0.05, "momentum": 0.9, "weight_decay": 0.0005},
 "checkpoint": {"every_steps": 20, "dir": "$TMP/$1"}}
JSON
}
spec sgd sgd
$WORKER --spec "$TMP/sgd.json" --stop-after-steps 20 >"$TMP/sgd.log" 2>&1 || { cat "$TMP/sgd.log"; fail "sgd failed"; }
for a in ssgd hier-bsp hpsgd local-sgd; do
    spec "$a" "$a"
    $WORKER --spec "$TMP/$a.json" --summary "$TMP/$a.out" >"$TMP/$a.log" 2>&1 \
        || { cat "$TMP/$a.log"; fail "$a with workers: 1 failed as one process"; }
    echo "ok: $a ran as one process: test_accuracy $(jq .test_accuracy "$TMP/$a.out")"
    case $a in hier-bsp|local-sgd)
        # Each step records the steps since the last average: 0, 1, 2 with k = H = 3, in
        # one process too, where the average itself is the identity.
        st=$(jq -c '[.staleness.max, .staleness.mean]' "$TMP/$a.out")
        [ "$(jq '.staleness.max' "$TMP/$a.out")" = 2 ] || fail "$a: staleness [max, mean] $st in one process, want max 2"
        echo "ok: $a: staleness [max, mean] $st";;
    esac
    spec "$a-one" "$a"
    $WORKER --spec "$TMP/$a-one.json" --stop-after-steps 20 >"$TMP/$a-one.log" 2>&1 || { cat "$TMP/$a-one.log"; fail "$a (one process, 20 steps) failed"; }
    spec "$a-mpi" "$a"
    $MPIRUN -np 1 $WORKER --spec "$TMP/$a-mpi.json" --stop-after-steps 20 >"$TMP/$a-mpi.log" 2>&1 || { cat "$TMP/$a-mpi.log"; fail "$a (mpirun -np 1) failed"; }
    $BUILD/tools/ckpt_diff "$TMP/$a-one/one.ckpt" "$TMP/$a-mpi/one.ckpt" 0 || fail "$a: one process and mpirun -np 1 differ"
    echo "ok: $a: one process = mpirun -np 1 after 20 steps"
done
$BUILD/tools/ckpt_diff "$TMP/ssgd-one/one.ckpt" "$TMP/sgd/one.ckpt" 1e-5 || fail "ssgd (one process) and sgd differ"
echo "ok: ssgd with one worker = sgd"
