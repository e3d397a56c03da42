# Issue 13, admission and exhaustion, against the real coordinator (and, for the last
# part, real workers):
#  - a submission with more ranks than the cluster's slots times --oversubscribe-factor
#    is refused at submission with 422 naming "workers", and nothing is stored; one that
#    fits is accepted;
#  - memory: with --host-memory-mb 65536, a job whose ranks need more by the estimate
#    (common/memest.h) is refused with 422 naming the figures; a worker under ulimit -v
#    refuses a spec it cannot hold before allocating (exit 2, the figures), no abort;
#  - Slowloris: 1,100 connections from one address (127.0.0.2) that never finish their
#    headers, more than the server's whole connection limit (1024): the per-client limit
#    (--max-conns-per-client) closes all but a few at once, so /healthz and the API still
#    answer another client; the rest are closed after --header-timeout; libmicrohttpd's
#    line per refused connection is rate-limited in the coordinator's log; a client
#    that trickles its headers a byte every 0.2 s is cut off at the --header-timeout
#    deadline (not an idle timeout) while /healthz answers;
#  - job history: --keep-jobs N deletes the oldest finished jobs beyond N, with their
#    directories; --keep-jobs-age takes a unit (7d) and refuses a bad one (the age rule
#    itself: test_coordinator's test_prune_by_age);
#  - after Redis lost its data and ids began again at j-1, the new j-1 does not inherit
#    the old j-1's directory (checkpoint, log): the coordinator moves it aside.
. tests/integration/coordinator_lib.inc
command -v curl >/dev/null || skip "curl not installed (make deps)"
PROBE=$BUILD/tools/netprobe
[ -x "$PROBE" ] || fail "$PROBE not built (make)"

base_url() { grep -o 'REST API and dashboard on http://[0-9.:]*' "$TMP/coord.log" | tail -1 | sed 's/.* on //'; }
post() { curl -s -o "$TMP/body" -w '%{http_code}' -H 'Content-Type: application/json' --data-binary @"$1" "$BASE/api/v1/jobs"; }

# --keep-jobs-age: a bad unit is refused before anything starts
"$BUILD/pacer-coordinator" --keep-jobs-age 7x --state-dir "$TMP/none" >"$TMP/age.out" 2>&1 && fail "--keep-jobs-age 7x accepted"
grep -q 'keep-jobs-age.*not a duration' "$TMP/age.out" || { cat "$TMP/age.out"; fail "--keep-jobs-age 7x: no message"; }
start_coord --listen 127.0.0.1:0 --oversubscribe-factor 1 --max-conns-per-client 16 --header-timeout 3 --keep-jobs 3 \
    --keep-jobs-age 7d --host-memory-mb 65536
BASE=$(base_url)
[ -n "$BASE" ] || fail "no 'REST API ... on http://' line in the log"

# ---- ranks beyond slots x factor: 422 at submission -----------------------------------------------------
slots=$(curl -s "$BASE/api/v1/cluster" | jq -r '.coordinator.slots | tonumber')
[ "$slots" -ge 1 ] 2>/dev/null || fail "cluster: no slot count ($slots)"
# ssgd: world = workers
printf '{"name":"big","model":"mlp","dataset":{"name":"fashion-mnist"},"algorithm":{"name":"ssgd"},"workers":%d,"epochs":1}' $((slots + 1)) >"$TMP/big.json"
code=$(post "$TMP/big.json")
[ "$code" = 422 ] || { cat "$TMP/body"; fail "POST with $((slots + 1)) workers on $slots slots x 1: HTTP $code, want 422"; }
jq -e '.type == "urn:pacer:problem:does-not-fit" and .status == 422 and .field == "workers"
       and (.detail | test("oversubscribe-factor"))' "$TMP/body" >/dev/null ||
    { cat "$TMP/body"; fail "422: not a does-not-fit problem naming workers"; }
[ "$(curl -s "$BASE/api/v1/jobs" | jq '.jobs | length')" = 0 ] || fail "the refused job was stored"
# asgd has a parameter server on rank 0: world = workers + 1
printf '{"name":"ps","model":"mlp","dataset":{"name":"fashion-mnist"},"algorithm":{"name":"asgd"},"workers":%d,"epochs":1}' "$slots" >"$TMP/ps.json"
code=$(post "$TMP/ps.json")
[ "$code" = 422 ] || { cat "$TMP/body"; fail "POST asgd with $slots workers (world $((slots + 1))) on $slots slots: HTTP $code, want 422"; }
printf '{"name":"fits","model":"mlp","dataset":{"name":"fashion-mnist"},"algorithm":{"name":"ssgd"},"workers":%d,"epochs":1}' "$slots" >"$TMP/fits.json"
code=$(post "$TMP/fits.json")
[ "$code" = 201 ] || [ "$code" = 202 ] || { cat "$TMP/body"; fail "POST with $slots workers on $slots slots: HTTP $code"; }
id=$(jq -r .id "$TMP/body")
curl -s -X DELETE "$BASE/api/v1/jobs/$id" >/dev/null
echo "ok: 422 does-not-fit (field workers) beyond $slots slots x 1, for ssgd and asgd's extra rank; $slots workers accepted"

