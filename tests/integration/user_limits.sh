# What one user may hold of a shared coordinator (common/users.h "limits"), on one host with
# two slots under --policy fair. An admin's 2-worker job takes both slots (its workers are
# stopped with SIGSTOP, so it holds them without using the CPU). alice (member) may not ask
# for priority high (403) nor queue a 4th job (--member-max-queued 3: 429), each refusal
# naming the limit and its value (the CLI prints it); an admin raises her max_queued to 300 and sets max_slots
# 1 (PUT /api/v1/users/alice, shown in GET /api/v1/users), so a 2-worker job of hers is
# refused (429). She queues 260 jobs, more than the 256 the policy decides on at a time;
# the admin's high-priority job and bob's behind them are queued, and the next job passes
# --max-queued (429). The high job has a queue object, first in line; her last jobs say
# they wait behind the scheduler's view. When the slots free up the high job starts first;
# when it ends, alice's first job starts and her second waits for her slot limit, while
# bob's, behind it, takes the other slot. Then alice is removed: her jobs and her model are
# "alice#removed-1"'s in the listings, and a new alice may not cancel or delete them (403).
# Every wait polls with a deadline.
. tests/integration/coordinator_lib.inc
need_api_tools
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"

ADMIN=limits-admin-$$-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
export PACER_TOKEN=$ADMIN
HEARTBEAT_TIMEOUT=600 # the stopped workers must not count as lost
has_queue() { [ "$(q "$1" '.queue.position')" = "$2" ]; }
# the session's pacer-worker processes of job $1
workers_of() { ps -eo pid=,sid=,comm= | awk -v s="$(job_pid "$1")" '$2 == s && $3 == "pacer-worker" { print $1 }'; }
has_workers() { [ "$(workers_of "$1" | wc -l)" -eq "$2" ]; }
# submit TOKEN FILE [QUERY] - POST /api/v1/jobs: the status; the job in $TMP/body
post() { call "$1" POST "/api/v1/jobs$3" -H "$JSON" --data-binary @"$2"; }

printf 'localhost slots=2\n' >"$TMP/hosts"
start_coord --hostfile "$TMP/hosts" --preflight off --policy fair --preempt-min-run 1h --max-queued 262 \
    --member-max-queued 3
BASE=$(api_base)
ALICE=$(adduser alice member) || exit 1
BOB=$(adduser bob member) || exit 1

# ---- the admin's job holds both slots ------------------------------------------------------------------------
spec2 "$TMP/hold.json" hold 1000
spec2 "$TMP/high.json" high 1000 high
spec "$TMP/one.json" one 1000
jq '. + {priority: "high"}' "$TMP/one.json" >"$TMP/one-high.json"
jq '. + {workers: 2, algorithm: {name: "ssgd"}}' "$TMP/one.json" >"$TMP/two.json"
ok 201 "$ADMIN" POST /api/v1/jobs -H "$JSON" --data-binary @"$TMP/hold.json"
hold=$(jq -r .id "$TMP/body")
await 120 "job $hold to run its two workers" has_workers "$hold" 2
for p in $(workers_of "$hold"); do kill -STOP "$p"; done

# ---- alice's limits ------------------------------------------------------------------------------------------
refused 403 "priority: high is above what alice may use (max_priority normal); an admin may raise it (PUT /api/v1/users/alice)" \
    "$ALICE" POST /api/v1/jobs -H "$JSON" --data-binary @"$TMP/one-high.json"
for i in 1 2 3; do ok 201 "$ALICE" POST /api/v1/jobs -H "$JSON" --data-binary @"$TMP/one.json"; done
refused 429 "max_queued: alice may have at most 3 jobs queued and has 3: submit again once one has started, or cancel one" \
    "$ALICE" POST /api/v1/jobs -H "$JSON" --data-binary @"$TMP/one.json"
jq -e '.type == "urn:pacer:problem:limit-reached" and .status == 429' "$TMP/body" >/dev/null ||
    fail "the 429's problem document: $(cat "$TMP/body")"
