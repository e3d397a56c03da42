# A worker rank SIGTERMed mid-training (Slurm's notice, a spot instance's, `kill`): every
# rank stops after the same step, rank 0 checkpoints there, all exit 75, and the
# coordinator reads that as "interrupted with notice": the job resumes at once from that
# checkpoint without using a restart (--max-restarts 0: a failure would end it FAILED),
# and SUCCEEDS with as many steps as an uninterrupted run. The job shows the interruption
# ({reason, host, at_step, checkpoint_step, lost_steps <= 1, at}; `pacer get` too), its
# summary counts it, and pacer:events has it; a webhook receiver (tests/webhook_receiver.py) gets each
# interruption's job.interrupted and each job's job.succeeded once, signed.
. tests/integration/coordinator_lib.inc
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
need_api_tools
command -v python3 >/dev/null || skip "python3 not installed"
# The worker as itself, or (with $FLAG present) as a rank that finishes its run and then
# exits 1 the way mpirun does when a SIGTERM reaches it after the last step.
cat >"$TMP/worker" <<'WEOF'
#!/bin/sh
[ -e "$FLAG" ] || exec "$REAL_WORKER" "$@"
"$REAL_WORKER" "$@" && exit 1
WEOF
chmod +x "$TMP/worker"
case $WORKER in /*) REAL_WORKER=$WORKER ;; *) REAL_WORKER=$PWD/$WORKER ;; esac
FLAG=$TMP/exit1
export REAL_WORKER FLAG
start_coord --max-restarts 0 --worker "$TMP/worker" --webhook-hosts 127.0.0.1
python3 tests/webhook_receiver.py "$TMP/port" "$TMP/got.jsonl" &
EXTRA_PIDS="$EXTRA_PIDS $!"
await 20 "the webhook receiver to listen" test -s "$TMP/port"
SECRET=notice-secret-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
code=$(curl -s -o "$TMP/hook.json" -w '%{http_code}' -H 'Content-Type: application/json' "$(api_base)/api/v1/webhooks" \
    -d "$(jq -nc --arg u "http://127.0.0.1:$(cat "$TMP/port")/notice" --arg s "$SECRET" \
        '{url: $u, secret: $s, events: ["job.interrupted", "job.succeeded", "job.failed"]}')")
[ "$code" = 201 ] || fail "POST /api/v1/webhooks: HTTP $code: $(cat "$TMP/hook.json")"

# Both ranks sleep through 5x their step (sleeping, not spinning): seconds of training,
# so the SIGTERMs below land mid-run on a loaded machine too.
epochs=6
spec2 "$TMP/n.json" notice $epochs
jq '.log_every = 2 | .checkpoint.every_steps = 1000 | .emulate.slowdown = [5, 5]' "$TMP/n.json" >"$TMP/n.t" &&
    mv "$TMP/n.t" "$TMP/n.json"
id=$(submit "$TMP/n.json")
log="$STATE/jobs/$id/log"
trained_past() { grep -q "epoch 1/$epochs step [1-9][0-9]*/" "$log" 2>/dev/null && [ "$(grep -c ' step ' "$log")" -ge 3 ]; }
await 180 "job $id to train a few steps" trained_past
# the second pacer-worker of the job's session (one rank; which one does not matter)
s=$(job_pid "$id")
victim=$(ps -eo pid=,sid=,comm= | awk -v s="$s" '$2 == s && $3 == "pacer-worker" { print $1 }' | tail -1)
[ -n "$victim" ] || fail "no pacer-worker in the session of $id"
kill -TERM "$victim" || fail "cannot signal worker $victim"
echo "ok: SIGTERM to pacer-worker $victim of $id mid-training"
cli wait "$id" --timeout 600 || { tail -30 "$log"; tail -20 "$TMP/coord.log"; fail "job $id did not succeed"; }
grep -q "notice: signal 15 heard by rank [01]: every rank stops after step" "$log" || { tail -30 "$log"; fail "no notice line in the log"; }
[ "$(field_of "$id" restarts)" = 0 ] || fail "restarts = $(field_of "$id" restarts), want 0 (a notice is no failure)"
[ "$(field_of "$id" attempts)" = 2 ] || fail "attempts = $(field_of "$id" attempts), want 2"
states=$(job_states "$id")
[ "$states" = "QUEUED RUNNING RESTARTING RUNNING SUCCEEDED " ] || fail "states of $id: $states"
cli status "$id" >"$TMP/job.json"
jq -e '.interruptions | length == 1' "$TMP/job.json" >/dev/null || { jq .interruptions "$TMP/job.json"; fail "want one interruption"; }
jq -e '.interruptions[0] | .reason == "notice" and (.host | type == "string") and (.at_step | type == "number")
       and (.checkpoint_step | type == "number") and .lost_steps <= 1 and .lost_steps >= 0 and (.at | type == "number")' \
    "$TMP/job.json" >/dev/null || { jq .interruptions "$TMP/job.json"; fail "the interruption's fields"; }
