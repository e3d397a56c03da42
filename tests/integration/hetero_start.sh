# --policy hetero starts a queued elastic job on fewer slots than it asks, as the scheduler
# simulator does for a trace's "elastic": true job (issue 46, the spec's min_workers), and
# never a rigid one (min_workers = workers), on the network-namespace cluster
# (tests/integration/netns_cluster.inc: pw1..pw3, a slot each), minimum run time 2 s and
# resize cost 0.1 s as in hetero_grow.sh, equal lenet5 profiles (hetero_lib.inc: one class,
# x1). 1. A rigid ssgd job of 2 workers (min_workers 2) runs on 2 hosts. 2. An elastic one
# of 2 workers (min_workers 1) then starts on the one free slot: world 1, its placement's
# reason "started on 1 of the 2 slots it asks: placed on 1 x1 slots: ...". 3. A rigid
# 2-worker job submitted after it waits (the queue says so) while the first runs. 4. The
# first is cancelled: the waiting rigid job starts on its whole ask (2 slots) and runs to
# SUCCEEDED; then the elastic job grows back to its ask (the resize 1 -> 2 with the
# policy's reason "grown from 1 ... to 2 ... slots: slots free (hetero)", in its "resizes",
# in pacer:events and in its placement) from its checkpoint, and is cancelled. Its start
# on 1 is its first resize, 2 -> 1, with the placement's reason (as a start on lost
# hosts). Everything is awaited by polling with a deadline; no speed is asserted. Own
# prefix phs- and /24 10.88.0. Needs root (else exit 77).

T=hetero_start T_PREFIX=phs- T_NET=10.88.0
T_COORD_ARGS="--policy hetero --hetero-min-run 2 --hetero-resize-cost 0.1"
. tests/integration/netns_cluster.inc
. tests/integration/hetero_lib.inc

# The two long jobs (hetero_lib.inc's big_spec: a checkpoint every 8 steps, trained until
# cancelled), and the short rigid one: 2 workers of small.json's job.
big_spec '"workers": 2, "min_workers": 2'
sed 's/"name": "big"/"name": "rigid"/' "$TMP/big.json" >"$TMP/rigid.json"
big_spec '"workers": 2, "min_workers": 1'
cp "$TMP/big.json" "$TMP/elastic.json" # named big: hetero_lib.inc's checkpointed looks for big.ckpt
sed 's/"workers": 1/"workers": 2, "min_workers": 2/' "$TMP/small.json" >"$TMP/short.json"
grep -q '"min_workers": 2' "$TMP/short.json" || fail "short.json: no min_workers in $(cat "$TMP/short.json")"
hosts='([.placement.hosts_by_class[][]] | length)'

# 1. The rigid job on its ask (await fails at once should $big end).
big=$(submit "$TMP/rigid.json")
rigid=$big
await 300 "$rigid running on 2 hosts" is "$rigid" "[.state, .world, $hosts]" '["RUNNING",2,2]'
echo "ok: $rigid (rigid, min_workers 2) runs on 2 hosts: $(field "$rigid" .placement.reason)"

# 2. The elastic job on the one free slot, 1 of its 2.
elastic=$(submit "$TMP/elastic.json")
start="started on 1 of the 2 slots it asks: placed on 1 x1 slots: 1.00x its speed on 1 slot of its slowest class (hetero)"
await 300 "$elastic running on 1 of its 2 slots" is "$elastic" "[.state, .world, $hosts, .placement.reason]" \
    "[\"RUNNING\",1,1,\"$start\"]"
grep -q "job $elastic: $start" "$TMP/coord.log" || fail "the coordinator's log does not say: job $elastic: $start"
big=$elastic
expect_resize 0 2 1 "$start"
big=$rigid
echo "ok: $elastic (elastic, min_workers 1) $start"

# 3. The rigid job submitted after it waits: the policy decided (a queue position) and did
# not start it short; the others run as they were.
short=$(submit "$TMP/short.json")
await 120 "$short waiting in the queue" is "$short" '[.state, (.queue.position >= 1)]' '["QUEUED",true]'
is "$rigid" '[.state, .world]' '["RUNNING",2]' || fail "$rigid changed: $(jq -c '{state, world}' "$TMP/body")"
is "$elastic" '[.state, .world]' '["RUNNING",1]' || fail "$elastic changed: $(jq -c '{state, world}' "$TMP/body")"
echo "ok: $short (rigid, 2 workers) waits: $(field "$short" .queue.detail)"

# 4. The first cancelled: the waiting rigid job starts on its whole ask and ends; then the
# elastic one grows back to its ask from its checkpoint.
cancel_big
big=$elastic
await 300 "$elastic's first checkpoint" checkpointed
small=$short
small_succeeds
is "$short" '[.world, (.placement.reason | startswith("placed on 2 x1 slots"))]' '[2,true]' ||
    fail "$short did not run on its ask of 2: $(jq -c '{world, placement}' "$TMP/body")"
echo "ok: $short ran on its ask of 2 slots to SUCCEEDED"
# (its reason's class names are the profiles' after the jobs that ended folded their
# measured speeds in: the hosts may no longer be one class x1)
await 180 "$elastic's resize 1 (grown back)" is "$elastic" ".resizes | length > 1" true
grow=$(field "$elastic" '.resizes[1] | select(.from == 1 and .to == 2) | .reason' | jq -r .)
echo "$grow" | grep -Eq '^grown from 1 [^ ]+ to (2 [^ ]+|1 [^ ]+ \+ 1 [^ ]+) slots: slots free \(hetero\)$' ||
    fail "$elastic's resize 1: $(field "$elastic" '.resizes[1]'), want 1 -> 2: grown from 1 ... to 2 ... slots: slots free (hetero)"
resize_event "$elastic" "$grow" || fail "no resize event of $elastic with the reason '$grow' in pacer:events"
await 180 "$elastic running on its ask of 2" is "$elastic" '[.state, .world, .placement.reason]' \
    "[\"RUNNING\",2,\"$grow\"]"
echo "ok: $elastic $grow (resize, event, placement)"

cancel_big
