# pacer-sched-sim (issue 46): the scheduling policies over a job trace in virtual time.
# Deterministic: two runs of each policy on the example trace print the same bytes and
# write the same per-job file; the summary's metrics are numbers. Every refusal of its
# outside inputs (the cluster file, the trace, the options) is one line naming the file,
# the line and the field; the hostile inputs are written here, at run time.
. tests/lib.sh
SIM=$BUILD/pacer-sched-sim
[ -x "$SIM" ] || fail "$SIM not built (make $SIM)"
CL=bench/sched/cluster48.json
TR=bench/sched/example-30.jsonl

for p in fifo fair agnostic hetero; do
    for i in 1 2; do
        "$SIM" --cluster $CL --trace $TR --policy $p --seed 3 --jobs-out "$TMP/$p-$i.jobs" >"$TMP/$p-$i.out" ||
            fail "$p: exit $?"
    done
    cmp "$TMP/$p-1.out" "$TMP/$p-2.out" || fail "$p: two runs printed different summaries"
    cmp "$TMP/$p-1.jobs" "$TMP/$p-2.jobs" || fail "$p: two runs wrote different per-job files"
    for k in avg_jct_s makespan_s p95_wait_s max_ftf_rho; do need_number "$p $k" "$(json "$TMP/$p-1.out" .$k)"; done
    [ "$(json "$TMP/$p-1.out" .policy)" = $p ] || fail "$p: the summary names another policy"
    [ "$(json "$TMP/$p-1.out" .jobs)" = 30 ] || fail "$p: not 30 jobs"
    [ "$(wc -l <"$TMP/$p-1.jobs")" = 30 ] || fail "$p: the per-job file has not 30 lines"
    # every job started and ended after it arrived, and held slots
    jq -e 'select(.start_s < .arrival_s or .end_s < .start_s or (.allocations | length) < 2)' "$TMP/$p-1.jobs" >/dev/null &&
        fail "$p: a job starts before it arrives, ends before it starts, or never held slots"
    echo "ok: $p: identical summaries and per-job files, avg JCT $(json "$TMP/$p-1.out" .avg_jct_s) s"
done

# Growth past the ask (--grow-past-ask 2: elastic jobs up to twice their workers on idle
# slots): deterministic too; some elastic job held more slots than it asks and at most
# twice them, and no job that is not elastic ever held more than its workers.
for i in 1 2; do
    "$SIM" --cluster $CL --trace $TR --policy hetero --grow-past-ask 2 --jobs-out "$TMP/grow-$i.jobs" >"$TMP/grow-$i.out" ||
        fail "grow: exit $?"
done
cmp "$TMP/grow-1.out" "$TMP/grow-2.out" && cmp "$TMP/grow-1.jobs" "$TMP/grow-2.jobs" ||
    fail "grow: two runs differ"
