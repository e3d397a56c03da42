# A queue that says when (issue 45), on a real coordinator with two slots (a hostfile,
# whatever the machine has) and 2-worker Fashion-MNIST jobs: while job a runs, b and c
# wait with positions 1 and 2 and the reason "slots"; b gets an estimated start once a
# has measured progress (a time after now, before a generous bound: never a timing
# verdict), c none (null, and its sentence says why); `pacer ls` and `pacer get` show
# them; when a ends, b starts and c moves up. An 8-worker job on the two slots is
# accepted with the warning "8 ranks on 2 slots: oversubscribed 4x" in the answer and on
# its page; with --refuse-oversubscribed it is a 422 naming the option; --policy takes
# fifo and fair and refuses anything else, naming them. Under --policy fair on four slots
# (a 3-worker job running): a high-priority job goes ahead of a low one submitted before
# it, and a 1-worker job is backfilled (starts while the head waits) once the head's start
# is estimated, since it leaves the head its slots then; both waiting jobs run afterwards.
. tests/integration/coordinator_lib.inc
PACER=$BUILD/pacer
[ -x "$PACER" ] || skip "$PACER not built: libcurl missing (make deps installs libcurl4-openssl-dev)"
command -v curl >/dev/null || skip "curl not installed (make deps)"
command -v jq >/dev/null || skip "jq not installed (make deps)"
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"

