# simulate.skip_compute: a deterministic simulation that charges the cost model's compute
# without running it has the same simulated timeline as one that computes: same
# simulated wall time, steps, staleness, batch plans and per-rank compute and
# communication times, because in deterministic mode time depends on the cost model and
# message sizes, never on values. That is what lets the scaling benchmark charge
# ResNet-20's cost at 128 ranks without training it (bench/sim_scaling.sh). Checked for
# ssgd with dynamic batching, hier-bsp on 2-GPU nodes, asgd and dbs-sgd on a [1,1,2,4]
# platform. (hpsgd is left out: its forward and backward passes call MPI_Test between
# layers, which a skipped pass does not, so its rounds may end a step apart.) A skipped run
# measured no loss or accuracy: its summary says null for each, and not diverged.
. tests/integration/sim_lib.inc
need_sim
need_fashion
HETERO='"slowdown": [1, 1, 2, 4]'

# What must be equal: everything about time and order, nothing about what was learned.
timeline='{t: .simulated_wall_s, steps, staleness,
           ranks: [.per_rank[] | {rank, steps, samples, batch_final, compute_s, comm_s, idle_s, staleness}]}'
same() { # NAME OVERRIDES
    sim_spec "$TMP/$1.json" "$2"
    jq '.simulate.skip_compute = true' "$TMP/$1.json" >"$TMP/$1-skip.json"
    sim_run "$1"
    sim_run "$1-skip"
    jq -S "$timeline" "$TMP/$1.out" >"$TMP/$1.t"
    jq -S "$timeline" "$TMP/$1-skip.out" >"$TMP/$1-skip.t"
    cmp -s "$TMP/$1.t" "$TMP/$1-skip.t" || { diff "$TMP/$1.t" "$TMP/$1-skip.t" | head -20; fail "$1: skipping the compute changed the simulated timeline"; }
    [ "$(json "$TMP/$1-skip.out" .simulation.skip_compute)" = true ] || fail "$1: summary does not say the compute was skipped"
    # Nothing was computed, so nothing was measured: null, not 0 (issue 29), and no divergence.
    [ "$(jq -c '[.test_accuracy, .test_loss, .train_loss, .train_loss_running, .diverged]' "$TMP/$1-skip.out")" = \
        "[null,null,null,null,false]" ] ||
        fail "$1: a skipped run reports $(jq -c '{test_accuracy, test_loss, train_loss, train_loss_running, diverged}' "$TMP/$1-skip.out")"
    [ "$(json "$TMP/$1.out" '.test_accuracy > 0.15')" = true ] || fail "$1: the computing run learned nothing"
    echo "ok: $1: same timeline with the compute skipped ($(json "$TMP/$1.out" .steps) steps, $(json "$TMP/$1.out" .simulated_wall_s) simulated s)"
}

same ssgd-dyn "{\"algorithm\": {\"dynamic_batch\": true, \"replan_steps\": 4}, \"simulate\": {$HETERO}}"
same hier-bsp '{"algorithm": {"name": "hier-bsp", "k_steps": 4}, "simulate": {"gpus_per_node": 2}}'
same asgd "{\"optimizer\": {\"lr\": 0.01}, \"algorithm\": {\"name\": \"asgd\"}, \"simulate\": {$HETERO}}"
same dbs-sgd "{\"optimizer\": {\"lr\": 0.01}, \"algorithm\": {\"name\": \"dbs-sgd\", \"replan_steps\": 2}, \"simulate\": {$HETERO}}"

# Without the cost model there would be nothing to charge: refused, naming the field.
sim_spec "$TMP/bad.json" '{"simulate": {"deterministic": false, "skip_compute": true}}'
if "$SIM" --spec "$TMP/bad.json" --summary "$TMP/bad.out" >"$TMP/bad.log" 2>&1; then fail "skip_compute without deterministic was accepted"; fi
grep -q "simulate.skip_compute" "$TMP/bad.log" || { cat "$TMP/bad.log"; fail "the refusal does not name simulate.skip_compute"; }
echo "ok: skip_compute without deterministic refused: $(head -1 "$TMP/bad.log")"
