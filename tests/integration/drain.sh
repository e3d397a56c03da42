# Drain of a host: a 2-rank ssgd job runs on two hosts, localhost and "extra" (reached
# through a stand-in remote shell, OMPI_MCA_plm_rsh_agent, as in coordinator_reload.sh).
# An admin drains extra (POST /api/v1/cluster/hosts/extra/drain): the job's ranks hear
# SIGTERM, checkpoint at their next step and exit 75; the coordinator records an
# interruption "drain" naming extra and relaunches the job at once on localhost alone (1
# rank over the same global batch, no restart used: --max-restarts 0). DELETE then ends
# the drain mid-job: the job grows back onto extra (stopped with notice, resumed at its
# notice's step on 2 ranks) and SUCCEEDS with as many steps as an uninterrupted run.
# The drain is in GET /api/v1/cluster and survives a restart of the daemon (Redis holds
# it); `pacer host drain|undrain` drive it too. A member is refused (403), an unknown host
# is 404, a bad field 400.
. tests/integration/coordinator_lib.inc
need_api_tools
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
use_extra_host
start_coord_admin --hostfile "$TMP/hosts" --host-probe 1 --preflight off --max-restarts 0
host_field() { cli cluster | jq -r --arg h "$1" ".coordinator.hosts[] | select(.name == \$h) | .$2"; }
host_is() { [ "$(host_field "$1" "$2")" = "$3" ]; }
await 20 "extra to be up" host_is extra state up

# 8 epochs of 2048 images at a global batch of 128: 128 steps. Rank 0 sleeps through 12x
# its step (emulate: no value changes) so that the job still trains when the drain comes
# and when it ends: with OpenBLAS's AVX-512 kernels a step computes in about 10 ms, and at
# 4x the 1-rank attempt finished its last 90 steps in 3.5 s, before the grow-back's notice.
epochs=8
spec2 "$TMP/d.json" drained $epochs
jq '.log_every = 2 | .checkpoint.every_steps = 1000 | .emulate = {schedule: [{step: 0, rank: 0, slowdown: 12}]}' \
    "$TMP/d.json" >"$TMP/d.t" && mv "$TMP/d.t" "$TMP/d.json"
steps_want=$((epochs * 2048 / 128))

# Refusals: a member, an unknown host, bad fields.
MEMBER=$(adduser mia member)
ok 403 "$MEMBER" POST /api/v1/cluster/hosts/extra/drain -H "$JSON" -d '{"deadline_s": 60}'
ok 403 "$MEMBER" DELETE /api/v1/cluster/hosts/extra/drain
refused 404 "no host named 'nowhere' in the cluster" "$ADMIN" POST /api/v1/cluster/hosts/nowhere/drain -H "$JSON" -d '{"deadline_s": 60}'
refused 400 "deadline_s: must be a number of seconds > 0 and at most 604800 (a week)" "$ADMIN" POST /api/v1/cluster/hosts/extra/drain -H "$JSON" -d '{"deadline_s": -1}'
refused 400 "deadline: unknown field (deadline_s, reason)" "$ADMIN" POST /api/v1/cluster/hosts/extra/drain -H "$JSON" -d '{"deadline": 60}'
refused 400 "reason: must be a string" "$ADMIN" POST /api/v1/cluster/hosts/extra/drain -H "$JSON" -d '{"reason": 5}'
refused 400 "reason: at most 200 bytes" "$ADMIN" POST /api/v1/cluster/hosts/extra/drain -H "$JSON" -d "{\"reason\": \"$(printf '%0201d' 0)\"}"
host_is extra draining false || fail "a refused drain drained extra"
echo "ok: refusals: member 403, unknown host 404, bad fields 400 by name"

id=$(submit "$TMP/d.json")
log="$STATE/jobs/$id/log"
trained_past() { [ "$(grep -c ' step ' "$log" 2>/dev/null)" -ge 3 ]; }
await 180 "job $id to train a few steps" trained_past
[ "$(field_of "$id" world)" = 2 ] || fail "job $id runs on $(field_of "$id" world) ranks, want 2"
ok 200 "$ADMIN" POST /api/v1/cluster/hosts/extra/drain -H "$JSON" -d '{"deadline_s": 120, "reason": "maintenance"}'
jq -e '.host == "extra" and .reason == "maintenance" and (.deadline | type == "number")' "$TMP/body" >/dev/null ||
    fail "the drain's answer: $(cat "$TMP/body")"
await 10 "extra to show draining" host_is extra draining true
host_is extra drain_reason maintenance || fail "drain_reason: $(host_field extra drain_reason)"
echo "ok: extra draining (GET /api/v1/cluster: $(cli cluster | jq -c '.coordinator.hosts[] | select(.name == "extra") | {draining, drain_reason}'))"