if [ -x "$BUILD/pacer" ]; then
    expect_error 1 "pacer submit: A limit is reached: max_queued: alice may have at most 3 jobs queued and has 3" \
        env PACER_URL="$BASE" PACER_TOKEN="$ALICE" "$BUILD/pacer" submit "$TMP/one.json"
fi
refused 400 "max_slots: an integer from 0 (no limit) to 1000000, or null (the role's default)" \
    "$ADMIN" PUT /api/v1/users/alice -H "$JSON" -d '{"max_slots": -1}'
refused 403 "only admins may list, create or remove users" "$ALICE" PUT /api/v1/users/alice -H "$JSON" \
    -d '{"max_queued": 1000}'
ok 200 "$ADMIN" PUT /api/v1/users/alice -H "$JSON" -d '{"max_queued": 300, "max_slots": 1}'
jq -e '.limits == {"max_queued": 300, "max_slots": 1, "max_models": 32, "max_priority": "normal"}' "$TMP/body" \
    >/dev/null || fail "PUT alice's limits: $(cat "$TMP/body")"
call "$ADMIN" GET /api/v1/users >/dev/null
jq -e '.users[] | select(.name == "bob") | .limits == {"max_queued": 3, "max_slots": null, "max_models": 32,
    "max_priority": "normal"}' "$TMP/body" >/dev/null || fail "GET /api/v1/users: bob's limits: $(cat "$TMP/body")"
refused 429 "max_slots: alice's running jobs may hold at most 1 slot at once, and this job asks for 2 ranks: it could never start" \
    "$ALICE" POST /api/v1/jobs -H "$JSON" --data-binary @"$TMP/two.json"
echo "ok: priority, max_queued and max_slots refused with their values; an admin sets a user's limits"

# ---- 260 queued jobs of hers, an admin's high one behind them ------------------------------------------------
# one curl for the 257 more (its URL glob: one request per n)
curl -s -o /dev/null -w '%{http_code}\n' -X POST -H "Authorization: Bearer $ALICE" -H "$JSON" \
    --data-binary @"$TMP/one.json" "$BASE/api/v1/jobs?n=[1-257]" >"$TMP/codes"
[ "$(grep -c '^201$' "$TMP/codes")" = 257 ] || fail "alice's 257 more jobs: $(sort "$TMP/codes" | uniq -c)"
ok 201 "$ADMIN" POST /api/v1/jobs -H "$JSON" --data-binary @"$TMP/high.json"
high=$(jq -r .id "$TMP/body")
ok 201 "$BOB" POST /api/v1/jobs -H "$JSON" --data-binary @"$TMP/one.json"
bob1=$(jq -r .id "$TMP/body")
refused 429 "the queue holds 262 jobs, this coordinator's limit (--max-queued 262): submit again once some have started" \
    "$BOB" POST /api/v1/jobs -H "$JSON" --data-binary @"$TMP/one.json"
call "$ADMIN" GET "/api/v1/jobs?state=QUEUED&limit=1000" >/dev/null
jq -r '.jobs[] | select(.owner == "alice") | .id' "$TMP/body" | sort -t- -k2 -n >"$TMP/alice-jobs"
[ "$(wc -l <"$TMP/alice-jobs")" = 260 ] || fail "alice has $(wc -l <"$TMP/alice-jobs") queued jobs, want 260"
a1=$(sed -n 1p "$TMP/alice-jobs")
a2=$(sed -n 2p "$TMP/alice-jobs")
alast=$(tail -1 "$TMP/alice-jobs")
await 30 "job $high (high, behind 260 of alice's) at position 1" has_queue "$high" 1
[ "$(q "$high" .queue.reason)" = slots ] || fail "$high: $(q "$high" .queue)"
# bob's job came after the high one: the tick that placed the high one may have run before
# bob's was queued, so its queue object may come a tick later.
has_queue_object() { [ "$(q "$1" '.queue | type')" = object ]; }
await 30 "bob's $bob1 to have a queue object" has_queue_object "$bob1"
[ "$(q "$alast" .queue.reason)" = "behind the scheduler's view" ] || fail "$alast: $(q "$alast" .queue)"
q "$alast" .queue.detail | grep -q "^waits behind the 256 queued jobs the scheduler considers at a time" ||
    fail "$alast: $(q "$alast" .queue.detail)"
