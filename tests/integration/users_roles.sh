# Users, roles and owners (issue 45) against the real coordinator and its embedded Redis:
# the daemon's token (admin) creates members alice and bob and viewer carol; each role's
# allowed and refused calls on jobs, uploaded models, users and the cluster, every refusal
# a 403 whose detail names the rule; owners on jobs (list and page) and on uploads; tokens
# stored only as salted hashes; a token's expiry (polled with a deadline), its renewal
# (`pacer token new`'s route: the old one stops working) and its revocation (401 once the
# user is removed); the audit events (who, what, target, status) in pacer:events; the
# refusals of a bad users body; the CLI (pacer user add|ls|rm, token new, whoami, get's owner, ls's OWNER column) and
# the Python client with a member's and a viewer's token; under --public-reads an anonymous
# reader is a viewer; without any token configured a caller without one is the local
# admin, one with a token (made up, or a user's) gets 401, and no user can be created.
. tests/integration/coordinator_lib.inc
need_api_tools
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"

start_coord_admin

# ---- users --------------------------------------------------------------------------------------------------
ALICE=$(adduser alice member) || exit 1
BOB=$(adduser bob member) || exit 1
CAROL=$(adduser carol viewer) || exit 1
printf '%s\n' "$ALICE" | grep -Eq '^alice\.[0-9a-f]{64}$' || fail "alice's token $ALICE is not alice.<64 hex digits>"
refused 409 "user alice exists already: remove it first, or give it a new token (pacer token new)" \
    "$ADMIN" POST /api/v1/users -H "$JSON" -d '{"name": "alice", "role": "viewer"}'
refused 409 'name: "admin" is the daemon'"'"'s own token (PACER_TOKEN, --token-file): pick another name' \
    "$ADMIN" POST /api/v1/users -H "$JSON" -d '{"name": "admin", "role": "admin"}'
refused 400 "role: required, one of admin, member, viewer" \
    "$ADMIN" POST /api/v1/users -H "$JSON" -d '{"name": "eve", "role": "root"}'
refused 400 "name: only a-z, 0-9, '_' and '-' are allowed" \
    "$ADMIN" POST /api/v1/users -H "$JSON" -d '{"name": "e/../ve", "role": "member"}'
refused 400 "x: unknown field (name, role and expires_in_s are)" \
    "$ADMIN" POST /api/v1/users -H "$JSON" -d '{"name": "eve", "role": "member", "x": 1}'
refused 400 "expires_in_s: must be a number of seconds > 0 and at most 315360000 (ten years)" \
    "$ADMIN" POST /api/v1/users -H "$JSON" -d '{"name": "eve", "role": "member", "expires_in_s": -5}'
refused 403 "only admins may list, create or remove users" "$ALICE" POST /api/v1/users -H "$JSON" \
    -d '{"name": "eve", "role": "admin"}'
refused 403 "only admins may list, create or remove users" "$ALICE" GET /api/v1/users
refused 403 "viewers may only read: to list, create or remove users takes the member or admin role" \
    "$CAROL" DELETE /api/v1/users/alice
ok 200 "$ADMIN" GET /api/v1/users
jq -e '[.users[].name] == ["admin", "alice", "bob", "carol"] or ([.users[].name] | sort) == ["admin", "alice", "bob", "carol"]' \
    "$TMP/body" >/dev/null || { cat "$TMP/body"; fail "GET /api/v1/users: want admin, alice, bob, carol"; }
grep -q '"hash"\|"salt"\|"token"' "$TMP/body" && fail "GET /api/v1/users shows a hash, salt or token"
# Only salted hashes are stored: no token (nor its secret half) anywhere in Redis's record.
rcli HGETALL pacer:users >"$TMP/users.txt"
for t in "$ALICE" "$BOB" "$CAROL"; do
    grep -qF "${t#*.}" "$TMP/users.txt" && fail "a token's secret is stored in pacer:users"
done
rcli HGET pacer:users alice >"$TMP/alice.rec"
jq -e '(.salt | length == 32) and (.hash | length == 64) and .role == "member"' "$TMP/alice.rec" >/dev/null ||
    { cat "$TMP/alice.rec"; fail "alice's record: want a 32-digit salt, a SHA-256 and the role"; }
