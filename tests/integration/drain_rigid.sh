# Drain of a host under a rigid job (min_workers = workers: it cannot shrink): a 2-rank
# ssgd job on localhost and "extra" (a stand-in remote shell, as in drain.sh). When extra
# drains, the job's ranks checkpoint at their next step and, with one usable slot for its
# two ranks, the job waits QUEUED with a reason naming the drain (its state's reason and
# its queue object's) instead of running oversubscribed on what is left; its interruption
# is kept. When the drain ends it resumes from that checkpoint on both hosts and SUCCEEDS
# with as many steps as an uninterrupted run, no restart used.
. tests/integration/coordinator_lib.inc
need_api_tools
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
use_extra_host
start_coord_admin --hostfile "$TMP/hosts" --host-probe 1 --preflight off --max-restarts 0
host_is() { [ "$(cli cluster | jq -r --arg h "$1" ".coordinator.hosts[] | select(.name == \$h) | .$2")" = "$3" ]; }
await 20 "extra to be up" host_is extra state up

# 4 epochs of 2048 images at a global batch of 128: 64 steps; rank 0 sleeps through 16x its
# step so that the job still trains when the drain comes (at 4x, 64 steps took 2.2 s on an
# idle VM once OpenBLAS's idle threads stopped spinning, and the job ended 0.4 s after the
# drain's notice: SUCCEEDED, never QUEUED).
epochs=4
spec2 "$TMP/r.json" rigid $epochs
jq '.min_workers = 2 | .log_every = 2 | .checkpoint.every_steps = 1000 | .emulate = {schedule: [{step: 0, rank: 0, slowdown: 16}]}' \
    "$TMP/r.json" >"$TMP/r.t" && mv "$TMP/r.t" "$TMP/r.json"
steps_want=$((epochs * 2048 / 128))

id=$(submit "$TMP/r.json")
log="$STATE/jobs/$id/log"
trained_past() { [ "$(grep -c ' step ' "$log" 2>/dev/null)" -ge 3 ]; }
await 180 "job $id to train a few steps" trained_past
ok 200 "$ADMIN" POST /api/v1/cluster/hosts/extra/drain -H "$JSON" -d '{"deadline_s": 300, "reason": "maintenance"}'

# QUEUED, and the scheduler has looked at it since (its queue object, from the daemon)
job_api() { curl -s -H "Authorization: Bearer $ADMIN" "$BASE/api/v1/jobs/$id" >"$TMP/job.json"; }
queued() { job_api && jq -e '.state == "QUEUED" and .queue != null' "$TMP/job.json" >/dev/null; }
await 120 "job $id to wait QUEUED for the drain" queued
jq -e '.queue.reason == "a host drains"' "$TMP/job.json" >/dev/null || fail "the queue object: $(jq -c .queue "$TMP/job.json")"
jq -e '.reason | test("host extra drains \\(maintenance\\)")' "$TMP/job.json" >/dev/null ||
    fail "the QUEUED reason does not name the drain: $(jq -r .reason "$TMP/job.json")"
jq -e '.queue.detail | test("extra \\(maintenance\\)")' "$TMP/job.json" >/dev/null ||
    fail "the queue's detail does not name the draining host: $(jq -r .queue.detail "$TMP/job.json")"
jq -e '.interruptions | length == 1 and .[0].reason == "drain" and .[0].host == "extra"' "$TMP/job.json" >/dev/null ||
    fail "the interruption: $(jq -c .interruptions "$TMP/job.json")"
echo "ok: job $id QUEUED: $(jq -r .reason "$TMP/job.json"); queue: $(jq -c '.queue | {reason, detail}' "$TMP/job.json")"
# It stays queued while extra drains (the scheduler would otherwise start it on 1 slot
# within a tick): a few ticks later it still waits.
sleep 3
[ "$(field_of "$id" state)" = QUEUED ] || fail "job $id left the queue while extra drains: $(field_of "$id" state)"

ok 204 "$ADMIN" DELETE /api/v1/cluster/hosts/extra/drain
cli wait "$id" --timeout 600 || { tail -30 "$log"; grep "job $id" "$TMP/coord.log" | tail -20; fail "job $id did not succeed"; }
job_api
ck=$(jq -r '.interruptions[0].checkpoint_step' "$TMP/job.json")
[ "$(jq -r '.interruptions | length' "$TMP/job.json")" = 1 ] ||
    { grep "job $id" "$TMP/coord.log" | tail -20; fail "interruptions: $(jq -c .interruptions "$TMP/job.json")"; }
case $ck in '' | null) fail "the interruption has no checkpoint_step: $(jq -c .interruptions "$TMP/job.json")" ;; esac
[ "$(resumed_step "$id")" = "$ck" ] || fail "resumed at step $(resumed_step "$id"), the interruption says $ck"
[ "$(jq -r .world "$TMP/job.json")" = 2 ] || fail "the resumed attempt's world: $(jq -r .world "$TMP/job.json"), want 2"
[ "$(jq -r .restarts "$TMP/job.json")" = 0 ] || fail "restarts = $(jq -r .restarts "$TMP/job.json"), want 0"
[ "$(jq -r .summary.steps "$TMP/job.json")" = "$steps_want" ] || fail "summary.steps $(jq -r .summary.steps "$TMP/job.json"), want $steps_want"
echo "ok: undrained: job $id resumed at step $ck on 2 ranks and SUCCEEDED with $steps_want steps"
stop_coord
