# Step time with and without --redis reporting (issue 5; target: under 2% overhead).
# A real redis-server on a unix socket; LeNet-5, one process, alternating runs, medians.
. bench/lib.sh
RUNS=${RUNS:-3}
redis-server --port 0 --unixsocket "$TMP/r.sock" --save '' --appendonly no --daemonize no >/dev/null 2>&1 &
rpid=$!
trap 'kill $rpid 2>/dev/null; rm -rf "$TMP"' EXIT
i=0; until redis-cli -s "$TMP/r.sock" ping >/dev/null 2>&1; do i=$((i+1)); [ $i -gt 100 ] && exit 1; sleep 0.05; done
cat > "$TMP/spec.json" <<JSON
{"name": "ovh", "model": "lenet5", "dataset": {"name": "fashion-mnist", "train_subset": 30720, "test_subset": 500},
 "epochs": 1, "batch_size": 64, "log_every": 0}
JSON
for i in $(seq "$RUNS"); do
    $WORKER --spec "$TMP/spec.json" --summary "$TMP/a$i.json" >/dev/null 2>&1 || exit 1
    $WORKER --spec "$TMP/spec.json" --summary "$TMP/b$i.json" --redis "unix://$TMP/r.sock" --job bench >/dev/null 2>&1 || exit 1
done
a=$(for i in $(seq "$RUNS"); do jq .train_samples_per_s "$TMP/a$i.json"; done | median)
b=$(for i in $(seq "$RUNS"); do jq .train_samples_per_s "$TMP/b$i.json"; done | median)
n=$(redis-cli -s "$TMP/r.sock" xlen pacer:job:bench:metrics)
md ""
md "### Metrics to Redis (\`sh bench/redis_overhead.sh\`)"
md ""
md "LeNet-5, one process, median of $RUNS: $(printf %.0f "$a") samples/s standalone, $(printf %.0f "$b") with --redis"
md "(every step's record sent; $n stream entries after the runs): overhead **$(awk -v a="$a" -v b="$b" 'BEGIN{printf "%.1f", 100*(a-b)/a}')%** (target < 2%)."
