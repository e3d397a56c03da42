# The time breakdown and the worker's timeline (issue 15), on real MPI jobs: ssgd with an
# emulated slow rank and dynamic batching, and asgd (a parameter server and two workers).
# Every step record's phases add up to its step_s within 2% (the marks tile the step, so
# this holds exactly up to the records' 6-digit rounding); the "other" bucket, the time
# no mark claims, stays a small part of each rank's steps; the emulated slowdown lands in
# "emulated" on the slow rank only; the summary carries the same totals. --trace writes
# one Chrome trace with one track per rank whose slices do not overlap, and the batch-plan
# changes the records flag appear in it as instant events. Nothing here asserts a speed.
. tests/lib.sh
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"

# Per record: |sum(phases) - step_s| <= max(2% of step_s, 10 us of rounding).
check_sums() {
    bad=$(jq -s -r '[.[] | select(.kind == "step")] | map(select(((.phases | add) - .step_s | fabs) > ([0.02 * .step_s, 0.00001] | max))) | length' "$1")
    n=$(jq -s -r '[.[] | select(.kind == "step" and (.phases | type) == "object")] | length' "$1")
    [ "$n" -ge "$2" ] || fail "$3: $n step records with a breakdown, want >= $2"
    [ "$bad" = 0 ] || fail "$3: $bad of $n step records whose phases do not add up to step_s: $(jq -s -c '[.[] | select(.kind == "step")] | map(select(((.phases | add) - .step_s | fabs) > ([0.02 * .step_s, 0.00001] | max)))[0]' "$1")"
    # "other" is bookkeeping between the marks: under 5% of each rank's step time.
    jq -s -r '[.[] | select(.kind == "step")] | group_by(.rank)[] | [.[0].rank, (map(.phases.other) | add), (map(.step_s) | add)] | @tsv' "$1" |
    while read -r rank other wall; do
        awk -v o="$other" -v w="$wall" 'BEGIN { exit !(o <= 0.05 * w) }' || fail "$3: rank $rank: other $other s of $wall s"
    done || exit 1
    echo "ok: $3: the phases of all $n step records add up to step_s; other < 5% per rank"
}

# One track per rank, slices in order without overlap.
check_trace() {
    jq -e '.traceEvents | type == "array"' "$1" >/dev/null || fail "$3: the trace has no traceEvents array"
    tracks=$(jq -c '[.traceEvents[] | select(.ph == "X") | .tid] | unique' "$1")
    [ "$tracks" = "$2" ] || fail "$3: slice tracks $tracks, want $2"
    named=$(jq -c '[.traceEvents[] | select(.ph == "M" and .name == "thread_name") | .tid] | unique' "$1")
    [ "$named" = "$2" ] || fail "$3: named tracks $named, want $2"
    overlaps=$(jq '[.traceEvents[] | select(.ph == "X")] | group_by(.tid) | map(sort_by(.ts) | [range(1; length) as $i | select(.[$i].ts < .[$i - 1].ts + .[$i - 1].dur - 0.001)] | length) | add' "$1")
    [ "$overlaps" = 0 ] || fail "$3: $overlaps overlapping slices"
    echo "ok: $3: the trace has tracks $tracks, slices without overlap"
}

cat > "$TMP/ssgd.json" <<JSON
{"name": "tb-ssgd", "model": "lenet5", "dataset": {"name": "fashion-mnist", "train_subset": 3200, "test_subset": 200},
 "algorithm": {"name": "ssgd", "dynamic_batch": true, "replan_steps": 10}, "workers": 2, "batch_size": 32,
 "epochs": 1, "log_every": 0, "emulate": {"slowdown": [3, 1]}}
JSON
$MPIRUN -np 2 $WORKER --spec "$TMP/ssgd.json" --metrics "$TMP/ssgd.jsonl" --summary "$TMP/ssgd.sum" \
    --trace "$TMP/ssgd.trace" >"$TMP/ssgd.log" 2>&1 || { tail "$TMP/ssgd.log"; fail "ssgd failed"; }
check_sums "$TMP/ssgd.jsonl" 80 ssgd
emu=$(jq -s -r '[.[] | select(.kind == "step")] | group_by(.rank) | map(map(.phases.emulated) | add) | @tsv' "$TMP/ssgd.jsonl")
set -- $emu
awk -v a="$1" -v b="$2" 'BEGIN { exit !(a > 0.01 && b == 0) }' || fail "ssgd: emulated seconds by rank: $emu, want > 0 on rank 0 only"
echo "ok: ssgd: the emulated slowdown is booked on rank 0 only ($emu)"
jq -e '[.per_rank[] | .phases | (.data + .compute + .comm + .compress + .wait + .optimizer + .emulated + .other) - .step_s | fabs < 0.001] | all and length == 2' \
    "$TMP/ssgd.sum" >/dev/null || fail "ssgd: the summary's per-rank phase totals do not add up"
echo "ok: ssgd: the summary's per_rank phases add up to step_s"
check_trace "$TMP/ssgd.trace" "[0,1]" ssgd
plans=$(jq -s '[.[] | select(.kind == "step" and ((.events // []) | index("plan")))] | length' "$TMP/ssgd.jsonl")
instants=$(jq '[.traceEvents[] | select(.ph == "i" and (.name | test("batch plan")))] | length' "$TMP/ssgd.trace")
[ "$plans" -gt 0 ] && [ "$plans" = "$instants" ] || fail "ssgd: $plans records flag a plan change, the trace has $instants"
echo "ok: ssgd: $plans batch-plan changes, in the records and as instant events"

cat > "$TMP/asgd.json" <<JSON
{"name": "tb-asgd", "model": "lenet5", "dataset": {"name": "fashion-mnist", "train_subset": 2560, "test_subset": 200},
 "algorithm": {"name": "asgd"}, "workers": 2, "batch_size": 32, "epochs": 2, "log_every": 0}
JSON
$MPIRUN -np 3 $WORKER --spec "$TMP/asgd.json" --metrics "$TMP/asgd.jsonl" --summary "$TMP/asgd.sum" \
    --trace "$TMP/asgd.trace" >"$TMP/asgd.log" 2>&1 || { tail "$TMP/asgd.log"; fail "asgd failed"; }
check_sums "$TMP/asgd.jsonl" 150 asgd
# The parameter server waits for pushes and applies them; the workers compute and push.
jq -e '.per_rank[0].phases | .wait > 0 and .optimizer > 0 and .compute == 0' "$TMP/asgd.sum" >/dev/null ||
    fail "asgd: the PS's phases: $(jq -c '.per_rank[0].phases' "$TMP/asgd.sum")"
jq -e '[.per_rank[1:][] | .phases | .compute > 0 and .comm > 0 and .data > 0] | all' "$TMP/asgd.sum" >/dev/null ||
    fail "asgd: a worker's phases: $(jq -c '[.per_rank[].phases]' "$TMP/asgd.sum")"
echo "ok: asgd: the PS's time is wait, optimizer and replies; the workers' data, compute and comm"
check_trace "$TMP/asgd.trace" "[0,1,2]" asgd
echo "passed"
