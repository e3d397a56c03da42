# The goodput planner and the gradient noise scale (issue 28) on a simulated cluster
# (deterministic: the verdicts are the same on any machine, loaded or not).
#  1. ssgd with algorithm.goodput on 4 workers at speeds 1, 1, 1/2, 1/4 behind 0.1 Gbit/s
#     links, B0 = 4 x 8 = 32: the collective dominates a step at B0, so the planner grows
#     the global batch as the measured noise scale grows, which it does as the loss
#     falls; the split follows the speeds; every worker takes part; progress counts the
#     epochs; evaluations every 50 steps are records of kind "eval".
#  2. The same job with a reachable target accuracy stops early with time_to_target_s.
#  3. AdaptDL's equal-nodes model splits evenly; a node far too slow is left out, with
#     the reason in the summary and in pacer-sim's what-if lines.
#  4. Interrupted and resumed from its checkpoint, a goodput run finishes its epochs.
#  5. asgd reports the noise scale (the parameter server's pairs of pushes).
. tests/integration/sim_lib.inc
need_sim
need_fashion

base='{"workers": 4, "batch_size": 8, "epochs": 2, "seed": 1, "optimizer": {"lr": 0.02, "momentum": 0.9},
       "dataset": {"train_subset": 4000, "test_subset": 500}, "eval_every_steps": 50,
       "algorithm": {"name": "ssgd", "goodput": true, "replan_steps": 10},
       "simulate": {"slowdown": [1, 1, 2, 4], "bandwidth_gbps": 0.1, "latency_us": 50}}'
sim_spec "$TMP/grow.json" "$base"
sim_run grow --metrics "$TMP/grow.jsonl"
o=$TMP/grow.out
equals_num "base batch" "$(json "$o" .goodput.base_batch)" 32
need_number "final noise scale" "$(json "$o" .noise_scale)"
equals_num "nodes left out" "$(json "$o" '.goodput.nodes_left_out | length')" 0
# 2 epochs of 4000 / 32 = 125 steps at B0, in fewer, larger steps
at_least "progress (steps at B0)" "$(json "$o" .goodput.progress_steps)" 250
at_most "steps" "$(json "$o" .steps)" 249
# rank 0's steps, the first third against the last third: the global batch and the loss
# over all of them (the planner holds B0 until the noise scale is measured, 50 steps),
# the noise scale over those where it is known
jq -s '[.[] | select(.kind == "step" and .rank == 0)]' "$TMP/grow.jsonl" >"$TMP/all.json"
jq '[.[] | select(.noise_scale != null)]' "$TMP/all.json" >"$TMP/steps.json"
at_least "steps with a noise scale" "$(json "$TMP/steps.json" length)" 60
third() { json "$2" "(length / 3 | floor) as \$k | $1"; }
phi0=$(third '.[0:$k] | map(.noise_scale) | add / length' "$TMP/steps.json")
phi1=$(third '.[-$k:] | map(.noise_scale) | add / length' "$TMP/steps.json")
b0=$(third '.[0:$k] | map(.global_batch) | add / length' "$TMP/all.json")
b1=$(third '.[-$k:] | map(.global_batch) | add / length' "$TMP/all.json")
l0=$(third '.[0:$k] | map(.loss) | add / length' "$TMP/all.json")
l1=$(third '.[-$k:] | map(.loss) | add / length' "$TMP/all.json")
echo "first third: noise scale $phi0, global batch $b0, loss $l0; last third: $phi1, $b1, $l1"
cmp_num "$l1" "<" "$l0" || fail "the loss does not fall ($l0 -> $l1)"
ratio_at_least "noise scale grows" "$phi1" "$phi0" 2
ratio_at_least "global batch grows" "$b1" "$b0" 2
at_least "final global batch" "$(json "$o" .goodput.global_batch_final)" 64
# AdaScale: lr_scale = (B / B0) E(B), between 1 and B / B0
json "$TMP/steps.json" '.[-1] | (.lr_scale >= 1 and .lr_scale <= .global_batch / 32 + 1e-6)' | grep -qx true ||
    fail "lr_scale $(json "$TMP/steps.json" '.[-1].lr_scale') outside [1, B/B0]"
