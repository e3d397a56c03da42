# Webhooks against the real coordinator: a receiver in the test (tests/webhook_receiver.py)
# gets each event of the jobs it subscribed to once, with a valid HMAC-SHA256 signature of
# the body under its secret; a member's subscription hears their own jobs only; a receiver
# that is down is retried (attempts and the error in GET /api/v1/webhooks) while the API
# answers; bad URLs (another scheme, credentials, a host off the allow-list, a loopback
# address under the default list), bad bodies, a member subscribing to another's job and
# a viewer are refused by name; no answer and no log line shows a secret.
. tests/integration/coordinator_lib.inc
need_api_tools
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
command -v python3 >/dev/null || skip "python3 not installed"

start_coord_admin --webhook-hosts 127.0.0.1
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
    -d "$(hook "http://127.0.0.1:$PORT/alice" "$SECRET_A" '["job.succeeded", "job.failed", "job.interrupted"]')"
WA=$(jq -r .id "$TMP/body")
jq -e 'has("secret") | not' "$TMP/body" >/dev/null || fail "POST /api/v1/webhooks answered the secret"
ok 201 "$ADMIN" POST /api/v1/webhooks -H "$JSON" -d "$(hook "http://127.0.0.1:$DOWN/down" "$SECRET_D" '["job.succeeded"]')"
WD=$(jq -r .id "$TMP/body")
refused 403 "members may remove only their own webhooks: $WD is admin's" "$BOB" DELETE "/api/v1/webhooks/$WD"

ok 201 "$BOB" POST /api/v1/jobs -H "$JSON" --data-binary @"$TMP/s.json"
B2=$(jq -r .id "$TMP/body")
ok 201 "$ALICE" POST /api/v1/jobs -H "$JSON" --data-binary @"$TMP/s.json"
A=$(jq -r .id "$TMP/body")
cli wait "$A" --timeout 300 || fail "alice's job $A did not succeed"
cli wait "$B2" --timeout 300 || fail "bob's job $B2 did not succeed"
got_alice() { [ -s "$TMP/got.jsonl" ] && jq -se --arg a "$A" 'any(.[]; (.body | fromjson).data.job == $a)' "$TMP/got.jsonl"; }
await 60 "the receiver to get job.succeeded of $A" got_alice

# the down receiver is being retried, and the API answers meanwhile
tried_twice() {
    call "$ADMIN" GET /api/v1/webhooks >/dev/null
    jq -e --arg w "$WD" '.webhooks[] | select(.id == $w) | .deliveries | length >= 2 and all(.[]; .attempts >= 2 and (.error | type == "string"))' "$TMP/body" >/dev/null
}
await 120 "the receiver that is down to be tried again for both jobs" tried_twice
ok 200 "$ALICE" GET /api/v1/jobs
echo "ok: the down receiver retried ($(jq -c --arg w "$WD" '[.webhooks[] | select(.id == $w) | .deliveries[] | {status, attempts, error}][0]' "$TMP/body")) while the API answers"

# each event once, signed, only alice's job at alice's receiver (bob's B and B2 not)
# both of bob's jobs have ended and their events were read (not for her) before the down receiver's second tries
n=$(grep -c . "$TMP/got.jsonl")
[ "$n" = 1 ] || { cat "$TMP/got.jsonl"; fail "alice's receiver got $n deliveries, want 1 (her job's job.succeeded)"; }
python3 - "$TMP/got.jsonl" "$SECRET_A" "$A" <<'PY' || fail "the delivery's signature or body"
import hashlib, hmac, json, sys
rec = json.loads(open(sys.argv[1]).readline())
want = "sha256=" + hmac.new(sys.argv[2].encode(), rec["body"].encode(), hashlib.sha256).hexdigest()
body = json.loads(rec["body"])
assert rec["signature"] == want, (rec["signature"], want)
assert rec["event"] == "job.succeeded" and body["event"] == "job.succeeded", rec
assert body["data"]["job"] == sys.argv[3] and body["data"]["state"] == "SUCCEEDED", body
assert rec["delivery"] == body["delivery"] and rec["path"] == "/alice", rec
PY
echo "ok: alice's receiver got job.succeeded of $A once, signed with her secret; bob's jobs not"

ok 200 "$ALICE" GET /api/v1/webhooks
jq -e --arg w "$WA" '(.webhooks | length == 1) and .webhooks[0].id == $w and
    (.webhooks[0].deliveries[0] | .status == "delivered" and .http_status == 204 and .attempts == 1)' "$TMP/body" >/dev/null ||
    { cat "$TMP/body"; fail "alice's GET /api/v1/webhooks: her subscription only, its delivery delivered"; }
ok 200 "$ADMIN" GET /api/v1/webhooks
jq -e '.webhooks | length == 2' "$TMP/body" >/dev/null || fail "the admin sees both subscriptions"
for s in "$SECRET_A" "$SECRET_D"; do
    grep -q "$s" "$TMP/body" "$TMP/coord.log" && fail "a secret shows in an answer or the log"
done
ok 204 "$ALICE" DELETE "/api/v1/webhooks/$WA"
refused 404 "no webhook $WA" "$ALICE" DELETE "/api/v1/webhooks/$WA"
[ "$(stat -c %a "$STATE/webhooks.json")" = 600 ] || fail "webhooks.json is not 0600"
echo "ok: refusals by name, no secret shown, deletions"
stop_coord