most() { # per job: id, elastic, workers, the most slots it held at once
    jq -r -n --slurpfile t $TR --slurpfile j "$1" '($t | map({(.id): .}) | add) as $in | $j[] |
        [.id, ($in[.id].elastic // false), $in[.id].workers, ([.allocations[].slots | [.[]] | add // 0] | max)] | @tsv'
}
most "$TMP/grow-1.jobs" >"$TMP/grow.tsv"
awk '$2 == "true" && $4 > $3 && $4 <= 2 * $3 { ok = 1 } END { exit !ok }' "$TMP/grow.tsv" ||
    fail "grow: no elastic job held more slots than it asks (or one held more than twice)"
awk '($2 != "true" && $4 > $3) || $4 > 2 * $3 { bad = 1 } END { exit bad }' "$TMP/grow.tsv" ||
    fail "grow: a job held more than it may: $(cat "$TMP/grow.tsv")"
most "$TMP/hetero-1.jobs" | awk '$4 > $3 { bad = 1 } END { exit bad }' ||
    fail "without --grow-past-ask a job held more slots than it asks"
echo "ok: grow: identical runs; $(awk '$4 > $3' "$TMP/grow.tsv" | wc -l) elastic jobs ran past their ask, avg JCT $(json "$TMP/grow-1.out" .avg_jct_s) s"

# Refusals: the cluster file.
c() { printf '%s\n' "$1" >"$TMP/c.json"; }
t() { printf '%s\n' "$@" >"$TMP/t.jsonl"; }
run() { "$SIM" --cluster "$TMP/c.json" --trace "$TMP/t.jsonl" --policy hetero; }
t '{"id": "a", "arrival_s": 0, "type": "x", "workers": 1, "samples": 10}'
c '{"classes": [{"name": "fast", "hosts": 2}], "speeds": {"x": {"fast": 1}}'
expect_error 1 "c.json:2: not JSON" run
# an invalid escape before a line break: jansson quotes the bytes near it, the newline
# among them; the refusal stays one line (fuzz_sched's finding)
printf '{\n  "classes": [\n    {"name": "fast\\\n    "x": {"f": 80}\n  }\n}\n' >"$TMP/c.json"
expect_error 1 "c.json:4: not JSON: invalid escape" run
[ "$(wc -l <"$TMP/out")" = 1 ] || { cat "$TMP/out"; fail "the refusal of an invalid escape is not one line"; }
# an unknown key holding a line break, quoted in the refusal: one line (fuzz_sched's
# second finding)
printf '{\n  "classs\\n": 0\n}\n' >"$TMP/c.json"
expect_error 1 'c.json: classs?: unknown field (classes, speeds)' run
[ "$(wc -l <"$TMP/out")" = 1 ] || { cat "$TMP/out"; fail "the refusal of a key with a line break is not one line"; }
c '{"classes": [{"name": "fast", "hosts": 0}], "speeds": {"x": {"fast": 1}}}'
expect_error 1 "c.json: classes\[0\].hosts: must be an integer in 1..4096" run
c '{"classes": [{"name": "fast", "hosts": 2}, {"name": "fast", "hosts": 1}], "speeds": {"x": {"fast": 1}}}'
expect_error 1 "c.json: classes\[1\].name: 'fast' repeats classes\[0\]" run
c '{"classes": [{"name": "fast", "hosts": 2}], "speeds": {"x": {"slow": 1}}}'
expect_error 1 "c.json: speeds.x.slow: not a class of classes\[\]" run
c '{"classes": [{"name": "fast", "hosts": 2}], "speeds": {"x": {"fast": -3}}}'
expect_error 1 "c.json: speeds.x.fast: must be a number of samples/s in (0, 1e12\]" run
c '{"classes": [{"name": "fast", "hosts": 2, "gpus": 1}], "speeds": {"x": {"fast": 1}}}'
expect_error 1 "c.json: classes\[0\].gpus: unknown field" run
c "{\"classes\": [$(for i in 1 2 3 4 5 6 7 8 9; do printf '{"name": "c%d", "hosts": 1},' $i; done | sed 's/,$//')], \"speeds\": {\"x\": {}}}"
expect_error 1 "c.json: classes: must be an array of 1..8 classes" run
# The trace.
c '{"classes": [{"name": "fast", "hosts": 2}], "speeds": {"x": {"fast": 1}}}'
t '{"id": "a", "arrival_s": 0, "type": "x", "workers": 1, "samples": 10}' '' \
  '{"id": "b", "arrival_s": 1, "type": "x", "workers": 3, "samples": 10}'
expect_error 1 "t.jsonl:3: workers: must be an integer in 1..2 (the cluster's slots)" run
t '{"id": "a", "arrival_s": 0, "type": "y", "workers": 1, "samples": 10}'
expect_error 1 "t.jsonl:1: type: must be a job type of the cluster file's speeds" run
t '{"id": "a", "arrival_s": -1, "type": "x", "workers": 1, "samples": 10}'
expect_error 1 "t.jsonl:1: arrival_s: must be a number of seconds in \[0, 1e9\]" run
t '{"id": "a", "arrival_s": 0, "type": "x", "workers": 1, "samples": 0}'
expect_error 1 "t.jsonl:1: samples: must be a number in (0, 1e15\]" run
t '{"id": "a", "arrival_s": 0, "type": "x", "workers": 1, "samples": 1, "priority": "urgent"}'
expect_error 1 "t.jsonl:1: priority: must be \"high\", \"normal\" or \"low\"" run
t '{"id": "a", "arrival_s": 0, "type": "x", "workers": 1, "samples": 1, "elastic": "yes"}'
expect_error 1 "t.jsonl:1: elastic: must be true or false" run
t '{"id": "a", "arrival_s": 0, "type": "x", "workers": 1, "samples": 1, "elastic": true, "max_workers": 3}'
expect_error 1 "t.jsonl:1: max_workers: must be an integer in 1..2 (its workers to the cluster's slots)" run
t '{"id": "a", "arrival_s": 0, "type": "x", "workers": 2, "samples": 1, "elastic": true, "max_workers": 1}'
expect_error 1 "t.jsonl:1: max_workers: must be an integer in 2..2 (its workers to the cluster's slots)" run
t '{"id": "a", "arrival_s": 0, "type": "x", "workers": 1, "samples": 1, "max_workers": 2}'
expect_error 1 "t.jsonl:1: max_workers: only an elastic job may grow past its workers" run
t '{"id": "a", "arrival_s": 0, "type": "x", "workers": 1, "samples": 1, "gpu": 1}'
expect_error 1 "t.jsonl:1: gpu: unknown field" run
t '{"id": "a", "arrival_s": 0, "type": "x", "workers": 1, "samples": 1}' '{"id": "b",'
expect_error 1 "t.jsonl:2: not JSON" run
t "{\"id\": \"$(head -c 5000 /dev/zero | tr '\0' a)\"}"
expect_error 1 "t.jsonl:1: line longer than 4096 bytes" run
t '' ' '
expect_error 1 "t.jsonl: no jobs" run
# The options.
expect_error 2 "'lottery' is not a policy: fifo, fair, agnostic or hetero" "$SIM" --cluster $CL --trace $TR --policy lottery
expect_error 2 "--round-s: must be a number in \[1, 1e6\]" "$SIM" --cluster $CL --trace $TR --policy fifo --round-s 0
expect_error 2 "--grow-past-ask: must be a number in \[1, 64\]" "$SIM" --cluster $CL --trace $TR --policy hetero --grow-past-ask 0.5
expect_error 2 "--grow-overhead: must be a number in \[0, 0.99\]" "$SIM" --cluster $CL --trace $TR --policy hetero --grow-overhead 1
expect_error 1 "the simulation stopped after 1 decisions (--max-decisions)" "$SIM" --cluster $CL --trace $TR --policy hetero --max-decisions 1
expect_error 1 "$TMP/none.json: cannot be read" "$SIM" --cluster "$TMP/none.json" --trace $TR --policy fifo
echo "pass"