# ---- memory: more than --host-memory-mb by the estimate: 422 with the figures -----------------------------
grep -q 'memory per host 64.0 GiB' "$TMP/coord.log" || fail "the coordinator did not log --host-memory-mb"
# resnet20 with a batch bound of 65536: about 319 GiB per rank of activations
printf '{"name":"huge","model":"resnet20","dataset":{"name":"cifar10"},"algorithm":{"name":"ssgd","max_batch":65536},"workers":1,"epochs":1}' >"$TMP/huge.json"
code=$(post "$TMP/huge.json")
[ "$code" = 422 ] || { cat "$TMP/body"; fail "POST of a 319 GiB job on 64 GiB hosts: HTTP $code, want 422"; }
jq -e '.type == "urn:pacer:problem:does-not-fit" and (has("field") | not)
       and (.detail | test("estimated memory [0-9.]+ GiB = 1 rank x .*largest batch 65536.* is more than the 64.0 GiB of host .*--host-memory-mb"))' \
    "$TMP/body" >/dev/null || { cat "$TMP/body"; fail "422: the reason does not name the figures"; }
[ "$(curl -s "$BASE/api/v1/jobs" | jq '.jobs | length')" = 1 ] || fail "the job refused for memory was stored"
echo "ok: 422 $(jq -r .detail "$TMP/body")"
# The worker checks before it allocates: under ulimit -v an mlp with a batch bound of
# 65536 (about 645 MiB) is refused with the figures and exit 2 (no data set needed).
printf '{"name":"w","model":"mlp","dataset":{"name":"fashion-mnist"},"algorithm":{"name":"sgd","max_batch":65536},"workers":1,"epochs":1}' >"$TMP/wmem.json"
if nm -D "$BUILD/pacer-worker" 2>/dev/null | grep -q __asan_init; then
    # AddressSanitizer reserves terabytes of shadow address space at start: no ulimit -v
    # lets it run (make check-asan runs this script on build-san).
    echo "skip: the worker under ulimit -v (an AddressSanitizer build cannot start under one)"
else
    (ulimit -v 600000 && exec "$BUILD/pacer-worker" --spec "$TMP/wmem.json") >"$TMP/wmem.out" 2>&1
    wrc=$?
    [ "$wrc" = 2 ] || { cat "$TMP/wmem.out"; fail "worker under ulimit -v 600000: exit $wrc, want 2"; }
    grep -q 'estimated memory [0-9]* MiB = 1 rank .*largest batch 65536.*RLIMIT_AS (ulimit -v 586 MiB' "$TMP/wmem.out" ||
        { cat "$TMP/wmem.out"; fail "the worker's refusal does not name the figures"; }
    echo "ok: worker under ulimit -v: $(cat "$TMP/wmem.out")"
fi

# ---- Slowloris from one address --------------------------------------------------------------------------
port=${BASE##*:}
"$PROBE" halfopen 127.0.0.1 "$port" 127.0.0.2 1100 20 >"$TMP/probe.txt" 2>&1 &
PROBE_PID=$!
EXTRA_PIDS="$EXTRA_PIDS $PROBE_PID"
await 60 "the 1,100 connections to be tried" grep -q '^closed at once' "$TMP/probe.txt"
cat "$TMP/probe.txt"
connected=$(sed -n 's/^connected \([0-9]*\) .*/\1/p' "$TMP/probe.txt")
at_once=$(sed -n 's/^closed at once \([0-9]*\)/\1/p' "$TMP/probe.txt")
[ "$((connected - at_once))" -le 16 ] || fail "$((connected - at_once)) connections from 127.0.0.2 still open, limit 16"
# While the client holds its connections, another one is served (the figure is the time it took).
t=$(curl -s -o "$TMP/body" -w '%{http_code} %{time_total}' --max-time 10 "$BASE/healthz") || fail "/healthz: no answer"
[ "${t% *}" = 200 ] || fail "/healthz during the flood: HTTP $t"
[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$BASE/api/v1/jobs")" = 200 ] || fail "/api/v1/jobs during the flood"
echo "ok: $connected connections from 127.0.0.2, $at_once closed at once; /healthz answered in ${t#* } s"
await 30 "the header timeout to close the rest" grep -q '^open 0 after' "$TMP/probe.txt"
cat "$TMP/probe.txt" | tail -2
nlog=$(grep -c '^.*http: ' "$TMP/coord.log")
[ "$nlog" -le 60 ] || { grep 'http: ' "$TMP/coord.log" | tail -5; fail "$nlog http: lines in the log for one flood"; }
echo "ok: the rest closed by --header-timeout 3; $nlog http: lines in the coordinator's log"

# ---- --header-timeout is a deadline: a client trickling a byte every 0.2 s (never idle
# long enough for an idle timeout) is cut off about 3 s after it connected ------------
cat >"$TMP/trickle.py" <<'EOF'
import select, socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
t0 = time.monotonic()
req = b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Slow: " + b"a" * 4000
sent, why = 0, "open"
while time.monotonic() - t0 < 20:
    try:
        s.send(req[sent:sent + 1])
        sent += 1
    except OSError as e:
        why = "send-failed"
        break
    r, _, _ = select.select([s], [], [], 0.2)
    if r:
        try:
            data = s.recv(4096)
        except OSError as e:
            why = "recv-failed"
            break
        why = "closed" if not data else "answered"
        break
print("%s after %.1f s, %d bytes sent" % (why, time.monotonic() - t0, sent))
EOF
python3 "$TMP/trickle.py" "$port" >"$TMP/trickle.txt" 2>&1 &
TRICKLE_PID=$!
EXTRA_PIDS="$EXTRA_PIDS $TRICKLE_PID"
sleep 1
t=$(curl -s -o /dev/null -w '%{http_code} %{time_total}' --max-time 5 "$BASE/healthz")
[ "${t% *}" = 200 ] || fail "/healthz while a client trickles its headers: $t"
wait "$TRICKLE_PID"
cat "$TMP/trickle.txt"
read -r why _ secs _ <"$TMP/trickle.txt"
case "$why" in closed | recv-failed | send-failed) ;; *) fail "the trickling client was not cut off" ;; esac
awk -v s="$secs" 'BEGIN { exit !(s >= 2.5 && s < 12) }' || fail "cut off after $secs s, want about 3 (--header-timeout 3)"
grep -q 'request headers were not complete 3 s after' "$TMP/coord.log" || fail "no log line for the cut-off connection"
echo "ok: a client trickling its headers was cut off after $secs s (--header-timeout 3); /healthz answered in ${t#* } s meanwhile"

