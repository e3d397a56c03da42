# Issue 13, secrets and the public API, against the real coordinator, real workers and a
# real redis-server that needs a password:
#  - the Redis password appears nowhere a user or a client can read it: not in any
#    process's argv (ps), the job log (with the logged mpirun command line), the
#    coordinator's log, /api/v1/cluster, /api/v1/jobs/{id}, /metrics or `cluster`; the
#    workers still authenticate (their records reach Redis) with the owner-only file
#    STATE/redis.password that --redis-password-file names; so do a simulated job's ranks
#    (pacer-sim passes the option on), where SimGrid is built;
#  - paths written into Redis by someone else (log, checkpoint_dir, summary_path, a job
#    name that is a path) are never opened or shown: the API derives them from the state
#    dir and the job id;
#  - without a token the API answers only a loopback Host (DNS rebinding) or an
#    --allowed-host, with 421 otherwise; event streams count against --sse-per-client;
#  - a submitted dataset.path must resolve (no "..", no symbolic link out) under a data
#    root: /usr/share/datasets and STATE/data by default, else the --data-root ones.
. tests/integration/coordinator_lib.inc
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
command -v curl >/dev/null || skip "curl not installed (make deps)"
command -v redis-cli >/dev/null || skip "redis-cli not installed (make deps)"
PROBE=$BUILD/tools/netprobe
[ -x "$PROBE" ] || fail "$PROBE not built (make)"

PW="pw-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')-x"
RDIR=$TMP/redis
mkdir -p "$RDIR"
# The password goes in redis-server's config file, so that no argv on this machine holds it.
printf 'requirepass %s\nbind 127.0.0.1\nsave ""\nappendonly no\n' "$PW" >"$RDIR/redis.conf"
rcli() { REDISCLI_AUTH=$PW redis-cli -p "$RPORT" --raw "$@"; }
# A free port can be taken between the probe and the bind: try again.
for try in 1 2 3 4 5; do
    RPORT=$("$PROBE" free-port) || fail "netprobe free-port"
    redis-server "$RDIR/redis.conf" --port "$RPORT" --dir "$RDIR" --daemonize no --logfile "$RDIR/redis.log" &
    REDIS_PID=$!
    EXTRA_PIDS="$EXTRA_PIDS $REDIS_PID"
    i=0
    while [ $i -lt 50 ] && [ "$(rcli PING 2>/dev/null)" != PONG ] && kill -0 "$REDIS_PID" 2>/dev/null; do
        sleep 0.1
        i=$((i + 1))
    done
    [ "$(rcli PING 2>/dev/null)" = PONG ] && break
    kill -9 "$REDIS_PID" 2>/dev/null
done
[ "$(rcli PING 2>/dev/null)" = PONG ] || fail "redis-server with a password did not come up"
[ "$(redis-cli -p "$RPORT" PING 2>&1)" != PONG ] || fail "redis-server answers without the password"
# The coordinator takes the URL from the environment (its own argv stays clean too).
export REDIS_URL="redis://:$PW@127.0.0.1:$RPORT"

base_url() { grep -o 'REST API and dashboard on http://[0-9.:]*' "$TMP/coord.log" | tail -1 | sed 's/.* on //'; }
get() { curl -s -o "$TMP/body" -w '%{http_code}' "$@"; }
# no_pw WHAT FILE - FILE must not hold the password.
no_pw() { ! grep -qF -- "$PW" "$2" || { grep -F -- "$PW" "$2" | head -3; fail "the Redis password is in $1"; }; }

mkdir -p "$STATE/data"
start_coord --listen 127.0.0.1:0
BASE=$(base_url)
[ -n "$BASE" ] || fail "no 'REST API ... on http://' line in the log"
[ "$(stat -c %a "$STATE/redis.password")" = 600 ] || fail "STATE/redis.password mode $(stat -c %a "$STATE/redis.password"), want 600"

# ---- a running job -------------------------------------------------------------------------------------------
spec "$TMP/job.json" sec 20
id=$(submit "$TMP/job.json")
await 60 "job $id to start its worker" has_worker "$id"
has_steps() { curl -s "$BASE/api/v1/jobs/$id/nodes" | jq -e '.ranks[0].step > 0' >/dev/null; }
await 90 "job $id's worker to report steps to Redis (it authenticated)" has_steps
ps -eo args >"$TMP/ps.txt"
no_pw "a process's argv (ps)" "$TMP/ps.txt"
grep -q -- "pacer-worker.*--redis redis://127.0.0.1:$RPORT .*--redis-password-file $STATE/redis.password" "$TMP/ps.txt" ||
    { grep pacer-worker "$TMP/ps.txt"; fail "the worker's argv lacks --redis-password-file or a bare URL"; }
[ "$(get "$BASE/api/v1/cluster")" = 200 ] || fail "GET /api/v1/cluster"
cp "$TMP/body" "$TMP/cluster.json"
no_pw "/api/v1/cluster" "$TMP/cluster.json"
jq -e --arg u "redis://:***@127.0.0.1:$RPORT" '.coordinator.redis == $u' "$TMP/cluster.json" >/dev/null ||
    fail "cluster: coordinator.redis is $(jq .coordinator.redis "$TMP/cluster.json"), want the URL masked"
