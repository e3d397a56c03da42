# Webhooks against the real coordinator: a receiver in the test (tests/webhook_receiver.py)
# gets each event of the jobs it subscribed to once, with a valid HMAC-SHA256 signature of
# the body under its secret: job.succeeded, job.failed (a worker that exits 1 under
# --max-restarts 0) and job.cancelled (a DELETE right after the submission: no
# job.interrupted either); a member's subscription hears their own jobs only, one naming a job
# that job only (job.interrupted: notice.sh; experiment.*: experiment.sh); a receiver
# that is down is retried (attempts and the error in GET /api/v1/webhooks) while the API
# answers; bad URLs (another scheme, credentials, a host off the allow-list, a loopback
# address under the default list), bad bodies, a member subscribing to another's job and
# a viewer are refused by name; no answer and no log line shows a secret; a pending
# delivery that gives way to newer ones is named in the log. A daemon
# restarted with a narrower --webhook-hosts loads a subscription it would refuse now (a
# loopback one) and fails its deliveries at once naming the list, calling nothing; a
# receiver that never answers does not hold the daemon's stop (its POST is abandoned,
# and the log says so).
. tests/integration/coordinator_lib.inc
need_api_tools
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
command -v python3 >/dev/null || skip "python3 not installed"

# the worker as itself, or failing at once for a job named "boom"
cat >"$TMP/worker" <<'WEOF'
#!/bin/sh
for a; do [ "$prev" = --spec ] && grep -q '"boom"' "$a" && exit 1; prev=$a; done
exec "$REAL_WORKER" "$@"
WEOF
chmod +x "$TMP/worker"
case $WORKER in /*) REAL_WORKER=$WORKER ;; *) REAL_WORKER=$PWD/$WORKER ;; esac
export REAL_WORKER
start_coord_admin --webhook-hosts 127.0.0.1 --max-restarts 0 --worker "$TMP/worker"
ALICE=$(adduser alice member) || exit 1
BOB=$(adduser bob member) || exit 1
CAROL=$(adduser carol viewer) || exit 1

python3 tests/webhook_receiver.py "$TMP/port" "$TMP/got.jsonl" &
EXTRA_PIDS="$EXTRA_PIDS $!"
await 20 "the receiver to listen" test -s "$TMP/port"
PORT=$(cat "$TMP/port")
# a port nothing listens on: the receiver that is down
DOWN=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
SECRET_A=alice-secret-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
SECRET_D=admin-secret-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
hook() { jq -nc --arg u "$1" --arg s "$2" --argjson e "$3" '{url: $u, secret: $s, events: $e}'; }

# ---- refusals by name -------------------------------------------------------------------------
refused 400 "url: only http:// and https:// URLs are called" \
    "$ALICE" POST /api/v1/webhooks -H "$JSON" -d "$(hook ftp://127.0.0.1/ "$SECRET_A" '["job.failed"]')"
refused 400 "url: credentials (user@ or user:password@) are refused" \
    "$ALICE" POST /api/v1/webhooks -H "$JSON" -d "$(hook http://u:p@127.0.0.1:$PORT/ "$SECRET_A" '["job.failed"]')"
refused 400 "url: host hooks.example.com is not on the coordinator's webhook allow-list (--webhook-hosts)" \
    "$ALICE" POST /api/v1/webhooks -H "$JSON" -d "$(hook https://hooks.example.com/ "$SECRET_A" '["job.failed"]')"
refused 400 'events: "job.exploded" is not an event (job.succeeded, job.failed, job.cancelled, job.interrupted, experiment.succeeded, experiment.failed, experiment.cancelled)' \
    "$ALICE" POST /api/v1/webhooks -H "$JSON" -d "$(hook http://127.0.0.1:$PORT/ "$SECRET_A" '["job.exploded"]')"
refused 400 "secret: must be a string of 16 to 256 bytes" \
    "$ALICE" POST /api/v1/webhooks -H "$JSON" -d "$(hook http://127.0.0.1:$PORT/ short '["job.failed"]')"
refused 403 "viewers may only read: to submit jobs takes the member or admin role" \
    "$CAROL" POST /api/v1/webhooks -H "$JSON" -d "$(hook http://127.0.0.1:$PORT/ "$SECRET_A" '["job.failed"]')"

spec "$TMP/s.json" short 1
jq '.dataset.train_subset = 512 | .dataset.test_subset = 200' "$TMP/s.json" >"$TMP/s.t" && mv "$TMP/s.t" "$TMP/s.json"
# bob's job first, queued behind nothing: alice may not subscribe to it
ok 201 "$BOB" POST /api/v1/jobs -H "$JSON" --data-binary @"$TMP/s.json"
B=$(jq -r .id "$TMP/body")
refused 403 "members may subscribe only to their own jobs: $B is bob's" "$ALICE" POST /api/v1/webhooks -H "$JSON" \
    -d "$(jq -nc --arg u "http://127.0.0.1:$PORT/alice" --arg s "$SECRET_A" --arg j "$B" \
        '{url: $u, secret: $s, events: ["job.succeeded"], job: $j}')"
cli wait "$B" --timeout 300 || fail "bob's job $B did not succeed"

# ---- alice's subscription to her own jobs, and the admin's to a receiver that is down ------------------
ok 201 "$ALICE" POST /api/v1/webhooks -H "$JSON" \
    -d "$(hook "http://127.0.0.1:$PORT/alice" "$SECRET_A" '["job.succeeded", "job.failed", "job.cancelled", "job.interrupted"]')"
WA=$(jq -r .id "$TMP/body")
jq -e 'has("secret") | not' "$TMP/body" >/dev/null || fail "POST /api/v1/webhooks answered the secret"
ok 201 "$ADMIN" POST /api/v1/webhooks -H "$JSON" -d "$(hook "http://127.0.0.1:$DOWN/down" "$SECRET_D" '["job.succeeded", "job.cancelled"]')"
WD=$(jq -r .id "$TMP/body")
refused 403 "members may remove only their own webhooks: $WD is admin's" "$BOB" DELETE "/api/v1/webhooks/$WD"

ok 201 "$BOB" POST /api/v1/jobs -H "$JSON" --data-binary @"$TMP/s.json"
B2=$(jq -r .id "$TMP/body")
ok 201 "$ALICE" POST /api/v1/jobs -H "$JSON" --data-binary @"$TMP/s.json"
A=$(jq -r .id "$TMP/body")
jq '.name = "boom"' "$TMP/s.json" >"$TMP/boom.json"
ok 201 "$ALICE" POST /api/v1/jobs -H "$JSON" --data-binary @"$TMP/boom.json"
F=$(jq -r .id "$TMP/body")
# a job that would run for minutes, cancelled at once (queued, or running if the tick was quicker)
jq '.name = "long" | .epochs = 50' "$TMP/s.json" >"$TMP/long.json"
ok 201 "$ALICE" POST /api/v1/jobs -H "$JSON" --data-binary @"$TMP/long.json"
C=$(jq -r .id "$TMP/body")
# alice's second subscription names one job of hers: it hears that job only
ok 201 "$ALICE" POST /api/v1/webhooks -H "$JSON" -d "$(jq -nc --arg u "http://127.0.0.1:$PORT/alice-one" \
    --arg s "$SECRET_A" --arg j "$C" '{url: $u, secret: $s, events: ["job.succeeded", "job.cancelled"], job: $j}')"
WA1=$(jq -r .id "$TMP/body")
case $(call "$ALICE" DELETE "/api/v1/jobs/$C") in 200 | 202) ;; *) fail "DELETE /api/v1/jobs/$C: $(cat "$TMP/body")" ;; esac
# more events than a subscription keeps while its receiver is down (the admin's hears
# every job's job.cancelled): the oldest pending delivery gives way, and the log says so
for i in 1 2 3 4 5 6 7 8 9 10; do
    ok 201 "$ADMIN" POST /api/v1/jobs -H "$JSON" --data-binary @"$TMP/long.json"
    x=$(jq -r .id "$TMP/body")
    case $(call "$ADMIN" DELETE "/api/v1/jobs/$x") in 200 | 202) ;; *) fail "DELETE /api/v1/jobs/$x: $(cat "$TMP/body")" ;; esac
done
cli wait "$A" --timeout 300 || fail "alice's job $A did not succeed"
cli wait "$B2" --timeout 300 || fail "bob's job $B2 did not succeed"
await 60 "alice's job $F to fail" is_api_state "$F" FAILED
await 60 "alice's job $C to be cancelled" is_api_state "$C" CANCELLED
got_alice() { [ "$(grep -c '"/alice"' "$TMP/got.jsonl" 2>/dev/null)" -ge 3 ] && grep -q '"/alice-one"' "$TMP/got.jsonl"; }
await 60 "alice's receivers to get the ends of $A, $F and $C" got_alice

# the down receiver is being retried, and the API answers meanwhile
tried_twice() {
    call "$ADMIN" GET /api/v1/webhooks >/dev/null
    jq -e --arg w "$WD" '.webhooks[] | select(.id == $w) | .deliveries | length >= 3 and all(.[]; .attempts >= 2 and (.error | type == "string"))' "$TMP/body" >/dev/null
}
await 120 "the receiver that is down to be tried again for each job" tried_twice
tried=$(jq -c --arg w "$WD" '[.webhooks[] | select(.id == $w) | .deliveries[] | {status, attempts, error}][0]' "$TMP/body")
ok 200 "$ALICE" GET /api/v1/jobs
echo "ok: the down receiver retried ($tried) while the API answers"
grep -q "webhook $WD: job\.[a-z]* of j-[0-9]* (d-[0-9]*) dropped undelivered after [0-9]* attempts*: a subscription keeps its last 10 deliveries" \
    "$TMP/coord.log" || { grep "webhook $WD" "$TMP/coord.log"; fail "no log line says $WD's oldest pending delivery was dropped"; }
echo "ok: $WD's oldest pending delivery, given way to newer ones, is named in the log"

# each event once, signed, only alice's jobs at alice's receivers (bob's B and B2 not);
# every job has ended and its events were read before the down receiver's second tries
n=$(grep -c . "$TMP/got.jsonl")
[ "$n" = 4 ] || { cat "$TMP/got.jsonl"; fail "alice's receivers got $n deliveries, want 4"; }
python3 tests/webhook_receiver.py check "$TMP/got.jsonl" /alice "$SECRET_A" \
    "job.succeeded=$A" "job.failed=$F" "job.cancelled=$C" || fail "alice's receiver at /alice"
python3 tests/webhook_receiver.py check "$TMP/got.jsonl" /alice-one "$SECRET_A" "job.cancelled=$C" ||
    fail "alice's receiver of $C only"
echo "ok: alice's receivers got the ends of $A (succeeded), $F (failed), $C (cancelled, not interrupted) once each, signed with her secret; bob's jobs not"

ok 200 "$ALICE" GET /api/v1/webhooks
jq -e --arg w "$WA" --arg w1 "$WA1" '([.webhooks[].id] == [$w, $w1]) and ([.webhooks[].deliveries | length] == [3, 1]) and
    all(.webhooks[].deliveries[]; .status == "delivered" and .http_status == 204 and .attempts == 1)' "$TMP/body" >/dev/null ||
    { cat "$TMP/body"; fail "alice's GET /api/v1/webhooks: her subscriptions only, their deliveries delivered"; }
ok 200 "$ADMIN" GET /api/v1/webhooks
jq -e '.webhooks | length == 3' "$TMP/body" >/dev/null || fail "the admin sees every subscription"
for s in "$SECRET_A" "$SECRET_D"; do
    grep -q "$s" "$TMP/body" "$TMP/coord.log" && fail "a secret shows in an answer or the log"
done
ok 204 "$ALICE" DELETE "/api/v1/webhooks/$WA"
ok 204 "$ALICE" DELETE "/api/v1/webhooks/$WA1"
refused 404 "no webhook $WA" "$ALICE" DELETE "/api/v1/webhooks/$WA"
[ "$(stat -c %a "$STATE/webhooks.json")" = 600 ] || fail "webhooks.json is not 0600"
echo "ok: refusals by name, no secret shown, deletions"

# ---- a narrower allow-list after a restart: the admin's loopback subscription is kept, never called; ---------
# ---- a receiver that never answers: the API answers meanwhile, and the daemon's stop does not wait for it ----
python3 tests/webhook_receiver.py hang "$TMP/hport" "$TMP/hung.txt" &
EXTRA_PIDS="$EXTRA_PIDS $!"
stop_coord
start_coord --webhook-hosts hooks.example.com,localhost --max-restarts 0 --worker "$TMP/worker"
BASE=$(api_base)
await 20 "the silent receiver to listen" test -s "$TMP/hport"
# after WD in the list: its delivery of the same event is tried first, and the silent one's
# POST is under way from when the receiver has it until the stop
ok 201 "$ADMIN" POST /api/v1/webhooks -H "$JSON" -d "$(hook "http://localhost:$(cat "$TMP/hport")/hang" "$SECRET_D" '["job.cancelled"]')"
WH=$(jq -r .id "$TMP/body")
ok 201 "$ADMIN" POST /api/v1/jobs -H "$JSON" --data-binary @"$TMP/long.json"
C2=$(jq -r .id "$TMP/body")
case $(call "$ADMIN" DELETE "/api/v1/jobs/$C2") in 200 | 202) ;; *) fail "DELETE /api/v1/jobs/$C2: $(cat "$TMP/body")" ;; esac
refused_once() {
    call "$ADMIN" GET /api/v1/webhooks >/dev/null
    jq -e --arg w "$WD" --arg d "url: host 127.0.0.1 is not on the coordinator's webhook allow-list (--webhook-hosts)" \
        '.webhooks[] | select(.id == $w) | .deliveries[0] | .status == "failed" and .attempts == 1 and .error == $d' "$TMP/body" >/dev/null
}
await 60 "$C2's job.cancelled to $WD to fail on the allow-list" refused_once
grep -q "webhook $WD: job.cancelled of $C2 not delivered after 1 attempt: url: host 127.0.0.1 is not on" "$TMP/coord.log" ||
    fail "no log line says why $WD was not called"
echo "ok: restarted with --webhook-hosts hooks.example.com,localhost, $WD (127.0.0.1) is kept and its delivery refused by name"
await 60 "the silent receiver to be called" grep -q "^POST /hang " "$TMP/hung.txt"
ok 200 "$ADMIN" GET /api/v1/webhooks
jq -e --arg w "$WH" '.webhooks[] | select(.id == $w) | .deliveries[0].status == "pending"' "$TMP/body" >/dev/null ||
    fail "$WH's delivery: $(jq -c --arg w "$WH" '.webhooks[] | select(.id == $w) | .deliveries' "$TMP/body")"
stop_coord
grep -q "webhook $WH: job.cancelled of $C2 not delivered: the daemon stopped" "$TMP/coord.log" ||
    { tail -5 "$TMP/coord.log"; fail "the stop waited for the silent receiver's POST (no line says it was abandoned)"; }
echo "ok: a receiver that never answers: the API answered, and the stop abandoned its POST"
