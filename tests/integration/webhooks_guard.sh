# Webhooks against a member who means harm, on the real coordinator with
# tests/webhook_receiver.py as the receivers, under --webhook-hosts '*,127.0.0.1' (any host,
# and the receivers' 127.0.0.1 by name):
# - every other spelling of an internal address (127.1, 2130706433, 0x7f000001, 0177.0.0.1,
#   localhost., [::127.0.0.1], 0, 10.1, 167772161, 2852039166, [fe80::1%25lo],
#   [::ffff:127.0.0.1]) is refused when the subscription is made, naming what it is;
# - a name other than localhost that resolves to 127.0.0.1 here (the host's own name, when
#   it does) is accepted, and its delivery refused at the connection, the error saying
#   only that the address is not allowed; named on the list after a restart, it delivers;
# - three subscriptions of alice's to a receiver that never answers do not delay the
#   admin's good receiver: it gets the event in under 15 s, where one POST to the silent
#   receiver waits 10 s (before, one thread made every POST in turn: 30 s and more);
# - a member holds at most WEBHOOKS_PER_MEMBER (16) subscriptions: the 17th is a 429
#   naming the cap, while another member may still subscribe;
# - an admin account's every-job subscription goes with the account: a new member of the
#   same name sees none and hears nothing; one whose account was removed behind the
#   daemon's back (in Redis) is neither shown to nor removable by the new account of the
#   name, and is removed at the next event, not delivered.
. tests/integration/coordinator_lib.inc
need_api_tools
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
command -v python3 >/dev/null || skip "python3 not installed"
command -v getent >/dev/null || skip "getent not installed"

start_coord_admin --webhook-hosts '*,127.0.0.1' --max-restarts 0
ALICE=$(adduser alice member) || exit 1
BOB=$(adduser bob member) || exit 1
python3 tests/webhook_receiver.py "$TMP/port" "$TMP/got.jsonl" &
EXTRA_PIDS="$EXTRA_PIDS $!"
python3 tests/webhook_receiver.py hang "$TMP/hport" "$TMP/hung.txt" &
EXTRA_PIDS="$EXTRA_PIDS $!"
await 20 "the receivers to listen" test -s "$TMP/port" -a -s "$TMP/hport"
PORT=$(cat "$TMP/port")
HPORT=$(cat "$TMP/hport")
SECRET=guard-secret-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
hook() { jq -nc --arg u "$1" --arg s "$SECRET" --argjson e "$2" '{url: $u, secret: $s, events: $e}'; }
spec "$TMP/s.json" long 50
# cancel_one TOKEN - submits the long job as TOKEN's user and cancels it: $J, a job.cancelled
cancel_one() {
    ok 201 "$1" POST /api/v1/jobs -H "$JSON" --data-binary @"$TMP/s.json"
    J=$(jq -r .id "$TMP/body")
    case $(call "$1" DELETE "/api/v1/jobs/$J") in 200 | 202) ;; *) fail "DELETE /api/v1/jobs/$J: $(cat "$TMP/body")" ;; esac
    await 60 "$J to be cancelled" is_api_state "$J" CANCELLED
}
delivered() { [ "$(grep -c "\"$1\"" "$TMP/got.jsonl" 2>/dev/null)" -ge "$2" ]; }

# ---- every spelling of an internal address, refused by name ------------------------------------
while read -r url host kind; do
    case $kind in [aeiou]*) art=an ;; *) art=a ;; esac
    refused 400 "url: host $host is $art $kind address: webhooks call no loopback, private, link-local, unspecified, multicast or reserved address unless --webhook-hosts names the host" \
        "$ALICE" POST /api/v1/webhooks -H "$JSON" -d "$(hook "$url" '["job.cancelled"]')"
