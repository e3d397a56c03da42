# One coordinator per Redis: pacer:coordinator:lock held by a coordinator on ANOTHER host
# (whose process this host cannot check) is respected until it expires, then taken.
#   1. The lock is held by "elsewhere" (6 s to live): a daemon started now refuses to
#      run, naming the holder, and a submitted job stays QUEUED.
#   2. Once the lock has expired a daemon starts, takes it and runs the queued job.
#   3. The running daemon's lock is taken by "elsewhere" again (as if that coordinator
#      had won it while this one was cut off): the daemon stops scheduling (a new job
#      stays QUEUED for as long as the foreign lock lives), and takes the lock back and
#      runs the job once it expires.
. tests/integration/coordinator_lib.inc
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
RDIR=$TMP/redis
mkdir -p "$RDIR"
REDIS_SOCK=$RDIR/redis.sock
redis-server --port 0 --unixsocket "$REDIS_SOCK" --dir "$RDIR" --save "" --appendonly no \
    --daemonize no --logfile "$RDIR/redis.log" &
EXTRA_PIDS="$EXTRA_PIDS $!"
await 10 "redis-server to answer" redis-cli -s "$REDIS_SOCK" PING
REDIS_URL_ARG="--redis unix://$REDIS_SOCK"
rcli() { redis-cli -s "$REDIS_SOCK" "$@"; }
LOCK=pacer:coordinator:lock
FOREIGN="elsewhere 4242 1 feed"
lock_free() { [ "$(rcli EXISTS $LOCK)" = 0 ]; }

# 1. A foreign holder: the daemon refuses to start.
rcli SET $LOCK "$FOREIGN" PX 6000 >/dev/null
expect_error 1 "another coordinator ($FOREIGN) is running on this Redis" "$COORD" --state-dir "$STATE" $REDIS_URL_ARG --listen 127.0.0.1:0
[ "$(rcli GET $LOCK)" = "$FOREIGN" ] || fail "the refused daemon touched the lock: $(rcli GET $LOCK)"
spec "$TMP/l.json" l 1
id=$(submit "$TMP/l.json")
[ "$(state_of "$id")" = QUEUED ] || fail "job $id is $(state_of "$id")"
echo "ok: lock of another host respected: the daemon refused to start, $id stays QUEUED"

# 2. Expired: the next daemon takes it and runs the job.
await 15 "the foreign lock to expire" lock_free
start_coord
case $(rcli GET $LOCK) in "$(hostname) $COORD_PID "*) ;; *) fail "lock after the start: $(rcli GET $LOCK)" ;; esac
cli wait "$id" --timeout 90 || { tail -20 "$STATE/jobs/$id/log"; fail "job $id did not succeed"; }
echo "ok: after expiry the daemon holds the lock and ran $id"

# 3. Lost while running, then expired again.
rcli SET $LOCK "$FOREIGN" PX 6000 >/dev/null
await 10 "the daemon to notice the foreign lock" grep -q "another coordinator ($FOREIGN) holds $LOCK; not scheduling" "$TMP/coord.log"
id2=$(submit "$TMP/l.json")
# While the foreign lock lives, the job stays queued (state read first: if it has left
# the queue while the lock still lives, the daemon scheduled without the lock).
n=0
while :; do
    st=$(state_of "$id2")
    [ "$(rcli GET $LOCK)" = "$FOREIGN" ] || break
    [ "$st" = QUEUED ] || { tail -20 "$TMP/coord.log"; fail "job $id2 is $st while $FOREIGN holds the lock"; }
    n=$((n + 1))
    sleep 0.2
done
[ $n -ge 5 ] || fail "the foreign lock was gone after $n checks (not held long enough to show anything)"
echo "ok: $id2 stayed QUEUED while $FOREIGN held the lock"
held_again() { [ "$(grep -c "holding $LOCK" "$TMP/coord.log")" -ge 2 ]; }
await 15 "the daemon to take the lock back" held_again
cli wait "$id2" --timeout 90 || { tail -20 "$STATE/jobs/$id2/log"; fail "job $id2 did not succeed"; }
echo "ok: the daemon took the expired lock back and ran $id2"
stop_coord
lock_free || fail "the daemon left the lock behind on exit: $(rcli GET $LOCK)"
echo "ok: the lock is released on exit"
