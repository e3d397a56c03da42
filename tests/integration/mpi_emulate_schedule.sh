# emulate.schedule (issue 3): rank 1 becomes 3x slower from step 20 on, as interference
# that starts mid-job would. The metrics records show the factor change at that step, and
# rank 1's compute time (emulated wait included) rises about threefold.
. tests/lib.sh
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
cat > "$TMP/spec.json" <<JSON
{"name": "sched", "model": "lenet5", "dataset": {"name": "fashion-mnist", "train_subset": 7680, "test_subset": 200},
 "algorithm": {"name": "ssgd"}, "workers": 2, "batch_size": 64, "epochs": 1, "log_every": 0,
 "emulate": {"slowdown": [1, 1], "schedule": [{"step": 20, "rank": 1, "slowdown": 3}]}}
JSON
$MPIRUN -np 2 $WORKER --spec "$TMP/spec.json" --metrics "$TMP/m.jsonl" >/dev/null 2>&1 || fail "training failed"
# The record of step s+1 is written after step s, which ran with the factor in force at s.
got=$(jq -s -c '[.[] | select(.kind == "step" and .rank == 1)] | [(map(select(.step <= 20) | .slowdown) | unique), (map(select(.step > 20) | .slowdown) | unique)]' "$TMP/m.jsonl")
[ "$got" = "[[1],[3]]" ] || fail "rank 1's slowdown by step: $got, want [[1],[3]]"
echo "ok: rank 1's slowdown is 1 up to step 20 and 3 after"
ratio=$(jq -s -r '[.[] | select(.kind == "step" and .rank == 1)] | (map(select(.step > 25) | .compute_s) | sort | .[length / 2 | floor]) / (map(select(.step <= 20) | .compute_s) | sort | .[length / 2 | floor])' "$TMP/m.jsonl")
awk -v r="$ratio" 'BEGIN { exit !(r > 2.4 && r < 3.6) }' || fail "rank 1's compute time grew ${ratio}x, want about 3x"
echo "ok: rank 1's median compute time grew ${ratio}x"