ok 200 "$ALICE" GET /api/v1/whoami
jq -e '.name == "alice" and .role == "member" and .auth == "user-token" and .expires == null' "$TMP/body" \
    >/dev/null || { cat "$TMP/body"; fail "whoami as alice"; }
ok 200 "$ADMIN" GET /api/v1/whoami
jq -e '.name == "admin" and .role == "admin" and .auth == "daemon-token"' "$TMP/body" >/dev/null ||
    { cat "$TMP/body"; fail "whoami as the daemon's token"; }
refused 401 "the bearer token is wrong" "alice.$(printf '%064d' 0)" GET /api/v1/whoami
echo "ok: admin creates members and a viewer; tokens NAME.HEX, stored as salted hashes; bad bodies refused"

# ---- jobs: owners and each role's calls -------------------------------------------------------------------------
spec "$TMP/long.json" long 1000
ok 201 "$ALICE" POST /api/v1/jobs -H "$JSON" --data-binary @"$TMP/long.json"
A=$(jq -r .id "$TMP/body")
[ "$(jq -r .owner "$TMP/body")" = alice ] || { cat "$TMP/body"; fail "submit as alice: owner not alice"; }
ok 201 "$BOB" POST /api/v1/jobs -H "$JSON" --data-binary @"$TMP/long.json"
B=$(jq -r .id "$TMP/body")
refused 403 "viewers may only read: to submit jobs takes the member or admin role" \
    "$CAROL" POST /api/v1/jobs -H "$JSON" --data-binary @"$TMP/long.json"
ok 200 "$CAROL" GET "/api/v1/jobs/$A"
[ "$(jq -r .owner "$TMP/body")" = alice ] || { cat "$TMP/body"; fail "GET $A: owner not alice"; }
ok 200 "$CAROL" GET /api/v1/jobs
jq -e --arg a "$A" --arg b "$B" '(.jobs[] | select(.id == $a) | .owner) == "alice" and
    (.jobs[] | select(.id == $b) | .owner) == "bob"' "$TMP/body" >/dev/null ||
    { cat "$TMP/body"; fail "GET /api/v1/jobs: owners of $A and $B"; }
refused 403 "members may cancel only their own jobs: $A is alice's" "$BOB" DELETE "/api/v1/jobs/$A"
refused 403 "viewers may only read: to cancel jobs takes the member or admin role" "$CAROL" DELETE "/api/v1/jobs/$A"
got=$(call "$ALICE" DELETE "/api/v1/jobs/$A")
[ "$got" = 200 ] || [ "$got" = 202 ] || { cat "$TMP/body"; fail "alice cancels her $A: HTTP $got"; }
await 60 "$A to be CANCELLED" is_state "$A" CANCELLED
refused 403 "members may retry only their own jobs: $A is alice's" "$BOB" POST "/api/v1/jobs/$A/retry"
ok 201 "$ALICE" POST "/api/v1/jobs/$A/retry"
R=$(jq -r .id "$TMP/body")
[ "$(jq -r .owner "$TMP/body")" = alice ] || { cat "$TMP/body"; fail "alice's retry $R: owner not alice"; }
got=$(call "$ADMIN" DELETE "/api/v1/jobs/$B")
[ "$got" = 200 ] || [ "$got" = 202 ] || { cat "$TMP/body"; fail "the admin cancels bob's $B: HTTP $got"; }
got=$(call "$ALICE" DELETE "/api/v1/jobs/$R")
[ "$got" = 200 ] || [ "$got" = 202 ] || { cat "$TMP/body"; fail "alice cancels her retry $R: HTTP $got"; }
# A job from before users (here: submitted through the command line, which writes Redis
# itself) has no owner: an admin's to change.
O=$(submit "$TMP/long.json")
ok 200 "$CAROL" GET "/api/v1/jobs/$O"
jq -e 'has("owner") | not' "$TMP/body" >/dev/null || { cat "$TMP/body"; fail "$O has an owner"; }
refused 403 "members may cancel only their own jobs: $O has no owner (it predates users); only admins may" \
    "$ALICE" DELETE "/api/v1/jobs/$O"
got=$(call "$ADMIN" DELETE "/api/v1/jobs/$O")
[ "$got" = 200 ] || [ "$got" = 202 ] || { cat "$TMP/body"; fail "the admin cancels $O: HTTP $got"; }
refused 403 "only admins may reload or benchmark the cluster" "$ALICE" POST /api/v1/cluster/reload
refused 403 "viewers may only read: to reload or benchmark the cluster takes the member or admin role" \
    "$CAROL" POST /api/v1/cluster/benchmark
