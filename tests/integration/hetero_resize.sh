# --policy hetero resizes a running elastic job (issue 46), on the network-namespace
# cluster (tests/integration/netns_cluster.inc: pw1..pw3, a slot each), with a minimum run
# time of 2 s and a resize cost of 0.1 s (--hetero-min-run, --hetero-resize-cost) so that
# the policy may change a job seconds after its start. The test seeds equal lenet5
# profiles for the three hosts (one class, x1). A 3-worker elastic lenet5 job (1..3 ranks)
# runs alone on pw1..pw3; once it has a checkpoint a 1-worker job is submitted. The policy
# shrinks the first to 2 slots to admit it: stopped and relaunched from its checkpoint on
# pw1 and pw2 (the hosts it keeps), the resize 3 -> 2 in its "resizes", in pacer:events
# and in its placement, each with the policy's reason naming the second job; the second
# runs on pw3 to SUCCEEDED; then the first grows back to 3 on pw1..pw3 (a second resize,
# the policy's reason) and resumes from its checkpoint; then it is cancelled. Everything
# is awaited by polling with a deadline; no speed is asserted. Also: the options' refusals.
# Own prefix phr- and /24 10.85.0. Needs root (else exit 77).

T=hetero_resize T_PREFIX=phr- T_NET=10.85.0
T_COORD_ARGS="--policy hetero --hetero-min-run 2 --hetero-resize-cost 0.1"
. tests/integration/netns_cluster.inc
. tests/integration/hetero_lib.inc

# The options' refusals: a clear message, exit 2.
for bad in "--hetero-min-run soon" "--hetero-resize-cost -3" "--hetero-hysteresis x" "--hetero-grow-overhead x" \
    "--hetero-grow-overhead 1.5" "--hetero-grow-overhead -0.1"; do
    # shellcheck disable=SC2086 # the option and its value, two words
    "$COORD" $bad >"$TMP/opt.out" 2>&1 && fail "pacer-coordinator $bad was accepted"
    opt=${bad%% *}
    grep -q "^pacer-coordinator: $opt: '${bad#* }' is not a " "$TMP/opt.out" ||
        fail "pacer-coordinator $bad: $(cat "$TMP/opt.out")"
done
echo "ok: --hetero-min-run, --hetero-resize-cost, --hetero-hysteresis and --hetero-grow-overhead refuse what is not a number (in range)"

# The elastic job (hetero_lib.inc's big_spec): 3 ranks x 32, trains through everything
# below; cancelled at the end. The small one (hetero_lib.inc): 1 rank, 16 steps.
big_spec '"workers": 3'

big=$(submit "$TMP/big.json")
await 180 "$big running on pw1..pw3" is "$big" '[.state, .world, .placement.hosts_by_class]' '["RUNNING",3,{"x1":["pw1","pw2","pw3"]}]'
await 300 "$big's first checkpoint" checkpointed
echo "ok: $big runs on pw1 pw2 pw3 and has a checkpoint"

small=$(submit "$TMP/small.json")
shrink="shrunk from 3 x1 to 2 x1 slots to admit $small (hetero)"
expect_resize 0 3 2 "$shrink"
[ "$(field "$big" .placement)" = "{\"hosts_by_class\":{\"x1\":[\"pw1\",\"pw2\"]},\"reason\":\"$shrink\"}" ] ||
    fail "$big's placement after the shrink: $(field "$big" .placement)"
echo "ok: $big $shrink (resize, event, placement)"

await 180 "$small placed on pw3" is "$small" .placement.hosts_by_class '{"x1":["pw3"]}'
small_succeeds
echo "ok: $small ran on pw3 beside it to SUCCEEDED"

await 180 "$big grown back" is "$big" '.resizes | length >= 2' true
# The classes may have changed by then: the small job's end stored its measured lenet5
# speed on pw3 (dynbatch), which regroups the hosts (e.g. "grown from 2 x1/16 to 1 x1 + 2
# x1/16 slots"): the grow is checked by its sizes, its sentence and its hosts, not by names.
g=$(field "$big" '.resizes[1]')
echo "$g" | jq -e '.from == 2 and .to == 3 and (.reason | test("^grown from 2 [^ ]+ to .* slots: slots free \\(hetero\\)$"))' \
    >/dev/null || fail "$big's second resize: $g"
grow=$(echo "$g" | jq -r .reason)
await 180 "$big running on 3 ranks on pw1..pw3 again" is "$big" \
    '[.state, .world, ([.placement.hosts_by_class[][]] | sort), .placement.reason]' \
    "[\"RUNNING\",3,[\"pw1\",\"pw2\",\"pw3\"],$(echo "$g" | jq .reason)]"
# both relaunches (the shrink's, the grow's) resumed from a checkpoint
resumed() { [ "$(grep -c 'resumed from .* at step [1-9]' "$STATE/jobs/$big/log")" -ge 2 ]; }
await 120 "$big to resume from its checkpoint twice" resumed
echo "ok: $big $grow, resumed from its checkpoint ($(grep -o 'resumed from .* at step [0-9]*' "$STATE/jobs/$big/log" | tail -1))"

cancel_big
