# --policy hetero grows an elastic job past its ask (issue 46, the spec's max_workers) onto
# idle hosts, and takes the lent slot back when another job waits, on the network-namespace
# cluster (tests/integration/netns_cluster.inc: pw1..pw3, a slot each), with a minimum run
# time of 2 s and a resize cost of 0.1 s as in hetero_resize.sh, and the default grow
# overhead (0.2). Equal lenet5 profiles for the three hosts (one class, x1). An ssgd lenet5
# job of workers 2, max_workers 3 runs alone on two hosts; once it has a checkpoint the
# policy grows it to 3 slots (the third host idle): stopped and relaunched from its
# checkpoint on 3 ranks (the worker's --world 3), the resize 2 -> 3 in its "resizes", in
# pacer:events and in its placement with the reason "grown from 2 x1 to 3 x1 slots onto
# idle hosts (past its ask of 2) (hetero)", the worker's log saying it runs grown over the
# same global batch. Then a 1-worker job is submitted: the policy takes the lent slot back
# (a shrink 3 -> 2 naming the small job), the small job runs on the freed host to
# SUCCEEDED, and the first is cancelled. Everything is awaited by polling with a deadline;
# no speed is asserted (--hetero-grow-overhead's refusals are hetero_resize.sh's). Own
# prefix phg- and /24 10.87.0. Needs root (else exit 77).

T=hetero_grow T_PREFIX=phg- T_NET=10.87.0
T_COORD_ARGS="--policy hetero --hetero-min-run 2 --hetero-resize-cost 0.1"
. tests/integration/netns_cluster.inc
. tests/integration/hetero_lib.inc

# The grower (hetero_lib.inc's big_spec): 2 workers x 32 (global batch 64), up to 3.
big_spec '"workers": 2, "max_workers": 3'

# 1. Started on its ask (2 slots), then, once it has a checkpoint, grown past it onto the
# idle third host (minimum run 2 s: the 2-rank attempt may be too short to be seen by
# polling on a loaded machine, so its world is checked by the resize's "from").
big=$(submit "$TMP/big.json")
await 300 "$big's first checkpoint" checkpointed
grow="grown from 2 x1 to 3 x1 slots onto idle hosts (past its ask of 2) (hetero)"
expect_resize 0 2 3 "$grow"
await 180 "$big running on 3 ranks on pw1..pw3" is "$big" \
    '[.state, .world, ([.placement.hosts_by_class[][]] | sort), .placement.reason]' \
    "[\"RUNNING\",3,[\"pw1\",\"pw2\",\"pw3\"],\"$grow\"]"
grown() { grep -q "elastic: grown to 3 workers (the spec's 2, max_workers 3) sharing its global batch of 64" \
    "$STATE/jobs/$big/log" && grep -q 'resumed from .* at step [1-9]' "$STATE/jobs/$big/log"; }
await 120 "$big's worker to run grown to 3 from its checkpoint" grown
echo "ok: $big $grow (resize, event, placement; the worker resumed on 3 ranks over the global batch of 64)"

# 2. A job waits: the lent slot is taken back first.
small=$(submit "$TMP/small.json")
shrink="shrunk from 3 x1 to 2 x1 slots to admit $small (hetero)"
expect_resize 1 3 2 "$shrink"
echo "ok: $big $shrink (resize, event)"
small_succeeds
echo "ok: $small ran beside it to SUCCEEDED ($(jq -c '.placement.hosts_by_class' "$TMP/body"))"

cancel_big
