# A worker killed with SIGKILL mid-job: mpirun fails, the coordinator marks the job
# RESTARTING, relaunches it with --resume after the backoff, the worker continues from
# its latest checkpoint (step > 0) and the job SUCCEEDS with one restart counted.
. tests/integration/coordinator_lib.inc
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
start_coord

spec "$TMP/crash.json" crash 30
id=$(submit "$TMP/crash.json")
await 120 "job $id to write its first checkpoint" has_checkpoint "$id" crash
await 60 "job $id to run its worker" has_worker "$id"
victim=$(worker_pid "$id")
kill -9 "$victim" || fail "cannot kill worker $victim"
echo "ok: killed pacer-worker $victim of $id after its first checkpoint"
cli wait "$id" --timeout 600 || { tail -30 "$STATE/jobs/$id/log"; fail "job $id did not succeed"; }
[ "$(field_of "$id" restarts)" = 1 ] || fail "restarts = $(field_of "$id" restarts), want 1"
[ "$(field_of "$id" attempts)" = 2 ] || fail "attempts = $(field_of "$id" attempts), want 2"
states=$(job_states "$id")
[ "$states" = "QUEUED RUNNING RESTARTING RUNNING SUCCEEDED " ] || fail "states of $id: $states"
echo "ok: $states"
step=$(resumed_step "$id")
at_least "resumed at step" "${step:-0}" 10
kill -0 "$victim" 2>/dev/null && fail "the killed worker is still there"
stop_coord
