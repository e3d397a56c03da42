# A drain's deadline, under --kill-grace 0: a 2-rank ssgd job on localhost and "extra" (the
# stand-in remote shell of drain.sh) whose steps take seconds (rank 0 emulates a 600x
# slowdown, sleeping). Drained with 60 s to go, its ranks are given until the deadline to
# reach their step boundary (not SIGKILLed after the kill grace, nor by mpirun, whose
# teardown after a SIGTERM kills the ranks about 2 s later: a drain's notice is SIGUSR1,
# which mpirun only forwards): the interruption has its checkpoint step and
# lost_steps <= 1. Relaunched on localhost alone, localhost then drains with 1 s
# to go, less than a step: at the deadline the job is SIGKILLed, its interruption says
# deadline_passed, and with no usable host left it waits QUEUED naming the drain.
. tests/integration/coordinator_lib.inc
need_api_tools
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
use_extra_host
start_coord_admin --hostfile "$TMP/hosts" --host-probe 1 --preflight off --max-restarts 0 --kill-grace 0
host_is() { [ "$(cli cluster | jq -r --arg h "$1" ".coordinator.hosts[] | select(.name == \$h) | .$2")" = "$3" ]; }
await 20 "extra to be up" host_is extra state up

spec2 "$TMP/s.json" slow 4
jq '.log_every = 1 | .checkpoint.every_steps = 1000 | .emulate = {schedule: [{step: 0, rank: 0, slowdown: 600}]}' \
    "$TMP/s.json" >"$TMP/s.t" && mv "$TMP/s.t" "$TMP/s.json"
id=$(submit "$TMP/s.json")
log="$STATE/jobs/$id/log"
job_api() { curl -s -H "Authorization: Bearer $ADMIN" "$BASE/api/v1/jobs/$id" >"$TMP/job.json"; }
trained() { [ "$(grep -c ' step ' "$log" 2>/dev/null)" -ge 1 ]; }
await 120 "job $id to train a step" trained
ok 200 "$ADMIN" POST /api/v1/cluster/hosts/extra/drain -H "$JSON" -d '{"deadline_s": 60, "reason": "swap"}'
interrupted() { job_api && jq -e '(.interruptions | length) >= 1 and .state != "QUEUED"' "$TMP/job.json" >/dev/null; }
await 90 "job $id's first interruption" interrupted
jq -e '.interruptions[0] | .host == "extra" and (.checkpoint_step | type == "number") and .lost_steps <= 1 and (.deadline_passed | not)' \
    "$TMP/job.json" >/dev/null || { grep "job $id" "$TMP/coord.log" | tail; fail "SIGKILLed before its step boundary: $(jq -c .interruptions "$TMP/job.json")"; }
echo "ok: drained with 60 s to go: $(jq -c '.interruptions[0] | {checkpoint_step, lost_steps}' "$TMP/job.json") (kill grace 0)"

runs_alone() { job_api && jq -e '.state == "RUNNING" and .world == 1' "$TMP/job.json" >/dev/null && has_worker "$id"; }
await 60 "job $id to run on localhost" runs_alone
ok 200 "$ADMIN" POST /api/v1/cluster/hosts/localhost/drain -H "$JSON" -d '{"deadline_s": 1, "reason": "now"}'
passed() { job_api && jq -e '.state == "QUEUED" and (.interruptions | length) == 2' "$TMP/job.json" >/dev/null; }
await 60 "job $id to be stopped at the deadline and wait QUEUED" passed
jq -e '.interruptions[1] | .host == "localhost" and .deadline_passed == true' "$TMP/job.json" >/dev/null ||
    fail "the second interruption: $(jq -c '.interruptions[1]' "$TMP/job.json")"
grep -q "job $id: the drain of localhost is past its deadline and the job still runs: SIGKILL" "$TMP/coord.log" ||
    fail "no SIGKILL at the deadline in the log"
jq -e '.reason | test("host localhost drains \\(now\\)")' "$TMP/job.json" >/dev/null || fail "reason: $(jq -r .reason "$TMP/job.json")"
echo "ok: 1 s to go, less than a step: SIGKILLed at the deadline, $(jq -c '.interruptions[1] | {deadline_passed, checkpoint_step}' "$TMP/job.json"), QUEUED: $(jq -r .reason "$TMP/job.json")"
cli cancel "$id" >/dev/null 2>&1 || true
stop_coord