# ---- job history retention (--keep-jobs 3) -----------------------------------------------------------------
for k in 1 2 3 4; do
    [ "$(post "$TMP/fits.json")" = 201 ] || fail "POST for retention: $(cat "$TMP/body")"
    curl -s -X DELETE "$BASE/api/v1/jobs/$(jq -r .id "$TMP/body")" >/dev/null
done
ids() { curl -s "$BASE/api/v1/jobs" | jq -r '[.jobs[].id] | sort | join(" ")'; }
kept() { [ "$(ids)" = "j-3 j-4 j-5" ]; }
await 60 "history to shrink to the newest 3 finished jobs" kept
[ "$(curl -s -o /dev/null -w '%{http_code}' "$BASE/api/v1/jobs/j-1")" = 404 ] || fail "j-1 is still there"
[ ! -e "$STATE/jobs/j-1" ] && [ ! -e "$STATE/jobs/j-2" ] || fail "the deleted jobs' directories are still there"
[ -d "$STATE/jobs/j-5" ] || [ "$(field_of j-5 started)" = null ] || fail "j-5's directory went with the others"
grep -q 'retention: deleted' "$TMP/coord.log" || fail "the coordinator did not log the deletion"
echo "ok: --keep-jobs 3 kept $(ids), deleted j-1 and j-2 with their directories"
stop_coord

# ---- Redis lost its data: a new j-1 never inherits the old j-1's directory -------------------------------
[ -d "$FASHION" ] || { echo "skip: the rest needs Fashion-MNIST at $FASHION"; exit 0; }
rm -rf "$STATE"
start_coord --listen 127.0.0.1:0
spec "$TMP/first.json" same 1
id=$(submit "$TMP/first.json")
[ "$id" = j-1 ] || fail "first job: $id, want j-1"
await 120 "the first j-1 to succeed" is_state j-1 SUCCEEDED
has_checkpoint j-1 same || fail "the first j-1 left no checkpoint"
stop_coord
# The embedded Redis stopped with the daemon; its data goes, so ids begin again.
rm -rf "$STATE"/appendonlydir "$STATE"/*.aof "$STATE"/dump.rdb
start_coord --listen 127.0.0.1:0
sed 's/"seed": 7/"seed": 8/' "$TMP/first.json" >"$TMP/second.json"
id=$(submit "$TMP/second.json")
[ "$id" = j-1 ] || fail "after Redis lost its data the next job is $id, want j-1"
ended() { is_state j-1 SUCCEEDED || is_state j-1 FAILED; }
await 120 "the second j-1 to end" ended
is_state j-1 SUCCEEDED || { tail -20 "$STATE/jobs/j-1/log"; fail "the second j-1: $(field_of j-1 reason)"; }
old=$(ls -d "$STATE"/jobs/j-1.old-* 2>/dev/null | head -1)
[ -n "$old" ] && [ -s "$old/checkpoints/same.ckpt" ] || fail "the first j-1's directory was not moved aside with its checkpoint"
grep -q "moved to $old" "$TMP/coord.log" || fail "the coordinator did not say where it moved the directory"
[ "$(grep -c '=== pacer-coordinator .* job j-1 attempt' "$STATE/jobs/j-1/log")" = 1 ] || fail "the new j-1's log holds the old one's"
! grep -q 'resumed from' "$STATE/jobs/j-1/log" || fail "the new j-1 resumed from the old checkpoint"
echo "ok: after Redis lost its data, the old j-1's directory moved to $(basename "$old"); the new j-1 started clean"
stop_coord