done <<'EOF'
http://127.1:9/x 127.1 loopback
http://2130706433/ 2130706433 loopback
http://0x7f000001/ 0x7f000001 loopback
http://0177.0.0.1/ 0177.0.0.1 loopback
http://localhost./ localhost. loopback
http://[::127.0.0.1]/ ::127.0.0.1 loopback
http://0/ 0 unspecified
http://10.1/ 10.1 private
http://167772161/ 167772161 private
http://2852039166/latest/meta-data 2852039166 link-local
http://[fe80::1%25lo]/ fe80::1%25lo link-local
http://[::ffff:127.0.0.1]/ ::ffff:127.0.0.1 loopback
EOF
echo "ok: 12 spellings of loopback, private, link-local and unspecified addresses refused, each naming what it is"

# a name (not localhost) that resolves to 127.0.0.1 and to internal addresses only, if this host has one
NAME=""
for n in "$(hostname 2>/dev/null)" ip6-localhost ip6-loopback; do
    case $n in "" | localhost | *.localhost) continue ;; esac
    addrs=$(getent ahosts "$n" 2>/dev/null | awk '{ print $1 }' | sort -u)
    echo "$addrs" | grep -qx '127\.0\.0\.1' || continue
    echo "$addrs" | grep -qvE '^(127\.|10\.|192\.168\.|172\.(1[6-9]|2[0-9]|3[01])\.|::1$|::ffff:127\.|fe80:|f[cd])' && continue
    NAME=$n
    break
done

# ---- the admin's good receiver beside three of alice's that never answer ---------------------------
for i in 1 2 3; do
    ok 201 "$ALICE" POST /api/v1/webhooks -H "$JSON" -d "$(hook "http://127.0.0.1:$HPORT/hang$i" '["job.cancelled"]')"
done
ok 201 "$ADMIN" POST /api/v1/webhooks -H "$JSON" -d "$(hook "http://127.0.0.1:$PORT/good" '["job.cancelled"]')"
if [ -n "$NAME" ]; then
    ok 201 "$ADMIN" POST /api/v1/webhooks -H "$JSON" -d "$(hook "http://$NAME:$PORT/named" '["job.cancelled"]')"
    WN=$(jq -r .id "$TMP/body")
fi
cancel_one "$ALICE"
t0=$(now)
await 15 "the good receiver to get $J's job.cancelled beside three silent ones" delivered /good 1
echo "ok: the good receiver got $J's job.cancelled $(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }') s after it was cancelled, beside three receivers that never answer"
hung_thrice() { [ "$(grep -c '^POST /hang' "$TMP/hung.txt" 2>/dev/null)" -ge 3 ]; }
await 20 "the silent receiver to be called three times" hung_thrice

ADDR_ERR="the receiver's address is not one webhooks may call (only a host --webhook-hosts names may be internal)"
if [ -n "$NAME" ]; then
    named_refused() {
        call "$ADMIN" GET /api/v1/webhooks >/dev/null
        jq -e --arg w "$WN" --arg e "$ADDR_ERR" '.webhooks[] | select(.id == $w) | .deliveries[0] |
            .status == "failed" and .attempts == 1 and .error == $e and .http_status == null' "$TMP/body" >/dev/null
    }
    await 30 "the delivery to $NAME (127.0.0.1) to be refused" named_refused
    grep -q '"/named"' "$TMP/got.jsonl" && fail "a delivery to $NAME reached the receiver on 127.0.0.1"
    grep -q "webhook $WN: job.cancelled of $J not delivered after 1 attempt: $ADDR_ERR (a loopback address)" "$TMP/coord.log" ||
        fail "no log line names the refused address's kind for $WN"
    echo "ok: $NAME resolves to 127.0.0.1: its delivery was refused at the connection, saying only that the address is not allowed"
else
    echo "note: no name here but localhost resolves to 127.0.0.1 only: test_webhook's test_post_resolved covers it"
fi

# ---- a member's cap ----------------------------------------------------------------------------------
for i in $(seq 4 16); do
    ok 201 "$ALICE" POST /api/v1/webhooks -H "$JSON" -d "$(hook "http://127.0.0.1:$PORT/alice$i" '["job.failed"]')"
