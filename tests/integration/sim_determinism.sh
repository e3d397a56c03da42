# Deterministic simulation: with "simulate": {"deterministic": true} compute is charged by
# the cost model (FLOPs per sample) instead of timing the real computation, so the same
# spec, seed and platform give a bit-identical summary, staleness histograms included,
# and the same metrics records. Checked for asgd and dbs-sgd (the parameter server's
# arrival order decides every staleness value and batch plan) and hpsgd (nonblocking
# allreduce overlapped with compute) on a [1,1,2,4] platform; a different seed must give
# a different summary, so the comparison can fail.
. tests/integration/sim_lib.inc
need_sim
need_fashion

same() { # NAME OVERRIDES
    sim_spec "$TMP/$1.json" "$2"
    for i in 1 2; do
        cp "$TMP/$1.json" "$TMP/$1-$i.json"
        sim_run "$1-$i" --metrics "$TMP/$1-$i.jsonl"
    done
    cmp "$TMP/$1-1.out" "$TMP/$1-2.out" || { diff "$TMP/$1-1.out" "$TMP/$1-2.out" | head -20; fail "$1: two runs gave different summaries"; }
    # Ranks' reporter threads interleave their lines in real time; the records are the same.
    sort "$TMP/$1-1.jsonl" >"$TMP/$1-1.sorted"
    sort "$TMP/$1-2.jsonl" >"$TMP/$1-2.sorted"
    cmp "$TMP/$1-1.sorted" "$TMP/$1-2.sorted" || fail "$1: two runs gave different metrics records"
    echo "ok: $1: identical summaries ($(json "$TMP/$1-1.out" .steps) steps, staleness histogram $(jq -c .staleness.hist "$TMP/$1-1.out")," \
        "simulated $(json "$TMP/$1-1.out" .simulated_wall_s) s) and $(wc -l <"$TMP/$1-1.jsonl") identical metrics records"
}
HETERO='"simulate": {"slowdown": [1, 1, 2, 4]}, "optimizer": {"lr": 0.01}'
same asgd "{\"algorithm\": {\"name\": \"asgd\"}, $HETERO}"
same dbs-sgd "{\"algorithm\": {\"name\": \"dbs-sgd\", \"replan_steps\": 2}, $HETERO}"
same hpsgd "{\"algorithm\": {\"name\": \"hpsgd\"}, $HETERO}"

sim_spec "$TMP/seed.json" "{\"seed\": 4, \"algorithm\": {\"name\": \"asgd\"}, $HETERO}"
sim_run seed
cmp -s "$TMP/asgd-1.out" "$TMP/seed.out" && fail "seed 4 gave the same summary as seed 3"
echo "ok: another seed gives another summary"