echo "ok: $high has a queue object at position 1 behind alice's 260 jobs; --max-queued refused the next"

# ---- slots free up: the high job first; then alice's slot limit holds back only her own ---------------------------
for p in $(workers_of "$hold"); do kill -CONT "$p"; done
ok 202 "$ADMIN" DELETE "/api/v1/jobs/$hold"
await 60 "job $high to start" is_api_state "$high" RUNNING
is_api_state "$a1" QUEUED || fail "$a1 is $(q "$a1" .state) while $high holds both slots"
call "$ADMIN" DELETE "/api/v1/jobs/$high" >/dev/null
await 60 "job $a1 (alice's first) to start" is_api_state "$a1" RUNNING
await 60 "job $bob1 (bob's, behind alice's held ones) to start" is_api_state "$bob1" RUNNING
[ "$(q "$a2" .queue.reason)" = "its user's slot limit" ] || fail "$a2: $(q "$a2" .queue)"
q "$a2" .queue.detail | grep -q "their limit (max_slots) is 1" || fail "$a2: $(q "$a2" .queue.detail)"
echo "ok: $high started first; then $a1 ran, $a2 waited for alice's max_slots 1, and bob's $bob1 took the other slot"

# ---- alice removed: nothing of hers passes to the next alice ------------------------------------------------------
jq -n --arg p "$FASHION" '{model: "lenet5", dataset: {name: "fashion-mnist", path: $p, train_subset: 64,
    test_subset: 64}, workers: 1, batch_size: 32, epochs: 1, seed: 5, device: "cpu"}' >"$TMP/w.json"
$WORKER --spec "$TMP/w.json" --export-onnx-init "$TMP/m.onnx" >"$TMP/w.log" 2>&1 ||
    { tail -5 "$TMP/w.log"; fail "pacer-worker --export-onnx-init"; }
ok 201 "$ALICE" PUT /api/v1/models/alices -H "Content-Type: application/octet-stream" --data-binary @"$TMP/m.onnx"
ok 204 "$ADMIN" DELETE /api/v1/users/alice
ALICE2=$(adduser alice member) || exit 1
refused 403 "members may cancel only their own jobs: $a2 is alice#removed-1's" "$ALICE2" DELETE "/api/v1/jobs/$a2"
refused 403 "members may delete only their own models: alices is alice#removed-1's" "$ALICE2" \
    DELETE /api/v1/models/alices
call "$ALICE2" GET "/api/v1/jobs?state=QUEUED&limit=1000" >/dev/null
jq -e '[.jobs[] | select(.owner == "alice")] == [] and ([.jobs[] | select(.owner == "alice#removed-1")] | length) > 250' \
    "$TMP/body" >/dev/null || fail "the job list after alice's removal: owners $(jq -c '[.jobs[].owner] | unique' "$TMP/body")"
call "$ALICE2" GET /api/v1/models/alices >/dev/null
[ "$(jq -r .owner "$TMP/body")" = "alice#removed-1" ] || fail "the model's owner: $(cat "$TMP/body")"
[ "$(q "$a1" .owner)" = "alice#removed-1" ] || fail "$a1's owner: $(q "$a1" .owner)"
ok 201 "$ALICE2" POST /api/v1/jobs -H "$JSON" --data-binary @"$TMP/one.json" # her count starts at 0
echo "ok: alice's jobs and model are alice#removed-1's; the new alice may not cancel or delete them"
stop_coord