echo "ok: owners on jobs; members change only their own, viewers only read, admins anything; 403s name the rule"

# ---- uploaded models ------------------------------------------------------------------------------------------
# An ONNX file: the built-in lenet5's initial weights, exported by the worker (no Python).
jq -n --arg p "$FASHION" '{model: "lenet5", dataset: {name: "fashion-mnist", path: $p, train_subset: 64,
    test_subset: 64}, workers: 1, batch_size: 32, epochs: 1, seed: 5, device: "cpu"}' >"$TMP/w.json"
$WORKER --spec "$TMP/w.json" --export-onnx-init "$TMP/m.onnx" >"$TMP/w.log" 2>&1 ||
    { tail -5 "$TMP/w.log"; fail "pacer-worker --export-onnx-init"; }
OCT="Content-Type: application/octet-stream"
ok 201 "$ALICE" PUT /api/v1/models/m1 -H "$OCT" --data-binary @"$TMP/m.onnx"
[ "$(jq -r .owner "$TMP/body")" = alice ] || { cat "$TMP/body"; fail "PUT m1 as alice: owner not alice"; }
refused 403 "members may replace only their own models: m1 is alice's" \
    "$BOB" PUT /api/v1/models/m1 -H "$OCT" --data-binary @"$TMP/m.onnx"
refused 403 "members may delete only their own models: m1 is alice's" "$BOB" DELETE /api/v1/models/m1
refused 403 "viewers may only read: to upload models takes the member or admin role" \
    "$CAROL" PUT /api/v1/models/m2 -H "$OCT" --data-binary @"$TMP/m.onnx"
ok 200 "$CAROL" GET /api/v1/models/m1
[ "$(jq -r .owner "$TMP/body")" = alice ] || { cat "$TMP/body"; fail "GET m1: owner not alice"; }
ok 200 "$CAROL" GET /api/v1/models
jq -e '(.models[] | select(.name == "m1") | .owner) == "alice" and
    (.models[] | select(.name == "lenet5") | has("owner") | not)' "$TMP/body" >/dev/null ||
    { cat "$TMP/body"; fail "GET /api/v1/models: m1's owner alice, none for a built-in"; }
ok 200 "$ALICE" PUT /api/v1/models/m1 -H "$OCT" --data-binary @"$TMP/m.onnx"
ok 204 "$ALICE" DELETE /api/v1/models/m1
[ -z "$(rcli HGET pacer:model-owners m1)" ] || fail "m1's owner is still recorded after its deletion"
echo "ok: owners on uploads; a member replaces or deletes only their own"

# ---- renewal, expiry, revocation ------------------------------------------------------------------------------
ok 200 "$ALICE" POST /api/v1/token
ALICE2=$(jq -r .token "$TMP/body")
[ "$ALICE2" != "$ALICE" ] || fail "POST /api/v1/token gave the same token"
refused 401 "the bearer token is wrong" "$ALICE" GET /api/v1/whoami
ok 200 "$ALICE2" GET /api/v1/whoami
refused 409 "the user admin is the daemon's own token (PACER_TOKEN, --token-file): change it there and restart the daemon" \
    "$ADMIN" POST /api/v1/token
DAVE=$(adduser dave member 3) || exit 1
jq -e '(.expires - .created - 3) | fabs < 0.01' "$TMP/body" >/dev/null || { cat "$TMP/body"; fail "dave: expires is not created + 3"; }
dave_expired() {
    [ "$(call "$DAVE" GET /api/v1/whoami)" = 401 ] &&
        jq -e '.detail | startswith("the bearer token has expired")' "$TMP/body" >/dev/null
}
await 60 "dave's token to expire" dave_expired
ok 204 "$ADMIN" DELETE /api/v1/users/bob
refused 401 "the bearer token is wrong" "$BOB" GET /api/v1/jobs
refused 404 "no user bob" "$ADMIN" DELETE /api/v1/users/bob
refused 409 '"admin" is the daemon'"'"'s own token: change PACER_TOKEN or --token-file and restart' \
    "$ADMIN" DELETE /api/v1/users/admin
