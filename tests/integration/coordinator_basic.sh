# The job service end to end: an invalid spec is refused naming the field; a small
# single-worker job goes QUEUED -> RUNNING -> SUCCEEDED with its checkpoint, summary and
# log in the state dir; a running job is cancelled (no process of it survives); the
# daemon exits 0 on SIGTERM and stops its embedded Redis.
. tests/integration/coordinator_lib.inc
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
start_coord

echo '{"model": "lenet5", "dataset": {"name": "fashion-mnist"}, "batch_sise": 64}' >"$TMP/bad.json"
expect_error 2 "batch_sise: unknown field" cli submit "$TMP/bad.json"
echo '{"model": "lenet5", "dataset": {"name": "fashion-mnist"}, "optimizer": {"lr": 0}}' >"$TMP/bad2.json"
expect_error 2 "optimizer.lr" cli submit "$TMP/bad2.json"
[ "$(cli list --json | jq .total)" = 0 ] || fail "an invalid spec was stored"
echo "ok: invalid specs refused, nothing stored"

spec "$TMP/small.json" small 2
id=$(submit "$TMP/small.json")
[ "$(state_of "$id")" != "" ] || fail "job $id not readable right after submit"
cli wait "$id" --timeout 300 || { cat "$STATE/jobs/$id/log"; fail "job $id did not succeed"; }
[ "$(field_of "$id" exit_code)" = 0 ] || fail "exit_code $(field_of "$id" exit_code)"
[ "$(field_of "$id" restarts)" = 0 ] || fail "restarts $(field_of "$id" restarts)"
at_least "summary test_accuracy" "$(field_of "$id" summary.test_accuracy)" 0.3
has_checkpoint "$id" small || fail "no checkpoint in $STATE/jobs/$id/checkpoints"
[ "$(field_of "$id" checkpoint)" = "$STATE/jobs/$id/checkpoints/small.ckpt" ] || fail "checkpoint path"
grep -q "final test_accuracy" "$STATE/jobs/$id/log" || fail "log lacks the final line"
cli logs "$id" --tail 3 | grep -q "final test_accuracy" || fail "logs --tail"
# The event stream saw every transition, in order.
states=$(job_states "$id")
[ "$states" = "QUEUED RUNNING SUCCEEDED " ] || fail "events for $id: $states"
echo "ok: $id QUEUED -> RUNNING -> SUCCEEDED"

spec "$TMP/long.json" long 300   # cancelled below: longer than any machine takes to get there
id2=$(submit "$TMP/long.json")
await 120 "job $id2 to run its worker" has_worker "$id2"
sid=$(job_pid "$id2")
cli cancel "$id2" >/dev/null || fail "cancel $id2"
await 60 "job $id2 to be CANCELLED" is_state "$id2" CANCELLED
left=$(ps -eo pid=,sid=,stat= | awk -v s="$sid" '$2 == s && $3 !~ /^Z/' | wc -l)
[ "$left" -eq 0 ] || fail "$left processes of cancelled job $id2 still run"
expect_error 2 "already finished" cli cancel "$id2"
expect_error 2 "not found" cli status j-999
echo "ok: running job cancelled, nothing of it left"

stop_coord
redis-cli -s "$STATE/redis.sock" PING >/dev/null 2>&1 && fail "embedded Redis still answers after the daemon exited"
[ -f "$STATE/redis.pid" ] && fail "redis.pid left behind"
echo "ok: SIGTERM -> exit 0, embedded Redis stopped"
