# emulate.schedule (issue 3): rank 1 becomes 3x slower from step 20 on, as interference
# that starts mid-job would. Checked so that no scheduling of a loaded machine can move
# the verdict:
#   - exact: the metrics records show factor 1 up to step 20 and 3 after (the record of
#     step s+1 is written after step s, which ran with the factor in force at s);
#   - a lower bound only load could not break: every later step of rank 1 lasted, on the
#     wall clock, at least its emulated wait (2/3 of its compute_s, a sleep can only run
#     long), so the slowdown was really served, not just recorded;
#   - what a user would see: rank 1's median compute time (emulated wait included) grows
#     between 2x and 4.5x (3x by construction; the base compute is CPU time, which load
#     barely moves).
. tests/lib.sh
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
cat > "$TMP/spec.json" <<JSON
{"name": "sched", "model": "lenet5", "dataset": {"name": "fashion-mnist", "train_subset": 7680, "test_subset": 200},
 "algorithm": {"name": "ssgd"}, "workers": 2, "batch_size": 64, "epochs": 1, "log_every": 0,
 "emulate": {"slowdown": [1, 1], "schedule": [{"step": 20, "rank": 1, "slowdown": 3}]}}
JSON
$MPIRUN -np 2 $WORKER --spec "$TMP/spec.json" --metrics "$TMP/m.jsonl" >/dev/null 2>&1 || fail "training failed"
jq -c 'select(.kind == "step" and .rank == 1)' "$TMP/m.jsonl" >"$TMP/r1.jsonl"
got=$(jq -s -c '[(map(select(.step <= 20) | .slowdown) | unique), (map(select(.step > 20) | .slowdown) | unique)]' "$TMP/r1.jsonl")
[ "$got" = "[[1],[3]]" ] || fail "rank 1's slowdown by step: $got, want [[1],[3]]"
echo "ok: rank 1's slowdown is 1 up to step 20 and 3 after"
short=$(jq -s -r '[range(1; length) as $i | .[$i - 1] as $p | .[$i] as $c | select($c.step > 21) |
    select($c.time - $p.time < $c.compute_s * 2 / 3 - 1e-3) | "step \($c.step): \($c.time - $p.time) s < wait \($c.compute_s * 2 / 3)"] |
    .[0:3] | join("; ")' "$TMP/r1.jsonl")
[ -z "$short" ] || fail "rank 1 did not serve its emulated wait: $short"
n=$(jq -s '[.[] | select(.step > 21)] | length' "$TMP/r1.jsonl")
at_least "rank 1 steps after the change that served their wait" "$n" 35
ratio=$(jq -s -r '(map(select(.step > 25) | .compute_s) | sort | .[length / 2 | floor]) / (map(select(.step <= 20) | .compute_s) | sort | .[length / 2 | floor])' "$TMP/r1.jsonl")
between "rank 1's median compute time after / before" "$ratio" 2 4.5
