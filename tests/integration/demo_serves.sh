#!/bin/sh
# tests/integration/demo_serves.sh - issue 42 item 15: `make demo` builds and installs only
# what the demo runs, and the demo, run without a terminal, keeps serving the dashboard
# after its jobs end until it is told to stop; being told to stop is no error.
#
#   - make -n demo (into an empty build directory, so that everything shows) installs the
#     build group only (not the test group and its npm tools) and builds the coordinator,
#     the worker and the dashboard, no unit test, benchmark or tool;
#   - deploy/demo.sh with a short first job (DEMO_SPEC), the language model
#     (deploy/demo-job-gpt.json, the default DEMO_LM) and a long second image job
#     (DEMO_SPEC2), stdin not a terminal: the language model SUCCEEDS with its figures in
#     its own words and the API's generate continues the demo's prompt from it; the second
#     is submitted once the first has SUCCEEDED and still runs seconds later (a page
#     opened after the first job ended still has a live job); SIGTERM then stops the
#     coordinator, the running job and the embedded Redis, and the demo exits 0;
#   - `make -o demo-deps demo` (the real recipe, on the built tree) with the short job only:
#     the dashboard and the API answer after it SUCCEEDED; SIGTERM to the demo's shell ends
#     make with status 0 and no "Error 143" (it used to); SIGTERM to make itself (what
#     Ctrl-C does, to the whole group) prints no error either, and nothing is left running
#     (make's own status is then the signal's: GNU make dies by the signal it was sent).
. tests/integration/coordinator_lib.inc
command -v curl >/dev/null || skip "curl not installed (make deps)"
need_dir "$FASHION" "Fashion-MNIST (make deps)"
PROBE=$BUILD/tools/netprobe
# the makes below are the user's `make demo`, not children of make test's jobserver
unset MAKEFLAGS MFLAGS MAKELEVEL
[ -x "$PROBE" ] || fail "$PROBE not built (make $PROBE)"

# ---- make -n demo: what it would install and build ------------------------------------------
make -n demo BUILD="$TMP/b" >"$TMP/plan" 2>&1 || { tail -20 "$TMP/plan"; fail "make -n demo failed"; }
grep -qx 'sh deploy/install-deps.sh build' "$TMP/plan" || fail "make demo does not install the build group alone: $(grep install-deps "$TMP/plan")"
for want in "$TMP/b/pacer-coordinator" "$TMP/b/pacer-worker" "$TMP/b/static/index.html"; do
    grep -qF -- "$want" "$TMP/plan" || fail "make -n demo does not build $want"
done
if grep -E -- "-o $TMP/b/(tests|bench|tools)/" "$TMP/plan" >"$TMP/extra"; then
    head -5 "$TMP/extra"
    fail "make -n demo builds tests, benchmarks or tools"
fi
[ ! -e "$TMP/b" ] || fail "make -n demo wrote into $TMP/b"
echo "ok: make demo installs the build group and builds the coordinator, the worker and the dashboard only"

# ---- the demo without a terminal: a second, longer job after the first --------------------
cat >"$TMP/job.json" <<'JSON'
{"name": "demo-short", "model": "lenet5",
 "dataset": {"name": "fashion-mnist", "train_subset": 256, "test_subset": 100},
 "algorithm": {"name": "sgd"}, "workers": 1, "epochs": 1, "batch_size": 64, "seed": 7}
