#!/bin/sh
# tests/integration/demo_serves.sh - issue 42 item 15: `make demo` builds and installs only
# what the demo runs, and the demo, run without a terminal, keeps serving the dashboard
# after its job ends until it is told to stop.
#
#   - make -n demo (into an empty build directory, so that everything shows) installs the
#     build group only (not the test group and its npm tools) and builds the coordinator,
#     the worker and the dashboard, no unit test, benchmark or tool;
#   - deploy/demo.sh with a short job (DEMO_SPEC), stdin not a terminal: once the job has
#     SUCCEEDED the dashboard and the API still answer; SIGTERM then stops the
#     coordinator and its embedded Redis (exit 143), and nothing answers any more.
. tests/integration/coordinator_lib.inc
command -v curl >/dev/null || skip "curl not installed (make deps)"
need_dir "$FASHION" "Fashion-MNIST (make deps)"
PROBE=$BUILD/tools/netprobe
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

# ---- the demo without a terminal: serves until SIGTERM ------------------------------------
cat >"$TMP/job.json" <<'JSON'
{"name": "demo-short", "model": "lenet5",
 "dataset": {"name": "fashion-mnist", "train_subset": 256, "test_subset": 100},
 "algorithm": {"name": "sgd"}, "workers": 1, "epochs": 1, "batch_size": 64, "seed": 7}
JSON
PORT=$("$PROBE" free-port) || fail "netprobe free-port"
BASE=http://127.0.0.1:$PORT
DEMO_PID=""
stop_demo() { [ -n "$DEMO_PID" ] && kill -TERM "$DEMO_PID" 2>/dev/null && wait "$DEMO_PID"; }
trap 'stop_demo; cleanup' EXIT
DEMO_SPEC=$TMP/job.json DEMO_STATE=$STATE DEMO_LISTEN=127.0.0.1:$PORT BUILD=$BUILD \
    sh deploy/demo.sh </dev/null >"$TMP/demo.out" 2>&1 &
DEMO_PID=$!
says_up() { grep -q "the dashboard stays up" "$TMP/demo.out"; }
ended() { says_up || ! kill -0 "$DEMO_PID" 2>/dev/null; }
await 120 "the demo's job to end" ended
says_up || { cat "$TMP/demo.out"; fail "the demo exited when its job ended"; }
grep -q "SUCCEEDED" "$TMP/demo.out" || { cat "$TMP/demo.out"; fail "the demo's job did not succeed"; }
kill -0 "$DEMO_PID" || fail "the demo is gone after its job ended"
[ "$(curl -s -o /dev/null -w '%{http_code}' "$BASE/")" = 200 ] || fail "the dashboard is not served after the job ended"
curl -sf "$BASE/api/v1/jobs" | jq -e '.jobs[0].state == "SUCCEEDED"' >/dev/null ||
    fail "the API does not show the finished job"
echo "ok: without a terminal the demo serves the dashboard after its job SUCCEEDED"

kill -TERM "$DEMO_PID"
wait "$DEMO_PID"
rc=$?
DEMO_PID=""
[ "$rc" = 143 ] || { cat "$TMP/demo.out"; fail "the demo exited $rc on SIGTERM, want 143"; }
! curl -s -o /dev/null "$BASE/healthz" || fail "the coordinator still answers after the demo stopped"
[ ! -f "$STATE/redis.pid" ] || ! kill -0 "$(cat "$STATE/redis.pid")" 2>/dev/null || fail "the embedded Redis is still running"
echo "ok: SIGTERM stops the demo (143), its coordinator and its Redis"
echo "PASS"
