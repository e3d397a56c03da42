# A job --policy hetero runs below its ask stays there when the coordinator restarts: the
# cap on its world and its placement are in its job hash (world_cap, placement) and adopted
# with it, so only the policy grows it, as before the restart. On the network-namespace
# cluster (tests/integration/netns_cluster.inc: pw1..pw3, a slot each), equal lenet5
# profiles (hetero_lib.inc: one class, x1), --hetero-min-run 600: a job whose slots changed
# less than 600 s ago is pinned, so the policy grows none during the test.
# 1. A rigid ssgd job of 2 workers (min_workers 2) runs on 2 hosts; an elastic one of 2
# workers (min_workers 1) starts on the one free slot (world 1, capped, placed).
# 2. The rigid job is cancelled: two slots are free, and the elastic job trains on at world
# 1 through two checkpoints (pinned: the policy does not grow it, and the cap keeps the
# coordinator's own grow_check from it).
# 3. The coordinator is killed (SIGKILL) and started again on the same Redis and state
# dir: the elastic job is adopted, and through two more checkpoints stays at world 1 with
# its one resize (the start below the ask) and no grow armed. Before world_cap and the
# placement were adopted, the adopted job was neither capped nor placed and grew to 2 at
# its next checkpoint ("grows from 1 to 2 ranks at its next checkpoint").
# Everything is awaited by polling with a deadline; no speed is asserted. Own prefix pha-
# and /24 10.86.0. Needs root (else exit 77).

T=hetero_adopt T_PREFIX=pha- T_NET=10.86.0
T_COORD_ARGS="--policy hetero --hetero-min-run 600 --hetero-resize-cost 0.1"
. tests/integration/netns_cluster.inc
. tests/integration/hetero_lib.inc

big_spec '"workers": 2, "min_workers": 2'
sed 's/"name": "big"/"name": "rigid"/' "$TMP/big.json" >"$TMP/rigid.json"
big_spec '"workers": 2, "min_workers": 1'
hosts='([.placement.hosts_by_class[]?[]?] | length)'
# two_checkpoints - waits for two new writes of $big's checkpoint (each replaces the file:
# its inode or mtime changes), 180 s each.
two_checkpoints() {
    ck=$STATE/jobs/$big/checkpoints/big.ckpt
    for n in 1 2; do
        was=$(stat -c '%i %Y.%y' "$ck" 2>/dev/null)
        await 180 "$big's checkpoint written again ($n of 2)" sh -c '[ "$(stat -c "%i %Y.%y" "$1" 2>/dev/null)" != "$2" ]' \
            sh "$ck" "$was"
    done
}
# at_one WHEN - $big still runs on 1 rank with its one resize, and the coordinator's log
# (from line $from) says of no grow.
at_one() {
    is "$big" '[.state, .world, (.resizes | length)]' '["RUNNING",1,1]' ||
        fail "$big $1: $(jq -c '{state, world, resizes}' "$TMP/body"), want RUNNING at world 1 with one resize"
    tail -n +"$from" "$TMP/coord.log" | grep "job $big: .*grow" && fail "$big $1: the coordinator grows it"
    echo "ok: $big $1: RUNNING at world 1, one resize, no grow"
}

# 1. The rigid job on its ask, the elastic one on the free slot.
big=$(submit "$TMP/rigid.json")
rigid=$big
await 300 "$rigid running on 2 hosts" is "$rigid" "[.state, .world, $hosts]" '["RUNNING",2,2]'
elastic=$(submit "$TMP/big.json")
start="started on 1 of the 2 slots it asks: placed on 1 x1 slots: 1.00x its speed on 1 slot of its slowest class (hetero)"
await 300 "$elastic running on 1 of its 2 slots" is "$elastic" "[.state, .world, $hosts, .placement.reason]" \
    "[\"RUNNING\",1,1,\"$start\"]"
echo "ok: $elastic (elastic, min_workers 1) $start"

# 2. Two slots free; the policy keeps the elastic job where it is (pinned).
cancel_big
big=$elastic
from=$(($(wc -l <"$TMP/coord.log") + 1))
await 300 "$elastic's first checkpoint" checkpointed
two_checkpoints
at_one "with two slots free"

# 3. The coordinator killed and started again: the job is adopted as it was.
redis-cli -h "$PC" HGET "pacer:job:$elastic" world_cap | grep -qx 1 ||
    fail "pacer:job:$elastic world_cap: '$(redis-cli -h "$PC" HGET "pacer:job:$elastic" world_cap)', want 1"
# (by its command line: coord_start keeps no pid)
pkill -9 -f -- "pacer-coordinator --listen $PC:8080 " || fail "no coordinator to kill"
i=0
while pgrep -f -- "pacer-coordinator --listen $PC:8080 " >/dev/null; do
    i=$((i + 1)); [ $i -gt 100 ] && fail "the killed coordinator still runs"
    sleep 0.1
done
from=$(($(wc -l <"$TMP/coord.log") + 1))
coord_start
await 60 "$elastic adopted" sh -c 'tail -n +"$1" "$2" | grep -q "job $3: adopted"' sh "$from" "$TMP/coord.log" "$elastic"
echo "ok: coordinator killed and started again; $elastic adopted"
is "$elastic" '.placement.reason' "\"$start\"" || fail "$elastic's placement after the restart: $(jq -c .placement "$TMP/body")"
two_checkpoints
at_one "after the coordinator's restart"

cancel_big
echo "hetero_adopt: PASS"
