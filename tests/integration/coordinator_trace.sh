# The time breakdown and the timeline through a real coordinator (issue 15): while a
# 2-rank ssgd job runs, GET /metrics exports pacer_rank_phase_seconds_total{job, rank,
# phase} and pacer_rank_step_seconds_total for both ranks (the job is far longer than the
# test, so no machine finishes it before /metrics is read; it is cancelled then); once it
# has ended,
# GET /api/v1/jobs/{id}/trace?steps=N is Chrome trace JSON with one track per rank, at
# most N steps per track and no overlapping slices, with the batch-plan changes as
# instant events; steps outside 1..1000 or not a number is a 400 naming "steps", an
# unknown job a 404; and `pacer trace ID -o FILE` saves the same document.
. tests/integration/coordinator_lib.inc
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
command -v curl >/dev/null || skip "curl not installed (make deps)"
base_url() { grep -o 'REST API and dashboard on http://[0-9.:]*' "$TMP/coord.log" | tail -1 | sed 's/.* on //'; }
start_coord --listen 127.0.0.1:0
BASE=$(base_url)
[ -n "$BASE" ] || fail "no REST API address in the coordinator's log"

cat >"$TMP/t.json" <<JSON
{"name": "traced", "model": "lenet5", "workers": 2,
 "algorithm": {"name": "ssgd", "dynamic_batch": true, "replan_steps": 8},
 "dataset": {"name": "fashion-mnist", "train_subset": 2048, "test_subset": 200},
 "batch_size": 32, "epochs": 200, "seed": 7, "log_every": 0, "emulate": {"slowdown": [2, 1]}}
JSON
id=$(submit "$TMP/t.json")
has_phases() {
    curl -s "$BASE/metrics" >"$TMP/prom.txt" &&
    grep -q "^pacer_rank_phase_seconds_total{job=\"$id\",rank=\"1\",phase=\"compute\"} " "$TMP/prom.txt" &&
    grep -q "^pacer_rank_step_seconds_total{job=\"$id\",rank=\"0\"} " "$TMP/prom.txt"
}
await 90 "the breakdown of $id in /metrics" has_phases
grep -q '^# TYPE pacer_rank_phase_seconds_total counter$' "$TMP/prom.txt" || fail "pacer_rank_phase_seconds_total is not a counter"
for ph in data compute comm wait optimizer emulated other; do
    grep -q "^pacer_rank_phase_seconds_total{job=\"$id\",rank=\"0\",phase=\"$ph\"} " "$TMP/prom.txt" ||
        fail "/metrics lacks rank 0's $ph seconds"
done
echo "ok: /metrics exports the per-rank phase counters of running job $id"
# At least 20 steps per rank for the trace window below (2 workers x 32 of 2048: 32 steps
# an epoch), then the job is cancelled.
await 120 "an epoch of $id" grep -q 'epoch 1/200 done' "$STATE/jobs/$id/log"
# Issue 29: rank 0 evaluated the epoch and broadcast the result; only rank 0 measured it,
# so only rank 0 exports a test accuracy (rank 1's series is absent, not a copy or a 0).
has_accuracy() { curl -s "$BASE/metrics" >"$TMP/prom.txt" && grep -q "^pacer_rank_test_accuracy{job=\"$id\",rank=\"0\"} 0[.]" "$TMP/prom.txt"; }
await 30 "rank 0's test accuracy in /metrics" has_accuracy
grep "^pacer_rank_test_accuracy{job=\"$id\",rank=\"1\"}" "$TMP/prom.txt" &&
    fail "/metrics exports a test accuracy for rank 1, which evaluated nothing"
echo "ok: /metrics: rank 0's test accuracy, none for rank 1"
cli cancel "$id" >/dev/null || fail "cancel $id"
await 60 "$id CANCELLED" is_state "$id" CANCELLED

code=$(curl -s -o "$TMP/trace.json" -w '%{http_code}' "$BASE/api/v1/jobs/$id/trace?steps=20")
[ "$code" = 200 ] || fail "trace: HTTP $code: $(cat "$TMP/trace.json")"
jq -e '.traceEvents | type == "array"' "$TMP/trace.json" >/dev/null || fail "trace: no traceEvents"
tracks=$(jq -c '[.traceEvents[] | select(.ph == "X") | .tid] | unique' "$TMP/trace.json")
[ "$tracks" = "[0,1]" ] || fail "trace: slice tracks $tracks, want [0,1]"
named=$(jq -c '[.traceEvents[] | select(.ph == "M" and .name == "thread_name") | .tid] | unique' "$TMP/trace.json")
[ "$named" = "[0,1]" ] || fail "trace: named tracks $named, want [0,1]"
steps=$(jq -c '[.traceEvents[] | select(.ph == "X")] | group_by(.tid) | map(map(.args.step) | unique | length)' "$TMP/trace.json")
[ "$steps" = "[20,20]" ] || fail "trace?steps=20: steps per track $steps, want [20,20]"
overlaps=$(jq '[.traceEvents[] | select(.ph == "X")] | group_by(.tid) | map(sort_by(.ts) | [range(1; length) as $i | select(.[$i].ts < .[$i - 1].ts + .[$i - 1].dur - 0.001)] | length) | add' "$TMP/trace.json")
[ "$overlaps" = 0 ] || fail "trace: $overlaps overlapping slices"
echo "ok: trace?steps=20 of $id: tracks $tracks, $steps steps, no overlapping slices"
curl -s "$BASE/api/v1/jobs/$id/trace?steps=1000" >"$TMP/all.json"
plans=$(jq '[.traceEvents[] | select(.ph == "i" and .name == "batch plan")] | length' "$TMP/all.json")
[ "$plans" -gt 0 ] || fail "trace: no batch-plan instant events in a job that re-plans every 8 steps"
echo "ok: the whole job's trace has $plans batch-plan instant events"

for bad in 0 1001 abc -3; do
    code=$(curl -s -o "$TMP/p.json" -w '%{http_code}' "$BASE/api/v1/jobs/$id/trace?steps=$bad")
    [ "$code" = 400 ] && jq -e '.parameter == "steps" and (.detail | test("steps"))' "$TMP/p.json" >/dev/null ||
        fail "trace?steps=$bad: HTTP $code $(cat "$TMP/p.json"), want a 400 naming steps"
done
code=$(curl -s -o "$TMP/p.json" -w '%{http_code}' "$BASE/api/v1/jobs/j-999999/trace")
[ "$code" = 404 ] || fail "trace of an unknown job: HTTP $code"
echo "ok: steps 0, 1001, abc, -3 are 400s naming steps; an unknown job is a 404"

if [ -x "$BUILD/pacer" ]; then
    "$BUILD/pacer" --url "$BASE" trace "$id" -o "$TMP/cli.json" 2>"$TMP/cli.err" || fail "pacer trace: $(cat "$TMP/cli.err")"
    [ "$(jq -c '[.traceEvents[] | select(.ph == "X") | .tid] | unique' "$TMP/cli.json")" = "[0,1]" ] ||
        fail "pacer trace wrote something else"
    echo "ok: pacer trace $id -o FILE saved the trace"
fi
stop_coord
echo passed
