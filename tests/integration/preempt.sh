# Preemption through a checkpoint (issue 45) on one host with two slots under --policy
# fair (--preempt-min-run 0): a low-priority 2-worker job checkpointing every 10 steps
# runs; once it has a checkpoint a high-priority 2-worker job is submitted; the low one is
# stopped and requeued (QUEUED, preempted_by the high one, the reason "preempted by ...",
# an event), the high one runs to SUCCEEDED, then the low one is claimed again and resumes
# from its checkpoint (its log: resumed at a step > 0) and SUCCEEDS; `pacer get` shows the
# preemption. Polls with deadlines.
. tests/integration/coordinator_lib.inc
need_api_tools
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"

export PACER_TOKEN=preempt-token-$$
resumed() { s=$(resumed_step "$1") && [ -n "$s" ] && [ "$s" -gt 0 ]; }

printf 'localhost slots=2\n' >"$TMP/hosts"
start_coord --hostfile "$TMP/hosts" --preflight off --policy fair --preempt-min-run 0
BASE=$(api_base)
spec2 "$TMP/lo.json" lo 20 low
spec2 "$TMP/hi.json" hi 1 high
lo=$(submit "$TMP/lo.json")
await 120 "job $lo to run its worker" has_worker "$lo"
await 120 "job $lo to write a checkpoint" has_checkpoint "$lo" lo
hi=$(submit "$TMP/hi.json")
await 60 "job $lo to be requeued" is_api_state "$lo" QUEUED
[ "$(q "$lo" .preempted_by)" = "$hi" ] || fail "$lo: preempted_by '$(q "$lo" .preempted_by)', want $hi"
q "$lo" .reason | grep -q "^preempted by $hi at [0-9.]*, of a higher priority: requeued to resume from its checkpoint$" ||
    fail "$lo: reason '$(q "$lo" .reason)'"
grep -q "job $lo: preempted by $hi, of a higher priority: stopping" "$TMP/coord.log" || fail "no preemption line in the log"
if [ -x "$BUILD/pacer" ]; then
    PACER_URL=$BASE "$BUILD/pacer" get "$lo" >"$TMP/get" || fail "pacer get $lo"
    grep -q "^preempted  *by $hi at " "$TMP/get" || { cat "$TMP/get"; fail "pacer get: no preempted line"; }
fi
echo "ok: $lo (low) preempted by $hi (high) and requeued"
await 300 "job $hi to succeed" is_api_state "$hi" SUCCEEDED
await 300 "job $lo to succeed" is_api_state "$lo" SUCCEEDED
resumed "$lo" || fail "$lo did not resume from a checkpoint: $(grep -i resum "$STATE/jobs/$lo/log" | head -3)"
job_states "$lo" | grep -q "RUNNING QUEUED RUNNING" || fail "$lo's states: $(job_states "$lo")"
echo "ok: $hi ran to SUCCEEDED, then $lo resumed at step $(resumed_step "$lo") and SUCCEEDED"
stop_coord