echo "ok: a renewed token replaces the old one; an expired one and a removed user's are refused (401)"

# ---- the CLI: pacer user add|ls|rm, pacer token new, a member's and a viewer's token ------------------------
PACER=$BUILD/pacer
[ -x "$PACER" ] || fail "$PACER not built (make $PACER)"
p() { "$PACER" --url "$BASE" "$@"; }
EVE=$(p --token "$ADMIN" user add eve --role viewer --expires 3600 2>"$TMP/cli.err") ||
    { cat "$TMP/cli.err"; fail "pacer user add eve"; }
printf '%s\n' "$EVE" | grep -Eq '^eve\.[0-9a-f]{64}$' || fail "pacer user add printed '$EVE', not eve's token"
grep -q "shown this once" "$TMP/cli.err" || { cat "$TMP/cli.err"; fail "pacer user add: no 'shown this once'"; }
p --token "$ADMIN" user ls >"$TMP/ls.txt" || fail "pacer user ls"
head -1 "$TMP/ls.txt" | grep -q '^NAME  *ROLE  *CREATED  *EXPIRES  *CREATED BY$' || { cat "$TMP/ls.txt"; fail "user ls header"; }
grep -q '^eve  *viewer  .* admin$' "$TMP/ls.txt" || { cat "$TMP/ls.txt"; fail "user ls: no eve, viewer, by admin"; }
expect_error 1 "pacer user: Forbidden: only admins may list, create or remove users (HTTP 403)" p --token "$ALICE2" user ls
expect_error 1 "pacer submit: Forbidden: viewers may only read: to submit jobs takes the member or admin role" \
    p --token "$EVE" submit "$TMP/long.json"
expect_error 2 "pacer user: add needs --role admin, member or viewer" p --token "$ADMIN" user add zed
EVE2=$(PACER_TOKEN=$EVE p token new 2>/dev/null) || fail "pacer token new as eve"
[ "$EVE2" != "$EVE" ] && ok 200 "$EVE2" GET /api/v1/whoami || fail "pacer token new: no new working token"
refused 401 "the bearer token is wrong" "$EVE" GET /api/v1/whoami
# a member's token through the CLI: submit and cancel their own job
J=$(p --token "$ALICE2" submit "$TMP/long.json") || fail "pacer submit as alice"
ok 200 "$ADMIN" GET "/api/v1/jobs/$J"
[ "$(jq -r .owner "$TMP/body")" = alice ] || fail "pacer submit as alice: $J's owner is not alice"
p --token "$CAROL" get "$J" | grep -q '^owner  *alice$' || fail "pacer get $J (as a viewer): no 'owner alice' line"
# pacer ls's OWNER column: alice's job, and "-" for the job from before users ($O)
p --token "$CAROL" ls --limit 1000 >"$TMP/jobs.txt" || fail "pacer ls as a viewer"
head -1 "$TMP/jobs.txt" | grep -q '^ID  *STATE  *NAME  *OWNER  *MODEL ' || { cat "$TMP/jobs.txt"; fail "pacer ls header"; }
grep -q "^$J  *[A-Z]*  *long  *alice  " "$TMP/jobs.txt" || { cat "$TMP/jobs.txt"; fail "pacer ls: $J not alice's"; }
grep -q "^$O  *[A-Z]*  *[a-z0-9-]*  *-  " "$TMP/jobs.txt" || { cat "$TMP/jobs.txt"; fail "pacer ls: $O has an owner"; }
p --token "$ALICE2" cancel "$J" >/dev/null || fail "pacer cancel $J as alice"
# pacer whoami: who each token is, with its expiry (eve's in an hour, alice's never)
p --token "$ALICE2" whoami | tr -s ' ' >"$TMP/who.txt" || fail "pacer whoami as alice"
printf 'name alice\nrole member\nauth user-token\nexpires never\n' | diff - "$TMP/who.txt" ||
    fail "pacer whoami as alice: not name, role, auth and expiry"
p --token "$EVE2" whoami >"$TMP/who.txt" || fail "pacer whoami as eve"
grep -q '^role  *viewer$' "$TMP/who.txt" && grep -Eq '^expires  *20[0-9]{2}-' "$TMP/who.txt" ||
    { cat "$TMP/who.txt"; fail "pacer whoami as eve: no viewer role and expiry time"; }