done
refused 429 "a member may hold at most 16 webhooks (WEBHOOKS_PER_MEMBER) and alice holds 16: remove one first (DELETE /api/v1/webhooks/{id})" \
    "$ALICE" POST /api/v1/webhooks -H "$JSON" -d "$(hook "http://127.0.0.1:$PORT/alice17" '["job.failed"]')"
ok 201 "$BOB" POST /api/v1/webhooks -H "$JSON" -d "$(hook "http://127.0.0.1:$PORT/bob" '["job.failed"]')"
echo "ok: alice's 17th subscription refused (429, the cap named), bob's accepted"

# ---- a removed admin's subscription does not pass to a new member of the name ------------------------
ROOT=$(adduser root admin) || exit 1
ok 201 "$ROOT" POST /api/v1/webhooks -H "$JSON" -d "$(hook "http://127.0.0.1:$PORT/root" '["job.cancelled"]')"
WR=$(jq -r .id "$TMP/body")
jq -e '.admin == true and .owner == "root"' "$TMP/body" >/dev/null || fail "root's subscription: $(cat "$TMP/body")"
ok 204 "$ADMIN" DELETE /api/v1/users/root
ok 200 "$ADMIN" GET /api/v1/webhooks
jq -e --arg w "$WR" '[.webhooks[].id] | index($w) == null' "$TMP/body" >/dev/null ||
    fail "root's subscription $WR outlived the account: $(jq -c '[.webhooks[] | {id, owner}]' "$TMP/body")"
ROOT=$(adduser root member) || exit 1
ok 200 "$ROOT" GET /api/v1/webhooks
jq -e '.webhooks == []' "$TMP/body" >/dev/null || fail "the new root sees subscriptions: $(cat "$TMP/body")"
grep -q "webhook $WR removed with its owner root's account" "$TMP/coord.log" || fail "no log line says $WR went with root"
# an admin account removed in Redis, not through the daemon: its subscription stays until its next event
ROOTB=$(adduser rootb admin) || exit 1
ok 201 "$ROOTB" POST /api/v1/webhooks -H "$JSON" -d "$(hook "http://127.0.0.1:$PORT/rootb" '["job.cancelled"]')"
WRB=$(jq -r .id "$TMP/body")
rcli HDEL pacer:users rootb >/dev/null
ROOTB=$(adduser rootb member) || exit 1
ok 200 "$ROOTB" GET /api/v1/webhooks
jq -e '.webhooks == []' "$TMP/body" >/dev/null || fail "the new rootb sees the old account's subscription: $(cat "$TMP/body")"
refused 403 "members may remove only their own webhooks: $WRB is rootb's" "$ROOTB" DELETE "/api/v1/webhooks/$WRB"
cancel_one "$BOB"
await 30 "the good receiver to get $J's job.cancelled" delivered /good 2
grep -qE '"/root"|"/rootb"' "$TMP/got.jsonl" && fail "a removed admin's subscription delivered to the new account of the name"
ok 200 "$ADMIN" GET /api/v1/webhooks
jq -e --arg a "$WR" --arg b "$WRB" '[.webhooks[].id] | index($a) == null and index($b) == null' "$TMP/body" >/dev/null ||
    fail "the removed admins' subscriptions are still listed: $(jq -c '[.webhooks[] | {id, owner}]' "$TMP/body")"
grep -q "webhook $WRB removed: its owner rootb's account is gone (a later account of the name does not inherit it)" \
    "$TMP/coord.log" || fail "no log line says $WRB was removed at its event"
echo "ok: a removed admin's every-job subscription went with the account (through the API, and at its next event when removed in Redis); the new members of the names see and hear nothing"

# ---- the name, once the list names it, delivers -------------------------------------------------------
if [ -n "$NAME" ]; then
    stop_coord
    start_coord --webhook-hosts "*,127.0.0.1,$NAME" --max-restarts 0
    BASE=$(api_base)
    cancel_one "$ADMIN"
    await 30 "the delivery to $NAME to arrive once --webhook-hosts names it" delivered /named 1
    echo "ok: restarted with --webhook-hosts naming $NAME, its delivery arrived"
fi