[ "$(get "$BASE/metrics")" = 200 ] || fail "GET /metrics"
no_pw "/metrics" "$TMP/body"
[ "$(get "$BASE/api/v1/jobs/$id")" = 200 ] || fail "GET /api/v1/jobs/$id"
no_pw "/api/v1/jobs/$id" "$TMP/body"
cli cluster >"$TMP/cli_cluster.txt" 2>&1 || fail "cluster exited $?"
no_pw "pacer-coordinator cluster" "$TMP/cli_cluster.txt"
[ "$(get -X DELETE "$BASE/api/v1/jobs/$id")" = 202 ] || fail "cancel $id: $(cat "$TMP/body")"
await 60 "job $id to end" is_state "$id" CANCELLED
grep -q "=== pacer-coordinator .* job $id attempt 1:.*pacer-worker" "$STATE/jobs/$id/log" ||
    fail "the job log has no command line"
no_pw "the job log" "$STATE/jobs/$id/log"
[ "$(get "$BASE/api/v1/jobs/$id/logs")" = 200 ] || fail "GET logs"
no_pw "/api/v1/jobs/$id/logs" "$TMP/body"
no_pw "the coordinator's log" "$TMP/coord.log"
echo "ok: password in no argv, log, answer or metric; workers authenticate from STATE/redis.password (0600)"

# ---- a simulated job: pacer-sim passes the same file on to its ranks ----------------------------------------
# The sim launcher (coordinator/launch_sim.c) gives every simulated rank the worker's options,
# --redis-password-file among them: the password is in neither pacer-sim's argv nor its log.
if command -v smpirun >/dev/null 2>&1 && [ -x "$BUILD/pacer-sim" ] && [ -x "${SMPI_BUILD:-build-smpi}/pacer-worker" ]; then
    jq -n '{name: "simsec", model: "lenet5", workers: 2, batch_size: 32, epochs: 1, seed: 3, log_every: 0,
            dataset: {name: "fashion-mnist", train_subset: 512, test_subset: 128},
            optimizer: {lr: 0.01}, algorithm: {name: "asgd"},
            simulate: {enabled: true, slowdown: [1, 2], deterministic: true}}' >"$TMP/sim.json"
    sid=$(submit "$TMP/sim.json")
    sim_ended() { is_state "$sid" SUCCEEDED || is_state "$sid" FAILED; }
    await 180 "simulated job $sid to end" sim_ended
    is_state "$sid" SUCCEEDED || { tail -20 "$STATE/jobs/$sid/log"; fail "simulated job $sid: $(field_of "$sid" reason)"; }
    grep -q -- "pacer-sim.* -- .*--redis redis://127.0.0.1:$RPORT .*--redis-password-file $STATE/redis.password" \
        "$STATE/jobs/$sid/log" || { head -3 "$STATE/jobs/$sid/log"; fail "pacer-sim's command line lacks --redis-password-file or a bare URL"; }
    no_pw "the simulated job's log" "$STATE/jobs/$sid/log"
    [ "$(rcli XLEN "pacer:job:$sid:metrics")" -gt 0 ] 2>/dev/null ||
        fail "the simulated ranks wrote no metrics to Redis (did they authenticate?)"
    echo "ok: simulated job $sid: its ranks authenticate from STATE/redis.password; the password is in neither argv nor log"
else
    echo "skip-part: no SimGrid build (make smpi): the simulated job's password path is not checked"
fi

# ---- paths read back from Redis are never trusted -------------------------------------------------------
mkdir -p "$TMP/evil"
echo "TOPSECRET-$PW-file" >"$TMP/secret.txt"
cp "$TMP/secret.txt" "$TMP/evil/sec.ckpt"
printf '{"TOPSECRET": 1}' >"$TMP/evil/summary.json"
rcli HSET "pacer:job:$id" log "$TMP/secret.txt" checkpoint_dir "$TMP/evil" summary_path "$TMP/evil/summary.json" \
    >/dev/null || fail "HSET"
sleep 1   # past the API's cache of job answers (--api-cache-ms, 500 by default)
[ "$(get "$BASE/api/v1/jobs/$id")" = 200 ] || fail "GET job after HSET"
jq -e --arg l "$STATE/jobs/$id/log" --arg c "$STATE/jobs/$id/checkpoints" \
    '.log == $l and .checkpoint_dir == $c and (.checkpoint | startswith($c + "/"))' "$TMP/body" >/dev/null ||
    { cat "$TMP/body"; fail "the job shows paths from Redis"; }
