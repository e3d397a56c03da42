# emulate.schedule (issue 3): rank 1 becomes 3x slower from step 20 on, as interference
# that starts mid-job would. The metrics records show the factor change at that step, and
# rank 1's compute time (emulated wait included) rises about threefold.
# Both ranks start emulated 8x slower (24x for rank 1 after step 20): a step then lasts
# f times the rank's undisturbed cost (worker/train.c), which core sharing on a loaded
# machine does not move as long as it stays below 8x; a factor of 1 would compare an
# emulated step against a wall-clock one that contention inflates.
. tests/lib.sh
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
cat > "$TMP/spec.json" <<JSON
{"name": "sched", "model": "lenet5", "dataset": {"name": "fashion-mnist", "train_subset": 7680, "test_subset": 200},
 "algorithm": {"name": "ssgd"}, "workers": 2, "batch_size": 64, "epochs": 1, "log_every": 0,
 "emulate": {"slowdown": [8, 8], "schedule": [{"step": 20, "rank": 1, "slowdown": 24}]}}
JSON
$MPIRUN -np 2 $WORKER --spec "$TMP/spec.json" --metrics "$TMP/m.jsonl" >/dev/null 2>&1 || fail "training failed"
# The record of step s+1 is written after step s, which ran with the factor in force at s.
got=$(jq -s -c '[.[] | select(.kind == "step" and .rank == 1)] | [(map(select(.step <= 20) | .slowdown) | unique), (map(select(.step > 20) | .slowdown) | unique)]' "$TMP/m.jsonl")
[ "$got" = "[[8],[24]]" ] || fail "rank 1's slowdown by step: $got, want [[8],[24]]"
echo "ok: rank 1's slowdown is 8 up to step 20 and 24 after"
ratio=$(jq -s -r '[.[] | select(.kind == "step" and .rank == 1)] | (map(select(.step > 25) | .compute_s) | sort | .[length / 2 | floor]) / (map(select(.step <= 20) | .compute_s) | sort | .[length / 2 | floor])' "$TMP/m.jsonl")
awk -v r="$ratio" 'BEGIN { exit !(r > 2.4 && r < 3.6) }' || fail "rank 1's compute time grew ${ratio}x, want about 3x"
echo "ok: rank 1's median compute time grew ${ratio}x"