p --token "$ADMIN" --json whoami | jq -e '.name == "admin" and .role == "admin" and .auth == "daemon-token"' \
    >/dev/null || fail "pacer whoami --json with the daemon's token"
expect_error 1 "pacer whoami: Unauthorized: the bearer token is wrong (HTTP 401)" p --token "$EVE" whoami
[ "$(p --token "$ADMIN" user rm eve)" = "eve: removed" ] || fail "pacer user rm eve"
echo "ok: pacer user add|ls|rm, token new and whoami; the CLI takes a member's and a viewer's token"

# ---- the Python client with a member's and a viewer's token ------------------------------------------------
jq -c . "$TMP/long.json" >"$TMP/long.min.json"
PYTHONPATH=clients/python /usr/bin/python3 - "$BASE" "$ALICE2" "$CAROL" "$TMP/long.min.json" <<'PY' || fail "the Python client's checks failed"
import json, sys
import pacer
base, alice, carol, spec = sys.argv[1], sys.argv[2], sys.argv[3], json.load(open(sys.argv[4]))
a = pacer.Client(base, alice)
assert a.whoami()["name"] == "alice", a.whoami()
job = a.submit(spec)
assert job.refresh()["owner"] == "alice", job.refresh()
a.request("DELETE", "/api/v1/jobs/" + job.id)
try:
    pacer.Client(base, carol).submit(spec)
    raise SystemExit("a viewer's submit was accepted")
except pacer.PacerError as e:
    assert e.status == 403 and "viewers may only read" in str(e), (e.status, str(e))
try:
    a.users()
    raise SystemExit("a member listed the users")
except pacer.PacerError as e:
    assert e.status == 403 and e.problem.get("role") == "member", (e.status, e.problem)
print("python client ok")
PY
echo "ok: the Python client takes a member's token (submit, owner, cancel) and reports a viewer's 403"

# ---- the audit ----------------------------------------------------------------------------------------------
rcli XRANGE pacer:events - + | grep '"type":"audit"' >"$TMP/audit.txt"
has_audit() {
    jq -e --arg u "$1" --arg m "$2" --arg t "$3" --argjson s "$4" \
        'any(.[]; .user == $u and .method == $m and .target == $t and .status == $s and (.time | type == "number"))' \
        -s "$TMP/audit.txt" >/dev/null || { cat "$TMP/audit.txt"; fail "no audit event: $1 $2 $3 $4"; }
}
has_audit admin POST alice 201
has_audit alice POST "$A" 201
has_audit bob DELETE "$A" 403
jq -s -e --arg a "$A" 'any(.[]; .user == "alice" and .method == "DELETE" and .target == $a and
    (.status == 200 or .status == 202))' "$TMP/audit.txt" >/dev/null || fail "no audit event of alice cancelling $A"
has_audit alice POST "$R" 201
has_audit carol PUT m2 403
has_audit alice PUT m1 201
has_audit admin DELETE bob 204
for t in "$ALICE" "$ALICE2" "$BOB" "$ADMIN"; do
    grep -qF "$t" "$TMP/audit.txt" && fail "a token is in the audit events"
done
# The event stream leaves the audit out: an audited cancel, then a later job's QUEUED
# event; once that has come through the stream, the audit event before it was passed over.
curl -sN --max-time 60 -H "Authorization: Bearer $ADMIN" "$BASE/api/v1/events" >"$TMP/sse.txt" &
SSE_PID=$!
EXTRA_PIDS="$EXTRA_PIDS $SSE_PID"
await 20 "the event stream to open" grep -q . "$TMP/sse.txt"
ok 201 "$ALICE2" POST /api/v1/jobs -H "$JSON" --data-binary @"$TMP/long.json"
S1=$(jq -r .id "$TMP/body")
got=$(call "$ALICE2" DELETE "/api/v1/jobs/$S1")
ok 201 "$ALICE2" POST /api/v1/jobs -H "$JSON" --data-binary @"$TMP/long.json"
S2=$(jq -r .id "$TMP/body")
await 30 "$S2's QUEUED event on /api/v1/events" grep -q "\"job\":\"$S2\"" "$TMP/sse.txt"
kill "$SSE_PID" 2>/dev/null
grep -q '"type":"audit"\|^event: audit' "$TMP/sse.txt" && { cat "$TMP/sse.txt"; fail "/api/v1/events carried an audit event"; }
call "$ALICE2" DELETE "/api/v1/jobs/$S2" >/dev/null
echo "ok: every change, allowed or refused, is an audit event (who, what, target, status, when); no token in it; /api/v1/events leaves it out"