# The job shrinks away from extra (1 rank on localhost); the drain's end (DELETE) lets it
# grow back onto extra: stopped with notice (it writes no periodic checkpoint in its 128
# steps), its rank checkpoints at its next step, and it resumes there on 2 ranks.
shrunk() { [ "$(field_of "$id" world)" = 1 ] && grep -q '^resumed from' "$log"; }
await 120 "job $id to resume on 1 rank" shrunk
ok 204 "$ADMIN" DELETE /api/v1/cluster/hosts/extra/drain
grown_or_over() { cli status "$id" | jq -e '.world == 2 or (.state | test("SUCCEEDED|FAILED|CANCELLED"))'; }
await 120 "job $id to grow back onto extra" grown_or_over
[ "$(field_of "$id" world)" = 2 ] || { grep "job $id" "$TMP/coord.log" | tail; fail "job $id ended without growing back onto extra"; }
echo "ok: drain ended: job $id grew back to 2 ranks ($(field_of "$id" resizes | jq -c '.[-1] | {from, to, reason}'))"

cli wait "$id" --timeout 600 || { tail -30 "$log"; tail -30 "$TMP/coord.log"; fail "job $id did not succeed"; }
cli status "$id" >"$TMP/job.json"
jq -e '.interruptions | length == 1' "$TMP/job.json" >/dev/null || { jq .interruptions "$TMP/job.json"; fail "want one interruption"; }
jq -e '.interruptions[0] | .reason == "drain" and .host == "extra" and (.at | type == "number")' "$TMP/job.json" >/dev/null ||
    { jq .interruptions "$TMP/job.json"; grep "job $id" "$TMP/coord.log" | tail -20; fail "the interruption's fields"; }
# The ranks' note: they stopped at a step boundary, checkpointed there, and the resumed
# attempt starts at that step (the coordinator's SIGTERM goes to mpirun alone, which
# forwards it to every rank, the one behind the remote shell too).
jq -e '.interruptions[0] | (.checkpoint_step | type == "number") and .lost_steps <= 1 and .lost_steps >= 0' "$TMP/job.json" >/dev/null ||
    { jq .interruptions "$TMP/job.json"; tail -30 "$log"; fail "the interruption has no checkpoint_step or lost_steps > 1: the ranks did not stop at a step boundary"; }
ck=$(jq -r '.interruptions[0].checkpoint_step' "$TMP/job.json")
grep -q "^resumed from .* at step $ck " "$log" || fail "not resumed at step $ck, the interruption's: $(grep '^resumed from' "$log")"
[ "$(jq -r .restarts "$TMP/job.json")" = 0 ] || fail "restarts = $(jq -r .restarts "$TMP/job.json"), want 0"
jq -e '[.resizes[] | "\(.from)>\(.to)"] == ["2>1", "1>2"] and (.resizes[1].reason | test("extra is usable again"))' \
    "$TMP/job.json" >/dev/null || fail "the resizes: $(jq -c '[.resizes[] | {from, to, reason}]' "$TMP/job.json"), want 2 -> 1 -> 2"
[ "$(jq -r .summary.steps "$TMP/job.json")" = "$steps_want" ] || fail "summary.steps $(jq -r .summary.steps "$TMP/job.json"), want $steps_want"
# The grow lost no step either: the last resume is at the step its notice stopped at.
grow_stop=$(grep -o 'every rank stops after step [0-9]*' "$log" | tail -1 | sed 's/.* step //')
[ "$(grep -c 'every rank stops after step' "$log")" = 2 ] && [ "$(resumed_step "$id")" = "$grow_stop" ] ||
    fail "the grow did not resume at its notice's step: $(grep -e 'every rank stops' -e '^resumed from' "$log")"
echo "ok: job $id: interruption $(jq -c '.interruptions[0] | {reason, host, checkpoint_step, lost_steps}' "$TMP/job.json"), resumed on 1 rank, grew back to 2, SUCCEEDED with $steps_want steps"

# pacer host drain (the CLI) replaces the drain; it outlives the daemon.
PACER_URL=$BASE "$BUILD/pacer" host drain extra --deadline 60 --reason "kernel update" >"$TMP/out" ||
    fail "pacer host drain: $(cat "$TMP/out")"
grep -q "^extra: draining until [0-9]* (unix s): kernel update$" "$TMP/out" || fail "pacer host drain printed: $(cat "$TMP/out")"
await 10 "the CLI's reason to show" host_is extra drain_reason "kernel update"
stop_coord
start_coord_admin --hostfile "$TMP/hosts" --host-probe 1 --preflight off --max-restarts 0
await 10 "extra to show draining after a restart" host_is extra draining true
echo "ok: the drain survives a restart"

PACER_URL=$BASE "$BUILD/pacer" host undrain extra >"$TMP/out" || fail "pacer host undrain: $(cat "$TMP/out")"
grep -q "^extra: drain ended$" "$TMP/out" || fail "pacer host undrain printed: $(cat "$TMP/out")"
ok 204 "$ADMIN" DELETE /api/v1/cluster/hosts/extra/drain
await 10 "extra to be usable again" host_is extra draining false
echo "ok: pacer host undrain ended the drain"
stop_coord
