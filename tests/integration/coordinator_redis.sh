# Redis restarted mid-job. (1) An external redis-server started by this test is killed
# with SIGKILL while a job runs and started again on the same AOF once the job has made
# progress without it; (2) the daemon's embedded redis-server is killed and the daemon
# starts it again. Both times the coordinator reconnects, the job is not restarted (a
# heartbeat that cannot be read is unknown, not stale, and once Redis is back the ranks
# get a full timeout to report again) and it SUCCEEDS.
# The daemon runs with a 5 s heartbeat timeout and the external Redis stays down for
# longer than that, so a coordinator that took an unreadable or old heartbeat for a
# stale one would restart the job (coordinator_heartbeat.sh shows that the same timeout
# does restart a job whose ranks fall silent).
. tests/integration/coordinator_lib.inc
HEARTBEAT_TIMEOUT=5
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

start_redis
REDIS_URL_ARG="--redis unix://$REDIS_SOCK"
start_coord
spec "$TMP/r.json" r 30
id=$(submit "$TMP/r.json")
ck=$STATE/jobs/$id/checkpoints/r.ckpt
await 30 "job $id to checkpoint" has_checkpoint "$id" r
kill -9 "$REDIS_PID"
wait "$REDIS_PID" 2>/dev/null
await 10 "the coordinator to notice" grep -q "redis: connection lost" "$TMP/coord.log"
down_at=$(now)
before=$(stat -c %Y.%s "$ck")
await 30 "job $id to checkpoint again while Redis is down" ckpt_changed "$ck" "$before"
down_long() { awk -v n="$(now)" -v d="$down_at" -v t="$HEARTBEAT_TIMEOUT" 'BEGIN { exit !(n - d > t + 3) }'; }
await 30 "Redis to have been down for more than the heartbeat timeout + 3 s" down_long
has_worker "$id" || fail "job $id is not running any more"
start_redis
await 10 "the coordinator to reconnect" grep -q "redis: connected to" "$TMP/coord.log"
cli wait "$id" --timeout 90 || { tail -20 "$STATE/jobs/$id/log"; fail "job $id did not succeed"; }
[ "$(field_of "$id" restarts)" = 0 ] || fail "job $id was restarted: $(field_of "$id" reason)"
echo "ok: external Redis killed and restarted mid-job; $id $(job_states "$id")"
stop_coord

# The embedded server: the daemon supervises it too.
STATE=$TMP/var2
REDIS_URL_ARG=""
REDIS_SOCK=$STATE/redis.sock
: >"$TMP/coord.log"
start_coord
id=$(submit "$TMP/r.json")
await 30 "job $id to checkpoint" has_checkpoint "$id" r
kill -9 "$(cat "$STATE/redis.pid")"
await 20 "the daemon to restart its Redis" grep -q "embedded redis: restarted" "$TMP/coord.log"
cli wait "$id" --timeout 90 || { tail -20 "$STATE/jobs/$id/log"; fail "job $id did not succeed"; }
[ "$(field_of "$id" restarts)" = 0 ] || fail "job $id was restarted: $(field_of "$id" reason)"
echo "ok: embedded Redis killed mid-job and restarted by the daemon; $id $(job_states "$id")"
stop_coord