export PACER_TOKEN=queue-token-$$
AUTH="Authorization: Bearer $PACER_TOKEN"
p() { "$PACER" "$@"; }
# spec2 FILE NAME EPOCHS - the small job on two ssgd ranks.
spec2() {
    cat >"$1" <<JSON
{"name": "$2", "model": "lenet5", "workers": ${4:-2}, "algorithm": {"name": "ssgd"},
 "dataset": {"name": "fashion-mnist", "train_subset": 2048, "test_subset": 500},
 "optimizer": {"lr": 0.02, "momentum": 0.9},
 "batch_size": 64, "epochs": $3, "seed": 7, "log_every": 10, "checkpoint": {"every_steps": 10}}
JSON
}
get() { curl -s -H "$AUTH" "$BASE/api/v1/jobs/$1"; }
q() { get "$1" | jq -c "$2"; }
has_queue() { [ "$(q "$1" '.queue.position')" = "$2" ]; }
has_estimate() { [ "$(q "$1" '.queue.estimated_start | type')" = '"number"' ]; }
is_api_state() { [ "$(q "$1" .state | tr -d '"')" = "$2" ]; }

expect_error 2 "'lottery' is not a policy: fifo, fair, agnostic or hetero" "$COORD" --state-dir "$TMP/x" --policy lottery
echo "ok: --policy lottery refused, naming fifo and fair"

printf 'localhost slots=2\n' >"$TMP/hosts"
start_coord --hostfile "$TMP/hosts" --preflight off --policy fifo
BASE=$(api_base)
export PACER_URL=$BASE
[ "$(curl -s -H "$AUTH" "$BASE/api/v1/cluster" | jq .coordinator.slots)" = 2 ] || fail "the cluster has not 2 slots"

# a runs far longer than the checks below take (cancelled at the end), b and c wait.
spec2 "$TMP/a.json" a 20000
spec2 "$TMP/b.json" b 1
spec2 "$TMP/c.json" c 1
a=$(p submit "$TMP/a.json") || fail "submit a"
await 120 "job $a to run its worker" has_worker "$a"
b=$(p submit "$TMP/b.json") || fail "submit b"
c=$(p submit "$TMP/c.json") || fail "submit c"
await 30 "job $b at position 1" has_queue "$b" 1
await 30 "job $c at position 2" has_queue "$c" 2
[ "$(q "$b" .queue.reason)" = '"slots"' ] || fail "b: reason $(q "$b" .queue)"
[ "$(q "$c" .queue.reason)" = '"slots"' ] || fail "c: reason $(q "$c" .queue)"
q "$b" .queue.detail | grep -q "waits for 2 slots: 0 of 2 free" || fail "b: detail $(q "$b" .queue)"
echo "ok: $b and $c queued at positions 1 and 2, reason slots"

# b's start: from a's measured progress (its workers publish step and total_steps).
await 120 "job $b to get an estimated start" has_estimate "$b"
now=$(date +%s)
est=$(q "$b" .queue.estimated_start)
at_least "b's estimated start (s)" "$est" "$now"
cmp_num "$est" "<=" "$((now + 30 * 86400))" || fail "b's estimated start $est is not within 30 days of $now"
# c waits for b, whose duration nothing has measured: null, and the sentence says why
[ "$(q "$c" .queue.estimated_start)" = null ] || fail "c: $(q "$c" .queue)"
q "$c" .queue.detail | grep -q "start not estimated: $b, ahead of it, has not started yet" ||
    fail "c: detail $(q "$c" .queue)"
echo "ok: $b starts at $est (now $now), $c not estimated, saying why"

p ls --state QUEUED >"$TMP/ls" || fail "pacer ls exited $?"
grep "^$b " "$TMP/ls" | grep -q "#1 slots, starts in " || { cat "$TMP/ls"; fail "pacer ls: b"; }
grep "^$c " "$TMP/ls" | grep -q "#2 slots, start not estimated" || { cat "$TMP/ls"; fail "pacer ls: c"; }
p get "$b" >"$TMP/get" || fail "pacer get exited $?"
grep -q "position 1 (slots): waits for 2 slots" "$TMP/get" || { cat "$TMP/get"; fail "pacer get: queue"; }
grep -q "in .*from the running jobs' progress" "$TMP/get" || { cat "$TMP/get"; fail "pacer get: starts"; }
p get "$c" | grep -q "not estimated (see queue)" || fail "pacer get $c: starts"
echo "ok: pacer ls and pacer get show positions, reasons and starts"

# Oversubscribed: accepted (factor 4 = --oversubscribe-factor's default), said at
# submission and on its page.
spec2 "$TMP/big.json" big 1 8
curl -s -H "$AUTH" -H 'Content-Type: application/json' --data-binary @"$TMP/big.json" "$BASE/api/v1/jobs" >"$TMP/big"
big=$(jq -r .id "$TMP/big")
jq -e '.warnings | index("8 ranks on 2 slots: oversubscribed 4x")' "$TMP/big" >/dev/null ||
    fail "no oversubscription warning at submission: $(cat "$TMP/big")"
[ "$(q "$big" .oversubscribed)" = '"8 ranks on 2 slots: oversubscribed 4x"' ] || fail "page: $(get "$big")"
p get "$big" | grep -q "oversubscribed.*8 ranks on 2 slots: oversubscribed 4x" || fail "pacer get $big"
p cancel "$big" >/dev/null || fail "cancel $big"
big2=$(p submit "$TMP/big.json" 2>"$TMP/warn") || fail "pacer submit big: $(cat "$TMP/warn")"
grep -q "pacer submit: warning: 8 ranks on 2 slots: oversubscribed 4x" "$TMP/warn" || fail "pacer submit: $(cat "$TMP/warn")"
p cancel "$big2" >/dev/null || fail "cancel $big2"
echo "ok: an 8-worker job on 2 slots is said to be oversubscribed 4x"

# a ends: b starts, c moves up.
p cancel "$a" >/dev/null || fail "cancel $a"
await 120 "job $b to start" is_api_state "$b" RUNNING
await 30 "job $c at position 1" has_queue "$c" 1
[ "$(q "$b" .queue)" = null ] || fail "a running job shows a queue: $(q "$b" .queue)"
await 300 "job $b to succeed" is_api_state "$b" SUCCEEDED
await 300 "job $c to succeed" is_api_state "$c" SUCCEEDED
echo "ok: $b ran when $a ended, then $c"
stop_coord

start_coord --hostfile "$TMP/hosts" --preflight off --refuse-oversubscribed
BASE=$(api_base)
spec2 "$TMP/three.json" three 1 3
code=$(curl -s -o "$TMP/body" -w '%{http_code}' -H "$AUTH" -H 'Content-Type: application/json' \
    --data-binary @"$TMP/three.json" "$BASE/api/v1/jobs")
[ "$code" = 422 ] || fail "an oversubscribed job with --refuse-oversubscribed: $code $(cat "$TMP/body")"
jq -e '.detail | test("3 ranks on 2 slots: oversubscribed 1.5x; this coordinator refuses oversubscribed jobs \\(--refuse-oversubscribed\\): at most 2 workers")' \
    "$TMP/body" >/dev/null || fail "422 detail: $(cat "$TMP/body")"
echo "ok: --refuse-oversubscribed: 422 naming the rule"
stop_coord

printf 'localhost slots=4\n' >"$TMP/hosts4"
start_coord --hostfile "$TMP/hosts4" --preflight off --policy fair
BASE=$(api_base)
export PACER_URL=$BASE
prio() { jq ".priority = \"$2\"" "$1" >"$1.p" && mv "$1.p" "$1"; }
spec2 "$TMP/f.json" f 20000 3
spec2 "$TMP/lo.json" lo 1
prio "$TMP/lo.json" low
spec2 "$TMP/hi.json" hi 1
prio "$TMP/hi.json" high
spec2 "$TMP/bf.json" bf 1 1
prio "$TMP/bf.json" low
f=$(p submit "$TMP/f.json") || fail "submit f"
await 120 "job $f to run its worker" has_worker "$f"
lo=$(p submit "$TMP/lo.json") || fail "submit lo"
hi=$(p submit "$TMP/hi.json") || fail "submit hi"
await 30 "job $hi (high) at position 1" has_queue "$hi" 1
await 30 "job $lo (low) at position 2" has_queue "$lo" 2
[ "$(q "$hi" .spec.priority)" = '"high"' ] || fail "hi's spec: $(q "$hi" .spec.priority)"
echo "ok: fair: $hi (high) ahead of $lo (low), submitted before it"
await 120 "job $hi to get an estimated start" has_estimate "$hi"
bf=$(p submit "$TMP/bf.json") || fail "submit bf"
not_queued() { ! is_api_state "$1" QUEUED; }
await 60 "job $bf to be backfilled" not_queued "$bf"
is_api_state "$hi" QUEUED || fail "the head $hi is $(q "$hi" .state) while $f runs"
grep -q "job $bf: claimed (bf, 1 rank, slots 4/4; backfilled ahead of the queue's head)" "$TMP/coord.log" ||
    fail "no backfill line for $bf in the log"
echo "ok: fair: $bf (1 worker) backfilled while $hi waits for $f"
p cancel "$f" >/dev/null || fail "cancel $f"
await 300 "job $hi to succeed" is_api_state "$hi" SUCCEEDED
await 300 "job $lo to succeed" is_api_state "$lo" SUCCEEDED
await 300 "job $bf to succeed" is_api_state "$bf" SUCCEEDED
echo "ok: fair: $hi, $lo and $bf all ran"
stop_coord
