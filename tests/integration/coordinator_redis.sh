# Redis restarted mid-job. (1) An external redis-server started by this test is killed
# with SIGKILL while a job runs and started again on the same AOF once the job has made
# progress without it; (2) the daemon's embedded redis-server is killed and the daemon
# starts it again. Both times the coordinator reconnects and the job is not restarted (a
# heartbeat that cannot be read is unknown, not stale, and once Redis is back the ranks
# get a full timeout to report again): it keeps running, its heartbeats reach Redis again,
# and it is still the first attempt a heartbeat timeout + 3 s after the reconnect; then it
# is cancelled (the job is long, so that no machine is fast enough to finish it first).
# The daemon runs with a 10 s heartbeat timeout and the external Redis stays down for
# longer than that, so a coordinator that took an unreadable or old heartbeat for a
# stale one would restart the job (coordinator_heartbeat.sh shows that such a timeout
# does restart a job whose ranks fall silent). 10 s, not less: a worker sends its first
# heartbeat once its data is loaded, which a loaded machine can take seconds to do.
. tests/integration/coordinator_lib.inc
HEARTBEAT_TIMEOUT=10
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"

RDIR=$TMP/redis
mkdir -p "$RDIR"
REDIS_SOCK=$RDIR/redis.sock
start_redis() {
    redis-server --port 0 --unixsocket "$REDIS_SOCK" --dir "$RDIR" --appendonly yes --save "" \
        --daemonize no --logfile "$RDIR/redis.log" &
    REDIS_PID=$!
    EXTRA_PIDS="$EXTRA_PIDS $REDIS_PID"
    await 10 "redis-server to answer" redis-cli -s "$REDIS_SOCK" PING
}
ckpt_changed() { [ "$(stat -c %Y.%s "$1")" != "$2" ]; }

# still_first_attempt ID - RUNNING, never restarted, and its rank 0 heartbeat fresh.
fresh() { [ "$(cli nodes "$1" 2>/dev/null | jq '.ranks[0].heartbeat_age_s < 5')" = true ]; }
after() { awk -v n="$(now)" -v t="$1" 'BEGIN { exit !(n > t) }'; }
not_restarted() { # ID WHAT
    await 30 "job $1's heartbeats to reach Redis again" fresh "$1"
    until_t=$(awk -v n="$(now)" -v t="$HEARTBEAT_TIMEOUT" 'BEGIN { printf "%.3f", n + t + 3 }')
    while ! after "$until_t"; do
        [ "$(state_of "$1")" = RUNNING ] && [ "$(field_of "$1" attempts)" = 1 ] ||
            { tail -20 "$TMP/coord.log"; fail "job $1 is $(state_of "$1") (attempt $(field_of "$1" attempts)) after $2"; }
        sleep 0.5
    done
    cli cancel "$1" >/dev/null || fail "cancel $1"
    await 60 "job $1 to be CANCELLED" is_state "$1" CANCELLED
    [ "$(field_of "$1" restarts)" = 0 ] || fail "job $1 was restarted: $(field_of "$1" reason)"
    [ "$(job_states "$1")" = "QUEUED RUNNING CANCELLED " ] || fail "states of $1: $(job_states "$1")"
    echo "ok: $2: job $1 ran on, reported again and was never restarted ($(job_states "$1"))"
}

start_redis
REDIS_URL_ARG="--redis unix://$REDIS_SOCK"
start_coord
spec "$TMP/r.json" r 1000
# The job only has to keep running: an emulated slowdown of 4 keeps it to a quarter of a
# core (tests/run.sh runs this script beside the others while it waits).
jq '. + {"emulate": {"slowdown": [4]}}' "$TMP/r.json" >"$TMP/r4.json" && mv "$TMP/r4.json" "$TMP/r.json"
id=$(submit "$TMP/r.json")
ck=$STATE/jobs/$id/checkpoints/r.ckpt
await 60 "job $id to checkpoint" has_checkpoint "$id" r
kill -9 "$REDIS_PID"
wait "$REDIS_PID" 2>/dev/null
await 10 "the coordinator to notice" grep -q "redis: connection lost" "$TMP/coord.log"
down_at=$(now)
before=$(stat -c %Y.%s "$ck")
await 60 "job $id to checkpoint again while Redis is down" ckpt_changed "$ck" "$before"
down_long() { awk -v n="$(now)" -v d="$down_at" -v t="$HEARTBEAT_TIMEOUT" 'BEGIN { exit !(n - d > t + 3) }'; }
await 60 "Redis to have been down for more than the heartbeat timeout + 3 s" down_long
has_worker "$id" || { tail -20 "$TMP/coord.log"; tail -5 "$STATE/jobs/$id/log"; fail "job $id is not running any more"; }
start_redis
await 10 "the coordinator to reconnect" grep -q "redis: connected to" "$TMP/coord.log"
not_restarted "$id" "external Redis killed for $(awk -v n="$(now)" -v d="$down_at" 'BEGIN { printf "%.0f", n - d }') s and restarted"
stop_coord

# The embedded server: the daemon supervises it too.
STATE=$TMP/var2
REDIS_URL_ARG=""
REDIS_SOCK=$STATE/redis.sock
: >"$TMP/coord.log"
start_coord
id=$(submit "$TMP/r.json")
await 60 "job $id to checkpoint" has_checkpoint "$id" r
kill -9 "$(cat "$STATE/redis.pid")"
await 20 "the daemon to restart its Redis" grep -q "embedded redis: restarted" "$TMP/coord.log"
not_restarted "$id" "embedded Redis killed and restarted by the daemon"
stop_coord