# ---- --public-reads: an anonymous reader is a viewer; no token at all: no users ------------------------------
stop_coord
start_coord --public-reads
BASE=$(api_base)
curl -s "$BASE/api/v1/whoami" >"$TMP/body"
jq -e '.name == null and .role == "viewer" and .auth == "anonymous"' "$TMP/body" >/dev/null ||
    { cat "$TMP/body"; fail "whoami without a token under --public-reads"; }
ok 200 "$ALICE2" GET /api/v1/whoami
[ "$(jq -r .name "$TMP/body")" = alice ] || fail "alice's token under --public-reads"
code=$(curl -s -o "$TMP/body" -w '%{http_code}' -X POST -H "$JSON" --data-binary @"$TMP/long.json" "$BASE/api/v1/jobs")
[ "$code" = 401 ] || fail "an anonymous submit under --public-reads: HTTP $code, want 401"
echo "ok: --public-reads: an anonymous reader is a viewer, writes still need a token"
# Without a token configured the coordinator checks none: a request without one is the
# local admin (loopback only), one that presents a token is refused (401), whether made
# up or a user's from when the daemon had a token (alice's record is still in Redis), so
# her role cannot turn into the admin's; and it refuses to create users.
stop_coord
unset PACER_TOKEN
start_coord
BASE=$(api_base)
curl -s "$BASE/api/v1/whoami" >"$TMP/body"
jq -e '.name == "admin" and .role == "admin" and .auth == "none"' "$TMP/body" >/dev/null ||
    { cat "$TMP/body"; fail "whoami without a token"; }
NOAUTH="this coordinator has no authentication configured and knows no tokens: send the request without one, or restart the coordinator with --token-file FILE or PACER_TOKEN to check tokens"
refused 401 "$NOAUTH" wrongtoken GET /api/v1/whoami
refused 401 "$NOAUTH" "$ALICE2" GET /api/v1/whoami
O2=$(submit "$TMP/long.json")
refused 401 "$NOAUTH" "$ALICE2" DELETE "/api/v1/jobs/$O2"
is_state "$O2" QUEUED || is_state "$O2" RUNNING || fail "$O2 is not running or queued after alice's refused cancel"
code=$(curl -s -o "$TMP/body" -w '%{http_code}' --max-time 10 "$BASE/api/v1/events?access_token=wrongtoken")
[ "$code" = 401 ] || fail "an event stream with ?access_token=wrongtoken on a tokenless coordinator: HTTP $code"
AUTHOFF="authentication is off: this coordinator was started without a token, so it checks none and every local caller is the admin; a user's role would bind nobody. To turn it on, restart the coordinator with --token-file FILE or PACER_TOKEN set: that token's holder is the first admin, who then adds users with it"
refused 409 "$AUTHOFF" "" POST /api/v1/users -H "$JSON" -d '{"name": "zed", "role": "member"}'
[ "$(jq -r .type "$TMP/body")" = "urn:pacer:problem:authentication-off" ] || fail "POST /api/v1/users: type"
[ -z "$(rcli HGET pacer:users zed)" ] || fail "the refused user zed was stored"
expect_error 1 "pacer user: Users need authentication: $AUTHOFF (HTTP 409)" p user add zed --role member
expect_error 1 "pacer whoami: Unauthorized: $NOAUTH (HTTP 401)" p --token wrongtoken whoami
p whoami >"$TMP/who.txt" || fail "pacer whoami without a token"
grep -q '^name  *admin$' "$TMP/who.txt" && grep -q '^auth  *none (the coordinator has no token' "$TMP/who.txt" ||
    { cat "$TMP/who.txt"; fail "pacer whoami without a token: not the admin, auth none"; }
got=$(call "" DELETE "/api/v1/jobs/$O2")
[ "$got" = 200 ] || [ "$got" = 202 ] || { cat "$TMP/body"; fail "the local admin cancels $O2: HTTP $got"; }
echo "ok: without a token configured the caller is the local admin; any token presented is 401, users are refused (409)"
