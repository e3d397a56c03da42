# Dynamic batching for ssgd (issues 3 and 11): 4 ranks with emulated slowdowns
# [16, 16, 32, 64], global batch 256, re-plan every 20 steps. The plan must reach batches
# within 10% of the ideal split (256 x (1/f_i) / sum(1/f_j) = 93.1, 93.1, 46.5, 23.3) in
# at most 3 re-plans, and afterwards the ranks' wall-clock step compute times (emulated
# wait included) must be within 20% of each other (medians per rank).
# Why it holds on a loaded 2-core machine: the profile asks for 0.17 cores (4 ranks, sum
# of 1/f), so each rank computes its undisturbed cost u and then sleeps to f x u; u is
# the smallest thread CPU time measured for the batch size (worker/train.c), which core
# sharing does not inflate, and unless contention stretches a rank's real compute past
# 16 x u the step lasts f x u whatever the scheduler does. With factors [1, 1, 2, 4] the
# profile asked for 2.75 cores: the f = 1 ranks' speeds were whatever share of the cores
# they got, and the plan chased that (103 80 52 21 on a loaded machine). With [8, 8, 16,
# 32] a clean-clone run beside three other sessions' work (load 10-14) failed once the
# kernels had become faster (issue 43, 44: a smaller u, so 8 x u within a loaded core's
# reach): plans 96 84 52 24 and then rank 3 at 27 against 23.3.
. tests/lib.sh
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
cat > "$TMP/spec.json" <<JSON
{"name": "dyn", "model": "lenet5", "dataset": {"name": "fashion-mnist", "train_subset": 30000, "test_subset": 1000},
 "algorithm": {"name": "ssgd", "dynamic_batch": true, "replan_steps": 20}, "workers": 4, "batch_size": 64,
 "epochs": 1, "seed": 3, "log_every": 0, "optimizer": {"lr": 0.05, "momentum": 0.9},
 "emulate": {"slowdown": [16, 16, 32, 64]}}
JSON
$MPIRUN -np 4 $WORKER --spec "$TMP/spec.json" --metrics "$TMP/m.jsonl" --summary "$TMP/s.json" || fail "training failed"
jq -e '.emulation.faithful' "$TMP/s.json" >/dev/null || fail "emulation $(jq -c .emulation "$TMP/s.json") is not faithful"
# First plan version whose batches are all within 10% of the ideal split.
reached=$(jq -s -r '
  [1, 1, 0.5, 0.25] as $v | ($v | add) as $t | [$v[] * 256 / $t] as $ideal |
  [ .[] | select(.kind == "step") ] | group_by(.plan_version) |
  map({v: .[0].plan_version, b: (group_by(.rank) | map(.[0].batch))}) |
  map(select(.b | length == 4)) |
  map(select([range(0; 4) as $i | ((.b[$i] - $ideal[$i]) / $ideal[$i] | if . < 0 then -. else . end) <= 0.10] | all)) |
  (.[0].v // -1)' "$TMP/m.jsonl")
echo "plan within 10% of ideal at version $reached"
[ "$reached" -ge 1 ] && [ "$reached" -le 3 ] || fail "plan reached the ideal split at version $reached (want 1..3)"
# Step-time balance over the steps run under that plan or later (medians per rank of the
# wall-clock compute time).
ratio=$(jq -s -r --argjson v "$reached" '
  [ .[] | select(.kind == "step" and .plan_version >= $v) ] | group_by(.rank) |
  map(map(.compute_s) | sort | .[length / 2 | floor]) as $m |
  ($m | max) / ($m | min)' "$TMP/m.jsonl")
jq -s -r '[ .[] | select(.kind == "step") ] | group_by(.rank) | map("rank \(.[0].rank): batch \(.[-1].batch)") | join(", ")' "$TMP/m.jsonl"
at_most() { awk -v v="$2" -v m="$3" 'BEGIN { exit !(v <= m) }' && echo "ok: $1 = $2 (<= $3)" || fail "$1 = $2, want <= $3"; }
at_most "max/min median step compute time" "$ratio" 1.2
