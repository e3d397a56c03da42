# Deterministic simulation: with "simulate": {"deterministic": true} compute is charged by
# the cost model (FLOPs per sample) instead of timing the real computation, so the same
# spec, seed and platform give a bit-identical summary, staleness histograms included,
# and the same metrics records. Checked for asgd and dbs-sgd (the parameter server's
# arrival order decides every staleness value and batch plan) and hpsgd (nonblocking
# allreduce overlapped with compute) on a [1,1,2,4] platform; a different seed must give
# a different summary, so the comparison can fail. Then simulate.jitter: reproducible too,
# and what it is for (equal workers out of lockstep).
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

# simulate.jitter draws each step's cost factor from the seed and the rank: still the same
# run twice.
same jitter "{\"algorithm\": {\"name\": \"asgd\"}, \"simulate\": {\"slowdown\": [1, 1, 2, 4], \"jitter\": 0.05}, \"optimizer\": {\"lr\": 0.01}}"
cmp -s "$TMP/asgd-1.out" "$TMP/jitter-1.out" && fail "jitter 0.05 gave the same summary as no jitter"
echo "ok: jitter changes the run ($(json "$TMP/jitter-1.out" .simulated_wall_s) against $(json "$TMP/asgd-1.out" .simulated_wall_s) simulated s)"

# Why it exists: without it equal workers stay in exact lockstep. Three equal asgd
# workers on 100 Mbit/s links push at the same instants and queue on the parameter
# server's link together for every step; with steps varying by 5% they drift apart and
# the pushes of one overlap the replies of another, as on a real network
# (bench/sim_validate.sh). The lockstep run must be the slower one.
LOCK='"workers": 3, "algorithm": {"name": "asgd"}, "epochs": 1, "dataset": {"train_subset": 2880}, "simulate": {"bandwidth_gbps": 0.1, "latency_us": 50'
sim_spec "$TMP/lock.json" "{$LOCK}}"
sim_run lock
sim_spec "$TMP/drift.json" "{$LOCK, \"jitter\": 0.05}}"
sim_run drift
awk -v a="$(json "$TMP/lock.out" .train_s)" -v b="$(json "$TMP/drift.out" .train_s)" 'BEGIN { exit !(b < 0.9 * a) }' ||
    fail "3 equal asgd workers: train_s $(json "$TMP/drift.out" .train_s) with jitter 0.05, $(json "$TMP/lock.out" .train_s) in lockstep: want 10% less"
echo "ok: 3 equal asgd workers on 100 Mbit/s: $(json "$TMP/lock.out" .train_s) simulated s in lockstep, $(json "$TMP/drift.out" .train_s) with jitter 0.05"

# pacer-sim --cfg reaches SimGrid, after pacer-sim's own settings: the lockstep job on
# links that deliver half their bandwidth (the network model's factor, as
# bench/sim_validate.sh calibrates it) takes longer.
cp "$TMP/lock.json" "$TMP/half.json"
sim_run half --cfg smpi/bw-factor:0:0.5
awk -v a="$(json "$TMP/lock.out" .train_s)" -v b="$(json "$TMP/half.out" .train_s)" 'BEGIN { exit !(b > 1.3 * a) }' ||
    fail "--cfg smpi/bw-factor:0:0.5: train_s $(json "$TMP/half.out" .train_s), $(json "$TMP/lock.out" .train_s) without: want 30% more"
echo "ok: --cfg smpi/bw-factor:0:0.5 takes $(json "$TMP/half.out" .train_s) simulated s against $(json "$TMP/lock.out" .train_s)"

sim_spec "$TMP/badj.json" '{"simulate": {"deterministic": false, "jitter": 0.05}}'
expect_error 2 "simulate.jitter: only with simulate.deterministic" "$SIM" --spec "$TMP/badj.json" --summary "$TMP/x"
echo "ok: jitter without the cost model is refused"

sim_spec "$TMP/seed.json" "{\"seed\": 4, \"algorithm\": {\"name\": \"asgd\"}, $HETERO}"
sim_run seed
cmp -s "$TMP/asgd-1.out" "$TMP/seed.out" && fail "seed 4 gave the same summary as seed 3"
echo "ok: another seed gives another summary"