JSON
jq '.name = "demo-long" | .epochs = 100000' "$TMP/job.json" >"$TMP/long.json"
DEMO_PID=""
MAKE_PID=""
stop_demo() {
    [ -n "$DEMO_PID" ] && kill -TERM "$DEMO_PID" 2>/dev/null && wait "$DEMO_PID"
    [ -n "$MAKE_PID" ] && kill -TERM "$MAKE_PID" 2>/dev/null && wait "$MAKE_PID"
}
trap 'stop_demo; cleanup' EXIT
# new_demo - a state directory and a free port of its own (cleanup stops what runs in the
# last one).
new_demo() {
    STATE=$TMP/var$1
    PORT=$("$PROBE" free-port) || fail "netprobe free-port"
    BASE=http://127.0.0.1:$PORT
}
# stopped - the demo's coordinator and its embedded Redis are gone.
stopped() {
    ! curl -s -o /dev/null "$BASE/healthz" || fail "the coordinator still answers after the demo stopped"
    [ ! -f "$STATE/redis.pid" ] || ! kill -0 "$(cat "$STATE/redis.pid")" 2>/dev/null || fail "the embedded Redis is still running"
}
is_api_job_state() { [ "$(curl -s "$BASE/api/v1/jobs/$1" | jq -r .state)" = "$2" ]; }

new_demo 1
DEMO_SPEC=$TMP/job.json DEMO_SPEC2=$TMP/long.json DEMO_STATE=$STATE DEMO_LISTEN=127.0.0.1:$PORT BUILD=$BUILD \
    sh deploy/demo.sh </dev/null >"$TMP/demo.out" 2>&1 &
DEMO_PID=$!
second_id() { sed -n 's/^demo: submitted \(j-[0-9]*\) from .*long.json.*/\1/p' "$TMP/demo.out"; }
has_second() { [ -n "$(second_id)" ] || ! kill -0 "$DEMO_PID" 2>/dev/null; }
await 120 "the demo's second job to be submitted" has_second
id2=$(second_id)
[ -n "$id2" ] || { cat "$TMP/demo.out"; fail "the demo submitted no second job"; }
id1=$(sed -n 's/^demo: submitted \(j-[0-9]*\) from .*job.json.*/\1/p' "$TMP/demo.out" | head -1)
grep -q "demo: $id1 SUCCEEDED" "$TMP/demo.out" || { cat "$TMP/demo.out"; fail "the second job was submitted before the first succeeded"; }
lm=$(sed -n 's/^demo: submitted \(j-[0-9]*\) from deploy\/demo-job-gpt.json.*/\1/p' "$TMP/demo.out")
[ -n "$lm" ] || { cat "$TMP/demo.out"; fail "the demo submitted no language model"; }
grep -q "demo: $lm SUCCEEDED" "$TMP/demo.out" || { cat "$TMP/demo.out"; fail "the demo's language model $lm did not succeed"; }
grep -Eq "^demo: final next-token accuracy 0\.[0-9]+, validation loss [0-9.]+ nats per token \(perplexity [0-9.]+\)" "$TMP/demo.out" ||
    { cat "$TMP/demo.out"; fail "the demo does not give the language model's figures in its words"; }
grep -Eq "^demo: generated from $lm \(POST /api/v1/jobs/$lm/generate\): \"This License.+\"$" "$TMP/demo.out" ||
    { cat "$TMP/demo.out"; fail "the demo did not generate from its language model"; }
printf "ok: the demo's language model %s SUCCEEDED and generated:%s\n" "$lm" "$(grep "^demo: generated" "$TMP/demo.out" | cut -d: -f3-)"
await 60 "the second job $id2 to run" is_api_job_state "$id2" RUNNING
# still running well after the first one ended (polled, never a fixed sleep as the check)
ended=$(curl -s "$BASE/api/v1/jobs/$id1" | jq -r .finished)
later() { awk -v e="$ended" -v n="$(date +%s.%N)" 'BEGIN { exit !(n > e + 10) }'; }
await 60 "10 s to pass after the first job ended" later
is_api_job_state "$id2" RUNNING || { curl -s "$BASE/api/v1/jobs/$id2" | jq -c '{state, reason}'; fail "the second job does not run 10 s after the first ended"; }
echo "ok: the demo's second job $id2 still runs 10 s after the first, $id1, SUCCEEDED"