# the split follows the speeds (1 : 1 : 1/2 : 1/4) in the last plan
last=$(jq -s -c '[.[] | select(.kind == "step")] | (map(.plan_version) | max) as $v |
    [.[] | select(.plan_version == $v)] | group_by(.rank) | map(.[0].batch)' "$TMP/grow.jsonl")
echo "last plan: $last"
ratio_at_least "worker 0's batch over worker 3's" "$(echo "$last" | jq '.[0]')" "$(echo "$last" | jq '.[3]')" 3
# evaluations between epoch ends: every 50 steps, on every rank (rank 0's is the record)
at_least "eval records of rank 0" "$(jq -s '[.[] | select(.kind == "eval" and .rank == 0)] | length' "$TMP/grow.jsonl")" 2
[ "$(json "$o" 'has("time_to_target_s")')" = false ] || fail "time_to_target_s without a target_accuracy"

# 2. a target the run reaches: it stops there and says when
sim_spec "$TMP/target.json" "$base"
jq '.target_accuracy = 0.6 | .epochs = 5' "$TMP/target.json" >"$TMP/t.json" && mv "$TMP/t.json" "$TMP/target.json"
sim_run target
o=$TMP/target.out
need_number "time_to_target_s" "$(json "$o" .time_to_target_s)"
at_least "test accuracy at the stop" "$(json "$o" .test_accuracy)" 0.6
cmp_num "$(json "$o" .time_to_target_s)" "<=" "$(json "$o" .train_s)" || fail "time_to_target_s past train_s"
at_most "progress (stopped early)" "$(json "$o" .goodput.progress_steps)" 400
# an unreachable one: null, the whole run
jq '.target_accuracy = 0.99 | .epochs = 1' "$TMP/target.json" >"$TMP/miss.json"
sim_run miss
[ "$(json "$TMP/miss.out" .time_to_target_s)" = null ] || fail "time_to_target_s of a missed target: $(json "$TMP/miss.out" .time_to_target_s)"

# 3. AdaptDL's model: every worker, an even split
sim_spec "$TMP/equal.json" "$base"
jq '.algorithm.goodput_model = "equal" | .epochs = 1' "$TMP/equal.json" >"$TMP/e.json" && mv "$TMP/e.json" "$TMP/equal.json"
sim_run equal --metrics "$TMP/equal.jsonl"
spread=$(jq -s '[.[] | select(.kind == "step")] | group_by(.step) | map(map(.batch) | max - min) | max' "$TMP/equal.jsonl")
at_most "largest spread of one step's batches (equal model)" "$spread" 1
[ "$(json "$TMP/equal.out" .goodput.model)" = equal ] || fail "goodput.model is not equal"

# 3b. a node 100 times slower than the others with algorithm.min_batch 4: its smallest
# share makes it every step's straggler, so the planner leaves it out and says why
sim_spec "$TMP/slow.json" "$base"
jq '.epochs = 1 | .algorithm.min_batch = 4 | .simulate.slowdown = [1, 1, 1, 100]' "$TMP/slow.json" >"$TMP/s.json" &&
    mv "$TMP/s.json" "$TMP/slow.json"
sim_run slow --metrics "$TMP/slow.jsonl"
[ "$(json "$TMP/slow.out" '[.goodput.nodes_left_out[].worker] | join(",")')" = 3 ] ||
    fail "nodes left out: $(jq -c .goodput.nodes_left_out "$TMP/slow.out"), want worker 3"
json "$TMP/slow.out" '.goodput.nodes_left_out[0].reason' | grep -q "samples/s .* without it" ||
    fail "no reason for leaving worker 3 out: $(jq -c .goodput.nodes_left_out "$TMP/slow.out")"
grep -q "pacer-sim:   worker 3 left out: computes" "$TMP/slow.log" || fail "pacer-sim does not say worker 3 is left out"
at_least "rank 3's steps left out" "$(jq -s '[.[] | select(.kind == "step" and .rank == 3 and .left_out and .batch == 0)] | length' "$TMP/slow.jsonl")" 10

# 4. stopped at step 60 (a checkpoint every 20 steps), then resumed: the epochs finish
sim_spec "$TMP/ck.json" "$base"
jq --arg d "$TMP/ck" '.epochs = 1 | .checkpoint = {"every_steps": 20, "dir": $d}' "$TMP/ck.json" >"$TMP/c.json" &&
    mv "$TMP/c.json" "$TMP/ck.json"
sim_run ck -- --stop-after-steps 60
sim_run ck -- --resume
grep -q "resumed from .* at step 60" "$TMP/ck.log" || { tail "$TMP/ck.log"; fail "did not resume at step 60"; }
at_least "resumed progress" "$(json "$TMP/ck.out" .goodput.progress_steps)" 125

# 5. the parameter server's noise scale
sim_spec "$TMP/asgd.json" '{"epochs": 1, "dataset": {"train_subset": 4000}, "batch_size": 16, "optimizer": {"lr": 0.02}, "algorithm": {"name": "asgd"}}'
sim_run asgd --metrics "$TMP/asgd.jsonl"
need_number "asgd noise scale" "$(json "$TMP/asgd.out" .noise_scale)"
need_number "the parameter server's last record's noise scale" \
    "$(jq -s '[.[] | select(.role == "ps" and .kind == "step")] | .[-1].noise_scale' "$TMP/asgd.jsonl")"
[ "$(json "$TMP/asgd.out" 'has("goodput")')" = false ] || fail "a goodput object without the planner"
echo "ok"
