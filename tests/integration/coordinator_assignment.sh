# The coordinator's batch assignment reaches the workers (issue 5): a 2-worker ssgd job
# with dynamic batching and emulated slowdowns [8, 24] reports to Redis; the coordinator
# plans from the node profiles and writes pacer:job:ID:assignment; rank 0 applies it at
# its next re-plan point. The slow worker's batch shrinks (ideal 96 / 32 of 128) and the
# wall-clock step times converge: at the even split the slow rank's steps last 3 times the
# fast one's (24 / 8); the plan must take away most of that, to within 1.5 (medians of the
# last 40 steps). A plan that went only part of the way ([80, 48]: 1.8) fails. Closer than
# that is not the planner's to promise on a loaded machine: each rank's step is f x u(b),
# u the cheapest thread CPU time measured at that batch size, and on a virtual machine
# whose two vCPUs share a physical core a busy sibling inflates thread CPU time too, so
# u(96) and u(32) can carry different inflations (of 11 runs beside two busy loops, the 5
# measured ended within 3.3%, one at 1.32 with the ideal batches [96, 32]; a CI run beside
# the test lanes at 1.28 with [99, 29]). The profile asks for a sixth
# of a core (1/8 + 1/24), so the load does not otherwise move the steps
# (see mpi_dynamic_batch.sh).
. tests/integration/coordinator_lib.inc
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
start_coord
cat > "$TMP/a.json" <<JSON
{"name": "assign", "model": "lenet5", "dataset": {"name": "fashion-mnist", "train_subset": 25600, "test_subset": 500},
 "algorithm": {"name": "ssgd", "dynamic_batch": true, "replan_steps": 10}, "workers": 2,
 "optimizer": {"lr": 0.02, "momentum": 0.9}, "batch_size": 64, "epochs": 1, "seed": 7, "log_every": 50,
 "emulate": {"slowdown": [8, 24]}}
JSON
id=$(submit "$TMP/a.json")
cli wait "$id" --timeout 120 || { tail -30 "$STATE/jobs/$id/log"; fail "job $id did not succeed"; }
cli nodes "$id" > "$TMP/nodes.json"
source=$(jq -r '.assignment.source // "none"' "$TMP/nodes.json")
batches=$(jq -c '.assignment.batches' "$TMP/nodes.json")
echo "assignment: $batches from $source"
[ "$source" = planner ] || [ "$source" = profile ] || fail "no coordinator assignment (source $source)"
cli metrics "$id" --limit 10000 | jq -c '.items[] | select(.kind == "step")' > "$TMP/steps.jsonl"
last=$(jq -s -c 'group_by(.rank) | map(.[-1].batch)' "$TMP/steps.jsonl")
echo "final batches per rank: $last"
jq -e -n --argjson b "$last" '$b[1] < $b[0] and $b[1] <= 48' >/dev/null || fail "the slow worker's batch did not shrink: $last"
medians=$(jq -s -c 'group_by(.rank) | map(.[-40:] | map(.compute_s) | sort | .[length / 2 | floor])' "$TMP/steps.jsonl")
ratio=$(jq -n -r --argjson m "$medians" '($m | max) / ($m | min)')
awk -v r="$ratio" 'BEGIN { exit !(r <= 1.5) }' || fail "step times did not converge: medians $medians s, max/min $ratio"
echo "ok: step-time ratio $ratio"
# Issue 29: rank 0 evaluates and broadcasts; its record alone carries the evaluation, so
# the history has one point for the epoch, not one per rank (and none from final records).
history_matches_log "$id"
grep -q "batch plan [0-9]* from the coordinator" "$STATE/jobs/$id/log" || fail "rank 0 never applied a coordinator plan"
echo "ok: $(grep -c "batch plan [0-9]* from the coordinator" "$STATE/jobs/$id/log") coordinator plans applied by rank 0"
stop_coord
