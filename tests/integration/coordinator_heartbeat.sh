# A job whose ranks fall silent is restarted from its checkpoint: the worker process is
# stopped (SIGSTOP: alive, but neither training nor sending heartbeats, as a hung node
# would be) after its first checkpoint; after the heartbeat timeout (5 s here) the
# coordinator kills the job's session (SIGTERM, then SIGKILL after --kill-grace),
# marks it RESTARTING with the reason, relaunches it with --resume, and the job resumes
# from its checkpoint and SUCCEEDS with one restart.
. tests/integration/coordinator_lib.inc
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
HEARTBEAT_TIMEOUT=5
start_coord --kill-grace 1
spec "$TMP/hb.json" hb 6
id=$(submit "$TMP/hb.json")
await 60 "job $id to write its first checkpoint" has_checkpoint "$id" hb
await 10 "job $id to run its worker" has_worker "$id"
victim=$(worker_pid "$id")
kill -STOP "$victim" || fail "cannot stop worker $victim"
stopped_at=$(now)
echo "ok: stopped pacer-worker $victim of $id after its first checkpoint"
await 60 "job $id to be restarted for its silence" is_state "$id" RESTARTING
silent=$(awk -v n="$(now)" -v s="$stopped_at" 'BEGIN { printf "%.1f", n - s }')
at_least "seconds of silence before the restart" "$silent" "$HEARTBEAT_TIMEOUT"
grep -q "job $id: no heartbeat from rank 0 for [0-9]* s; killing session" "$TMP/coord.log" ||
    { tail -20 "$TMP/coord.log"; fail "the coordinator did not say why it killed $id"; }
field_of "$id" reason | grep -q "no heartbeat from rank 0" || fail "reason of $id: $(field_of "$id" reason)"
# No process of the first attempt may outlive it: two attempts would write one checkpoint.
relaunched() { [ "$(field_of "$id" attempts)" = 2 ]; }
await 60 "job $id to be launched again" relaunched
st=$(ps -o stat= -p "$victim" 2>/dev/null)
case $st in "" | Z*) ;; *) fail "the silent worker $victim (state $st) still exists while attempt 2 runs" ;; esac
cli wait "$id" --timeout 120 || { tail -30 "$STATE/jobs/$id/log"; fail "job $id did not succeed after the restart"; }
[ "$(field_of "$id" restarts)" = 1 ] || fail "restarts = $(field_of "$id" restarts), want 1"
[ "$(job_states "$id")" = "QUEUED RUNNING RESTARTING RUNNING SUCCEEDED " ] || fail "states of $id: $(job_states "$id")"
at_least "job $id resumed at step" "$(resumed_step "$id")" 10
echo "ok: silent for ${silent}s -> killed, RESTARTING, resumed at step $(resumed_step "$id"), SUCCEEDED"
stop_coord