! grep -q TOPSECRET "$TMP/body" || fail "GET job read the summary Redis pointed to"
[ "$(get "$BASE/api/v1/jobs/$id/logs")" = 200 ] || fail "GET logs after HSET"
! grep -q TOPSECRET "$TMP/body" || fail "GET logs read the file Redis pointed to"
grep -q "job $id attempt 1" "$TMP/body" || fail "GET logs: not the job's own log"
rcli HSET "pacer:job:$id" name sec >/dev/null
code=$(get "$BASE/api/v1/jobs/$id/checkpoint")
! grep -q TOPSECRET "$TMP/body" || fail "GET checkpoint sent the file Redis pointed to"
# A name that is a path: not a checkpoint file name, so there is no checkpoint.
rcli HSET "pacer:job:$id" name "../../../../$(basename "$TMP")/evil/sec" >/dev/null
[ "$(get "$BASE/api/v1/jobs/$id/checkpoint")" = 404 ] || fail "GET checkpoint with a name that is a path: $(cat "$TMP/body")"
! grep -q TOPSECRET "$TMP/body" || fail "GET checkpoint followed a name that is a path"
echo "ok: log, checkpoint and summary paths from the state dir and the id (checkpoint $code), never from Redis"

# ---- dataset.path under a data root ------------------------------------------------------------------------
# dpost PATH - POSTs a small job reading PATH; the status, the answer in $TMP/body.
dpost() {
    printf '{"name":"dp","model":"lenet5","dataset":{"name":"fashion-mnist","path":"%s"},"epochs":1}' "$1" >"$TMP/dp.json"
    curl -s -o "$TMP/body" -w '%{http_code}' -H 'Content-Type: application/json' --data-binary @"$TMP/dp.json" "$BASE/api/v1/jobs"
}
# refused PATH - 400 naming dataset.path, and the answer shows nothing of what is there.
refused() {
    code=$(dpost "$1")
    [ "$code" = 400 ] && jq -e '.field == "dataset.path"' "$TMP/body" >/dev/null ||
        { cat "$TMP/body"; fail "dataset.path $1: HTTP $code, want 400 naming dataset.path"; }
    ! grep -q "root:" "$TMP/body" || fail "dataset.path $1: the answer quotes a file"
}
accepted() {
    code=$(dpost "$1")
    [ "$code" = 201 ] || { cat "$TMP/body"; fail "dataset.path $1: HTTP $code, want 201"; }
    curl -s -X DELETE "$BASE/api/v1/jobs/$(jq -r .id "$TMP/body")" >/dev/null
}
mkdir -p "$STATE/data/fm" "$TMP/mine"
# the two places accepted below hold Fashion-MNIST's files (linked: the directory is what
# is checked; an empty one is 422, datasets_builtin.sh)
for f in "$FASHION"/*; do ln -s "$f" "$STATE/data/fm/" && ln -s "$f" "$TMP/mine/"; done
ln -s /etc "$STATE/data/etc"
refused /etc
refused /etc/passwd
refused "$FASHION/../../../../etc"
refused "$STATE/data/etc"
refused "$STATE/data/../jobs"
refused data/fm
refused "$TMP/mine"
accepted "$FASHION"
accepted "$STATE/data/fm"
echo "ok: dataset.path: 400 outside /usr/share/datasets and STATE/data (.., a link out, relative), 201 inside"

# ---- DNS rebinding and the per-client stream cap ---------------------------------------------------------
[ "$(get -H 'Host: attacker.example' "$BASE/api/v1/jobs")" = 421 ] || fail "Host attacker.example: want 421"
jq -e '.type == "urn:pacer:problem:misdirected-request"' "$TMP/body" >/dev/null || fail "421: $(cat "$TMP/body")"
[ "$(get -H 'Host: attacker.example' "$BASE/")" = 421 ] || fail "Host attacker.example on /: want 421"
[ "$(get -H "Host: localhost:${BASE##*:}" "$BASE/api/v1/jobs")" = 200 ] || fail "Host localhost: want 200"
[ "$(get -H 'Host: pacer.lab' "$BASE/api/v1/jobs")" = 421 ] || fail "Host pacer.lab before --allowed-host: want 421"
stop_coord
start_coord --listen 127.0.0.1:0 --allowed-host pacer.lab --sse-per-client 1 --data-root "$TMP/mine"
BASE=$(base_url)
accepted "$TMP/mine"
refused "$FASHION"
expect_error 1 "--data-root" "$COORD" --state-dir "$TMP/other" --listen 127.0.0.1:0 --data-root "$TMP/missing"
[ "$(get -H 'Host: pacer.lab:8080' "$BASE/api/v1/jobs")" = 200 ] || fail "Host pacer.lab with --allowed-host: want 200"
[ "$(get -H 'Host: attacker.example' "$BASE/api/v1/jobs")" = 421 ] || fail "Host attacker.example: want 421"
curl -s -N "$BASE/api/v1/events" >"$TMP/s1.txt" 2>&1 &
S1=$!
EXTRA_PIDS="$EXTRA_PIDS $S1"
await 10 "the first event stream to open" sh -c "curl -s '$BASE/metrics' | grep -q '^pacer_sse_streams 1'"
[ "$(get --max-time 5 "$BASE/api/v1/events")" = 429 ] || fail "second stream from one client: want 429"
jq -e '.type == "urn:pacer:problem:too-many-streams"' "$TMP/body" >/dev/null || fail "429: $(cat "$TMP/body")"
kill "$S1" 2>/dev/null
echo "ok: 421 for a Host that is not loopback or --allowed-host; 429 beyond --sse-per-client; --data-root replaces the defaults"
stop_coord