kill -TERM "$DEMO_PID"
wait "$DEMO_PID"
rc=$?
DEMO_PID=""
[ "$rc" = 0 ] || { cat "$TMP/demo.out"; fail "the demo exited $rc on SIGTERM, want 0"; }
stopped
s2=$(cut -d' ' -f1 "$STATE/jobs/$id2/pid" 2>/dev/null)
# (SIGKILLed processes take a moment to be gone)
job_gone() { [ -z "$s2" ] || [ "$(ps -eo sid=,stat= | awk -v s="$s2" '$1 == s && $2 !~ /^Z/' | wc -l)" = 0 ]; }
await 20 "the running job's processes to be gone" job_gone
echo "ok: SIGTERM stops the demo (exit 0), its running job, its coordinator and its Redis"

# ---- make demo: the dashboard after the job; SIGTERM to the demo is no error for make ---------
new_demo 2
DEMO_SPEC=$TMP/job.json DEMO_SPEC2="" DEMO_LM="" DEMO_STATE=$STATE DEMO_LISTEN=127.0.0.1:$PORT \
    make --no-print-directory -o demo-deps demo BUILD="$BUILD" </dev/null >"$TMP/make.out" 2>&1 &
MAKE_PID=$!
says_up() { grep -q "the dashboard stays up" "$TMP/make.out"; }
ended() { says_up || ! kill -0 "$MAKE_PID" 2>/dev/null; }
await 120 "the demo's job to end" ended
says_up || { cat "$TMP/make.out"; fail "the demo exited when its job ended"; }
grep -q "SUCCEEDED" "$TMP/make.out" || { cat "$TMP/make.out"; fail "the demo's job did not succeed"; }
[ "$(curl -s -o /dev/null -w '%{http_code}' "$BASE/")" = 200 ] || fail "the dashboard is not served after the job ended"
curl -sf "$BASE/api/v1/jobs" | jq -e '.jobs[0].state == "SUCCEEDED"' >/dev/null ||
    fail "the API does not show the finished job"
echo "ok: without a terminal the demo serves the dashboard after its job SUCCEEDED"
sh_pid=$(ps -o pid=,args= --ppid "$MAKE_PID" | awk '/deploy\/demo.sh/ { print $1; exit }')
[ -n "$sh_pid" ] || { ps -o pid=,args= --ppid "$MAKE_PID"; fail "no deploy/demo.sh under make"; }
kill -TERM "$sh_pid"
wait "$MAKE_PID"
rc=$?
MAKE_PID=""
[ "$rc" = 0 ] || { cat "$TMP/make.out"; fail "make demo exited $rc after SIGTERM to the demo, want 0"; }
! grep -q "Error" "$TMP/make.out" || { cat "$TMP/make.out"; fail "make reported an error for a demo stopped by SIGTERM"; }
stopped
echo "ok: SIGTERM to the demo under make demo: make exits 0, no error reported, nothing left running"

new_demo 3
DEMO_SPEC=$TMP/job.json DEMO_SPEC2="" DEMO_LM="" DEMO_STATE=$STATE DEMO_LISTEN=127.0.0.1:$PORT \
    make --no-print-directory -o demo-deps demo BUILD="$BUILD" </dev/null >"$TMP/make.out" 2>&1 &
MAKE_PID=$!
await 120 "the demo's job to end" ended
says_up || { cat "$TMP/make.out"; fail "the demo exited when its job ended"; }
kill -TERM "$MAKE_PID"
wait "$MAKE_PID"
rc=$?
MAKE_PID=""
! grep -q "Error" "$TMP/make.out" || { cat "$TMP/make.out"; fail "make reported an error after SIGTERM"; }
grep -q "demo: stopped" "$TMP/make.out" || { cat "$TMP/make.out"; fail "the demo did not stop on make's SIGTERM"; }
stopped
echo "ok: SIGTERM to make demo: no error reported, everything stopped (make's own status $rc, the signal's)"
echo "PASS"
