# Fair share between users (issue 45) on a real coordinator with two slots under
# --policy fair: members alice and bob; PUT /api/v1/users/{name} sets a weight (shown in
# GET /api/v1/users) and refuses a bad body (400), an unknown user (404), admin (409) and a
# member (403), each with its message; `pacer user weight` sets one and shows the 400. alice's long job a1 runs and builds up her usage in
# pacer:fairshare; she then submits a2, bob b1 after it (both 2 workers). b1 goes to
# position 1 and a2 waits behind it with the reason "its user over their fair share" and a
# sentence naming both users; when a1 ends b1 starts while a2 still waits; both SUCCEED.
# Every wait polls with a deadline: usage only has to grow, never by a given amount.
. tests/integration/coordinator_lib.inc
PACER=$BUILD/pacer
[ -x "$PACER" ] || skip "$PACER not built: libcurl missing (make deps installs libcurl4-openssl-dev)"
need_api_tools
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"

ADMIN=fair-admin-$$-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
export PACER_TOKEN=$ADMIN
has_queue() { [ "$(q "$1" '.queue.position')" = "$2" ]; }
usage_of() { rcli HGET pacer:fairshare "$1"; }
has_usage() { u=$(usage_of "$1") && [ -n "$u" ] && cmp_num "$u" ">" 0; }

printf 'localhost slots=2\n' >"$TMP/hosts"
start_coord --hostfile "$TMP/hosts" --preflight off --policy fair --fair-half-life 1h
BASE=$(api_base)
export PACER_URL=$BASE
ALICE=$(adduser alice member) || exit 1
BOB=$(adduser bob member) || exit 1

# ---- weights ------------------------------------------------------------------------------------------------
got=$(call "$ADMIN" PUT /api/v1/users/bob -H "$JSON" -d '{"weight": 2}')
[ "$got" = 200 ] && jq -e '.name == "bob" and .weight == 2' "$TMP/body" >/dev/null ||
    fail "PUT weight 2: HTTP $got $(cat "$TMP/body")"
call "$ADMIN" GET /api/v1/users >/dev/null
jq -e '[.users[] | {(.name): .weight}] | add == {"admin": 1, "alice": 1, "bob": 2}' "$TMP/body" >/dev/null ||
    fail "GET /api/v1/users weights: $(cat "$TMP/body")"
refused 400 "weight: must be a number > 0 and at most 1000" "$ADMIN" PUT /api/v1/users/bob -H "$JSON" \
    -d '{"weight": 0}'
refused 400 "role: unknown field (a user's update takes weight, max_queued, max_slots, max_models and max_priority)" \
    "$ADMIN" PUT /api/v1/users/bob -H "$JSON" -d '{"weight": 1, "role": "admin"}'
refused 404 "no user mallory" "$ADMIN" PUT /api/v1/users/mallory -H "$JSON" -d '{"weight": 1}'
refused 409 "\"admin\" is the daemon's own token and has no record: its weight is 1, and no limit binds it" "$ADMIN" \
    PUT /api/v1/users/admin -H "$JSON" -d '{"weight": 5}'
refused 403 "only admins may list, create or remove users" "$ALICE" PUT /api/v1/users/alice -H "$JSON" \
    -d '{"weight": 1000}'
# the CLI: pacer user weight NAME --weight W
[ "$("$PACER" user weight bob --weight 1)" = "bob: weight 1" ] || fail "pacer user weight bob --weight 1"
expect_error 1 "pacer user: Invalid user: weight: must be a number > 0 and at most 1000 (HTTP 400)" \
    "$PACER" user weight bob --weight 1001
expect_error 2 "pacer user: --weight goes with weight, and weight needs it" "$PACER" user weight bob
call "$ADMIN" GET /api/v1/users >/dev/null
jq -e '.users[] | select(.name == "bob") | .weight == 1' "$TMP/body" >/dev/null || fail "bob's weight: $(cat "$TMP/body")"
echo "ok: weights set by an admin, shown in the user list; bad bodies, unknown users, admin and members refused"

# ---- the order ----------------------------------------------------------------------------------------------
spec2 "$TMP/a1.json" a1 20000
spec2 "$TMP/a2.json" a2 1
spec2 "$TMP/b1.json" b1 1
a1=$(PACER_TOKEN=$ALICE "$PACER" submit "$TMP/a1.json") || fail "submit a1"
[ "$(q "$a1" .owner)" = alice ] || fail "a1's owner: $(q "$a1" .owner)"
await 120 "job $a1 to run its worker" has_worker "$a1"
await 60 "alice to have used slot-seconds (pacer:fairshare)" has_usage alice
[ -z "$(usage_of bob)" ] || fail "bob has usage $(usage_of bob) without a job"
[ -n "$(rcli HGET pacer:fairshare @at)" ] || fail "pacer:fairshare has no @at"
a2=$(PACER_TOKEN=$ALICE "$PACER" submit "$TMP/a2.json") || fail "submit a2"
await 30 "job $a2 at position 1" has_queue "$a2" 1
b1=$(PACER_TOKEN=$BOB "$PACER" submit "$TMP/b1.json") || fail "submit b1"
await 30 "job $b1 (bob, no usage) at position 1" has_queue "$b1" 1
await 30 "job $a2 (alice) at position 2" has_queue "$a2" 2
[ "$(q "$a2" .queue.reason)" = "its user over their fair share" ] || fail "a2: $(q "$a2" .queue)"
q "$a2" .queue.detail | grep -q "waits behind $b1, submitted later: its user alice is over their fair share (usage/weight [0-9]* slot-s against bob's 0) (fair)" ||
    fail "a2: detail $(q "$a2" .queue)"
[ "$(q "$b1" .queue.reason)" = slots ] || fail "b1: $(q "$b1" .queue)"
echo "ok: bob's $b1 ahead of alice's $a2, submitted before it, with the reason"

PACER_TOKEN=$ALICE "$PACER" cancel "$a1" >/dev/null || fail "cancel $a1"
await 120 "job $b1 to start" is_api_state "$b1" RUNNING
is_api_state "$a2" QUEUED || fail "$a2 is $(q "$a2" .state) while $b1 runs on both slots"
await 300 "job $b1 to succeed" is_api_state "$b1" SUCCEEDED
await 300 "job $a2 to succeed" is_api_state "$a2" SUCCEEDED
has_usage bob || fail "bob's usage after $b1: '$(usage_of bob)'"
echo "ok: $b1 ran first when $a1 ended, then $a2; bob's usage recorded"
stop_coord