ck=$(jq -r '.interruptions[0].checkpoint_step' "$TMP/job.json")
at_least "checkpoint step" "$ck" 2
[ "$(resumed_step "$id")" = "$ck" ] || fail "resumed at step $(resumed_step "$id"), the note says $ck"
want=$((epochs * 2048 / 128))
[ "$(jq -r .summary.steps "$TMP/job.json")" = "$want" ] || fail "summary.steps $(jq -r .summary.steps "$TMP/job.json"), want $want"
[ "$(jq -r .summary.interruptions "$TMP/job.json")" = 1 ] || fail "summary.interruptions is not 1"
rcli XRANGE pacer:events - + | grep "\"job\":\"$id\"" | grep -q '"type":"interruption"' || fail "no interruption event"
[ -e "$STATE/jobs/$id/checkpoints/notice.notice" ] && fail "the note was not removed"
echo "ok: $states; interruption $(jq -c '.interruptions[0] | {at_step, checkpoint_step, lost_steps, host}' "$TMP/job.json"), restarts 0, $want steps"
id1=$id
# pacer get (the CLI, through the API) says it too
if [ -x "$BUILD/pacer" ]; then
    "$BUILD/pacer" --url "$(api_base)" get "$id" >"$TMP/get.txt" || fail "pacer get $id: $(cat "$TMP/get.txt")"
    grep -Eq "^interrupted +1 time; the last: notice on [^ ]+ after step [0-9]+, resumed from step $ck \([01] lost\), " \
        "$TMP/get.txt" || { cat "$TMP/get.txt"; fail "pacer get $id: no interrupted row with the notice's figures"; }
    echo "ok: pacer get: $(grep '^interrupted' "$TMP/get.txt")"
fi

# SIGTERM to mpirun itself (a batch script's notice): it forwards it to the ranks, which
# checkpoint and leave the note, and exits 1 itself: still a notice, no restart used.
id=$(submit "$TMP/n.json")
log="$STATE/jobs/$id/log"
await 180 "job $id to train a few steps" trained_past
s=$(job_pid "$id")
mp=$(ps -eo pid=,sid=,comm= | awk -v s="$s" '$2 == s && ($3 == "mpirun" || $3 == "orterun" || $3 == "prterun") { print $1; exit }')
[ -n "$mp" ] || fail "no mpirun in the session of $id"
kill -TERM "$mp" || fail "cannot signal mpirun $mp"
cli wait "$id" --timeout 600 || { tail -30 "$log"; tail -20 "$TMP/coord.log"; fail "job $id (mpirun SIGTERMed) did not succeed"; }
[ "$(field_of "$id" restarts)" = 0 ] || fail "$id: restarts = $(field_of "$id" restarts), want 0"
cli status "$id" | jq -e '(.interruptions | length == 1) and .interruptions[0].lost_steps <= 1' >/dev/null ||
    fail "$id: want one interruption with lost_steps <= 1"
echo "ok: SIGTERM to mpirun: the job resumed without a restart and SUCCEEDED"
id2=$id

# mpirun exiting 1 after every rank finished (the SIGTERM came after the last step): the
# summary's exit_status says the run is done, and the job SUCCEEDS without a restart.
touch "$FLAG"
jq '.epochs = 1 | del(.emulate)' "$TMP/n.json" >"$TMP/late.json"
id=$(submit "$TMP/late.json")
cli wait "$id" --timeout 300 || { tail -20 "$TMP/coord.log"; fail "job $id (mpirun exiting 1 after the run) did not succeed"; }
[ "$(jq -r .exit_status "$STATE/jobs/$id/summary.json")" = 0 ] || fail "$id: the summary's exit_status is not 0"
grep -q "job $id: attempt 1: mpirun exited 1 after every rank finished" "$TMP/coord.log" || fail "$id: no line says why"
[ "$(field_of "$id" restarts)" = 0 ] || fail "$id: restarts = $(field_of "$id" restarts), want 0"
echo "ok: mpirun exiting 1 after a finished run: SUCCEEDED, as the summary says"

hooks_got() { [ "$(grep -c . "$TMP/got.jsonl" 2>/dev/null)" -ge 5 ]; }
await 60 "the webhook receiver to get the interruptions and ends of $id1, $id2 and $id" hooks_got
python3 tests/webhook_receiver.py check "$TMP/got.jsonl" /notice "$SECRET" "job.interrupted=$id1" "job.succeeded=$id1" \
    "job.interrupted=$id2" "job.succeeded=$id2" "job.succeeded=$id" || fail "the webhook's deliveries"
jq -se '[.[] | select(.event == "job.interrupted") | .body | fromjson | .data | .reason == "notice" and .lost_steps <= 1]
    | length == 2 and all' "$TMP/got.jsonl" >/dev/null || { cat "$TMP/got.jsonl"; fail "a job.interrupted body: want reason notice, lost_steps <= 1"; }
echo "ok: the webhook got job.interrupted of $id1 and $id2 (reason notice, lost_steps <= 1) and each job's job.succeeded once, signed"
stop_coord
