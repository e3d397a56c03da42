# Training throughput counts every sample once (issue 11). The same 2-epoch spec (960
# samples, batch 32 per worker) runs as sgd, ssgd on 2 ranks, and asgd with 1 and 2
# workers; every run trained exactly 2 x 960 samples, so train_samples must be 1920 in
# each (the parameter server reports its updates, never samples, or asgd would read
# 3840), train_samples_per_s must be train_samples / train_s, and the PS's per_rank entry
# must carry updates (60 for one worker: one per push) and no samples. These are exact
# checks, not timings: the throughput comparison of sgd and 1-worker asgd is
# bench/one_worker.sh. The summary's train_loss is measured on the same fixed training
# subset in every run: asgd with one worker computes exactly sgd's weights, so the two
# train_loss values must be equal.
. tests/lib.sh
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
run() {   # run NAME ALGORITHM WORKERS PROCESSES
    cat > "$TMP/$1.json" <<JSON
{"name": "tp-$1", "model": "lenet5", "dataset": {"name": "fashion-mnist", "train_subset": 960, "test_subset": 200},
 "algorithm": {"name": "$2"}, "workers": $3, "batch_size": 32, "epochs": 2, "seed": 3, "log_every": 0}
JSON
    if [ "$4" = 1 ]; then $WORKER --spec "$TMP/$1.json" --summary "$TMP/$1.out" >"$TMP/$1.log" 2>&1
    else $MPIRUN -np "$4" $WORKER --spec "$TMP/$1.json" --summary "$TMP/$1.out" >"$TMP/$1.log" 2>&1; fi \
        || { cat "$TMP/$1.log"; fail "$1 failed"; }
    got=$(jq -r '.train_samples' "$TMP/$1.out")
    [ "$got" = 1920 ] || fail "$1: train_samples = $got, want 1920"
    jq -e '(.train_samples_per_s * .train_s - .train_samples | fabs) < 1e-6 * .train_samples' "$TMP/$1.out" >/dev/null \
        || fail "$1: train_samples_per_s x train_s != train_samples"
    [ "$(jq -r '.train_loss_samples' "$TMP/$1.out")" = 960 ] || fail "$1: train_loss is not over the 960 training samples"
    echo "ok: $1 trained $got samples, $(jq -r '.train_samples_per_s | floor' "$TMP/$1.out") samples/s"
}
run sgd sgd 1 1
run ssgd ssgd 2 2
run asgd1 asgd 1 2
run asgd2 asgd 2 3
ps=$(jq -c '.per_rank[0] | [.role, .updates, has("samples")]' "$TMP/asgd1.out")
[ "$ps" = '["ps",60,false]' ] || fail "the PS's per_rank entry is $ps, want [\"ps\",60,false]"
echo "ok: the PS reports its updates: $ps"
a=$(jq -r .train_loss "$TMP/sgd.out") b=$(jq -r .train_loss "$TMP/asgd1.out")
[ "$a" = "$b" ] || fail "train_loss of sgd ($a) and 1-worker asgd ($b) differ"
echo "ok: sgd and 1-worker asgd: train_loss $a on the fixed subset (running mean $(jq -r .train_loss_running "$TMP/sgd.out"))"
