# A worker refuses, with a logged reason, any batch plan that does not sum to the global
# batch or has a batch outside [min_batch, max_batch] (issue 11; common/planner.h's
# planner_check), so no plan can overrun the batch buffers sized for max_batch:
# --batch-plan at start-up (exit 2, one line), and the coordinator's assignment read from
# Redis mid-job (logged; the plan in force stays and the job goes on).
. tests/lib.sh
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
cat > "$TMP/one.json" <<JSON
{"name": "bp1", "model": "lenet5", "dataset": {"name": "fashion-mnist", "train_subset": 640, "test_subset": 100},
 "algorithm": {"name": "ssgd"}, "workers": 1, "batch_size": 32, "epochs": 1, "log_every": 0}
JSON
expect_error 2 "batch-plan: '100': batch 100 of worker 0 is outside \[1, 32\]" \
    $WORKER --spec "$TMP/one.json" --batch-plan 100
expect_error 2 "batch-plan: '32,32': it must be 1 comma-separated batch sizes" \
    $WORKER --spec "$TMP/one.json" --batch-plan 32,32
cat > "$TMP/two.json" <<JSON
{"name": "bp", "model": "lenet5", "dataset": {"name": "fashion-mnist", "train_subset": 6400, "test_subset": 100},
 "algorithm": {"name": "ssgd", "dynamic_batch": true, "replan_steps": 5, "min_batch": 8, "max_batch": 96},
 "workers": 2, "batch_size": 64, "epochs": 1, "log_every": 0}
JSON
expect_error 2 "batch-plan: '4,124': batch 4 of worker 0 is outside \[8, 96\]" \
    $MPIRUN -np 2 $WORKER --spec "$TMP/two.json" --batch-plan 4,124
expect_error 2 "batch-plan: '30,30': the 2 batches sum to 60, not to the global batch 128" \
    $MPIRUN -np 2 $WORKER --spec "$TMP/two.json" --batch-plan 30,30
expect_error 2 "batch-plan: '30,x': it must be 2 comma-separated batch sizes" \
    $MPIRUN -np 2 $WORKER --spec "$TMP/two.json" --batch-plan 30,x

command -v redis-server >/dev/null || skip "redis-server not installed (make deps): the Redis half did not run"
redis-server --port 0 --unixsocket "$TMP/redis.sock" --dir "$TMP" --save "" --appendonly no --daemonize no \
    --logfile "$TMP/redis.log" &
rpid=$!
trap 'kill $rpid 2>/dev/null; wait $rpid 2>/dev/null; rm -rf "$TMP"' EXIT
i=0
until redis-cli -s "$TMP/redis.sock" PING >/dev/null 2>&1; do
    i=$((i + 1)); [ $i -lt 100 ] || fail "redis-server did not start"; sleep 0.1
done
# An assignment outside the bounds, as a confused or hostile coordinator might write it.
redis-cli -s "$TMP/redis.sock" HSET pacer:job:bp:assignment version 1 batches '[4,124]' source test >/dev/null
$MPIRUN -np 2 $WORKER --spec "$TMP/two.json" --redis "unix://$TMP/redis.sock" --job bp --summary "$TMP/s.json" \
    >"$TMP/run.log" 2>&1 || { cat "$TMP/run.log"; fail "the job failed"; }
grep -q "batch plan from the coordinator refused: batch 4 of worker 0 is outside \[8, 96\]" "$TMP/run.log" \
    || { cat "$TMP/run.log"; fail "the bad assignment was not refused with a reason"; }
final=$(jq -c '[.per_rank[].batch_final]' "$TMP/s.json")
jq -e -n --argjson b "$final" '($b | add) == 128 and ($b | all(. >= 8 and . <= 96))' >/dev/null \
    || fail "final batches $final are not a valid plan"
echo "ok: the coordinator's [4,124] was refused and logged; the job ended with batches $final"
