# Preemption by shrinking (issue 45) on one host with two slots under --policy fair
# (--preempt-min-run 0): a low-priority 2-worker ssgd job runs; once it has a checkpoint
# a high-priority 1-worker job is submitted. Shrinking the low one to 1 rank frees the
# slot the high one needs, so it is shrunk instead of requeued: stopped and relaunched at
# once from its checkpoint on 1 rank (never QUEUED again, no preempted_by in its record),
# the resize 2 -> 1 in its "resizes" and in pacer:events with the reason naming the high
# job and "preempted_by", and `pacer get`'s shrunk line; the high one runs beside it to SUCCEEDED; then the low one grows
# back to 2 ranks at its next checkpoint (a second resize, 1 -> 2) and SUCCEEDS, having
# resumed from its checkpoints. Polls with deadlines; no speed is asserted.
. tests/integration/coordinator_lib.inc
need_api_tools
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"

export PACER_TOKEN=shrink-token-$$
# The low job: 2 ranks x 64, 2048 images (16 steps an epoch), 16 epochs, a checkpoint
# every 8 steps. Rank 0 sleeps through 20x its own step (emulate: no load, no value
# changed) so that the low job is still training when the high one has ended, whatever
# the machine's speed (the sleep scales with the step). The high job: 1 rank, 256 images.
cat >"$TMP/lo.json" <<JSON
{"name": "lo", "model": "lenet5", "workers": 2, "algorithm": {"name": "ssgd"}, "priority": "low",
 "dataset": {"name": "fashion-mnist", "train_subset": 2048, "test_subset": 500},
 "optimizer": {"lr": 0.02, "momentum": 0.9}, "batch_size": 64, "epochs": 16, "seed": 7, "log_every": 8,
 "checkpoint": {"every_steps": 8}, "emulate": {"schedule": [{"step": 0, "rank": 0, "slowdown": 20}]}}
JSON
cat >"$TMP/hi.json" <<JSON
{"name": "hi", "model": "lenet5", "workers": 1, "priority": "high",
 "dataset": {"name": "fashion-mnist", "train_subset": 256, "test_subset": 100},
 "optimizer": {"lr": 0.02, "momentum": 0.9}, "batch_size": 64, "epochs": 1, "seed": 7, "log_every": 2}
JSON
# resized ID N - the job's record holds at least N resizes.
resized() { [ "$(q "$1" '.resizes | length')" -ge "$2" ]; }

printf 'localhost slots=2\n' >"$TMP/hosts"
start_coord --hostfile "$TMP/hosts" --preflight off --policy fair --preempt-min-run 0
BASE=$(api_base)
lo=$(submit "$TMP/lo.json")
await 120 "job $lo to run its worker" has_worker "$lo"
await 120 "job $lo to write a checkpoint" has_checkpoint "$lo" lo
hi=$(submit "$TMP/hi.json")
await 60 "job $lo to shrink" resized "$lo" 1
r=$(q "$lo" '.resizes[0]')
[ "$(echo "$r" | jq -r '"\(.from) \(.to) \(.preempted_by)"')" = "2 1 $hi" ] || fail "$lo's first resize: $r"
echo "$r" | jq -r .reason | grep -q "^preempted by $hi, of a higher priority: shrunk from 2 to 1 rank, which frees enough, to resume from its checkpoint$" ||
    fail "$lo's shrink reason: $r"
grep -q "job $lo: resize 2 -> 1 rank: preempted by $hi" "$TMP/coord.log" || fail "no shrink line in the log"
rcli XRANGE pacer:events - + | grep '"type":"resize"' | grep "\"job\":\"$lo\"" |
    grep -q "\"preempted_by\":\"$hi\"" || fail "no resize event naming $hi in pacer:events"
if [ -x "$BUILD/pacer" ]; then
    PACER_URL=$BASE "$BUILD/pacer" get "$lo" >"$TMP/get" || fail "pacer get $lo"
    grep -q "^shrunk  *2 -> 1 ranks for $hi at " "$TMP/get" || { cat "$TMP/get"; fail "pacer get: no shrunk line"; }
fi
echo "ok: $lo (low) shrunk 2 -> 1 for $hi (high): $(echo "$r" | jq -r .reason)"
await 300 "job $hi to succeed" is_api_state "$hi" SUCCEEDED
# still training (or already relaunched to grow back): it must not have ended yet
case $(q "$lo" .state) in RUNNING | RESTARTING) ;; *) fail "$lo is $(q "$lo" .state) once $hi has ended: it must still run to grow back" ;; esac
echo "ok: $hi ran beside it to SUCCEEDED ($lo at step $(curl -s -H "Authorization: Bearer $PACER_TOKEN" "$BASE/api/v1/jobs/$lo/nodes" | jq '[.ranks[]?.step] | max') of 256)"
await 300 "job $lo to grow back" resized "$lo" 2
g=$(q "$lo" '.resizes[1]')
[ "$(echo "$g" | jq -r '"\(.from) \(.to)"')" = "1 2" ] || fail "$lo's second resize: $g"
echo "$g" | jq -e '(has("preempted_by") | not) and .reason == "grow at the checkpoint: the slots it gave up are free again"' \
    >/dev/null || fail "the grow back: $g"
await 300 "job $lo to succeed" is_api_state "$lo" SUCCEEDED
job_states "$lo" | grep -q "QUEUED RUNNING.*QUEUED" && fail "$lo was requeued: $(job_states "$lo")"
[ "$(q "$lo" .preempted_by)" = null ] || fail "$lo has preempted_by $(q "$lo" .preempted_by): it was shrunk, not requeued"
s=$(resumed_step "$lo")
[ -n "$s" ] && [ "$s" -gt 0 ] || fail "$lo did not resume from a checkpoint: $(grep -i resum "$STATE/jobs/$lo/log" | head -3)"
[ "$(q "$lo" .summary.steps)" = 256 ] || fail "$lo ran $(q "$lo" .summary.steps) steps, want 256"
echo "ok: $lo grew back 1 -> 2 ($(echo "$g" | jq -r .reason)), resumed at step $s, ran all 256 steps and SUCCEEDED"
stop_coord
