# Every algorithm family runs under the simulator unchanged: sgd, ssgd (with and without
# dynamic batching), hier-bsp on 2-GPU nodes, hpsgd, local-sgd, asgd, nsoftsync,
# dc-asgd, ddc-asgd and dbs-sgd, on a [1,1,2,4] platform, half of them with compute timed
# (SimGrid's default) and half charged by the cost model (deterministic). Each run is
# seconds: 1024 training samples, 2 epochs. Checks: exit 0, the summary is marked
# simulated, losses are finite, the model learned something, and what each family must
# show (staleness, batch plans, node groups, metrics records from simulated hosts), plus
# emulate.slowdown waiting in simulated time and one shared copy of the data set.
. tests/integration/sim_lib.inc
need_sim
need_fashion
HETERO='"slowdown": [1, 1, 2, 4]'

check() { # NAME MIN_ACCURACY
    o=$TMP/$1.out
    [ "$(json "$o" .simulated)" = true ] || fail "$1: summary not marked simulated"
    at_least "$1 simulated_wall_s" "$(json "$o" .simulated_wall_s)" 0.001
    at_least "$1 test_accuracy" "$(json "$o" .test_accuracy)" "$2"
    [ "$(json "$o" '.train_loss | isnan or isinfinite')" = false ] || fail "$1: train_loss not finite"
}
run() { # NAME DETERMINISTIC OVERRIDES
    sim_spec "$TMP/$1.json" "$3"
    jq --argjson d "$2" '.simulate.deterministic = $d' "$TMP/$1.json" >"$TMP/$1.tmp" && mv "$TMP/$1.tmp" "$TMP/$1.json"
    start=$(date +%s)
    sim_run "$1"
    echo "ran: $1 (deterministic $2) in $(( $(date +%s) - start )) s on this machine"
}

run sgd false '{"workers": 1, "algorithm": {"name": "sgd"}}'
check sgd 0.15
run ssgd false "{\"simulate\": {$HETERO}}"
check ssgd 0.15
[ "$(json "$TMP/ssgd.out" '[.per_rank[].steps] | unique | length')" = 1 ] || fail "ssgd: ranks took different step counts"

# Dynamic batching: the planner gives the 4x slower worker the smallest batch.
run ssgd-dyn true "{\"algorithm\": {\"dynamic_batch\": true, \"replan_steps\": 4}, \"simulate\": {$HETERO}}"
check ssgd-dyn 0.15
b=$(json "$TMP/ssgd-dyn.out" '[.per_rank[].batch_final] | map(tostring) | join(" ")')
echo "ssgd-dyn: final batches $b"
json "$TMP/ssgd-dyn.out" '[.per_rank[].batch_final] | (add == 128) and (.[0] > .[2]) and (.[2] > .[3])' | grep -q true ||
    fail "ssgd-dyn: batches $b should sum to 128 and fall with speed"

# hier-bsp on nodes of 2: the ranks of a node form a group (MPI_COMM_TYPE_SHARED finds
# them on their simulated host) and average every k_steps = 4 steps. Every step records
# its distance from the last average (0 .. k_steps - 1), so over whole rounds the mean is
# exactly (k_steps - 1) / 2 = 1.5.
run hier-bsp true '{"algorithm": {"name": "hier-bsp", "k_steps": 4}, "simulate": {"gpus_per_node": 2}}'
check hier-bsp 0.15
within "hier-bsp staleness mean ((k_steps - 1) / 2)" "$(json "$TMP/hier-bsp.out" .staleness.mean)" 1.5 0.01

run hpsgd false "{\"algorithm\": {\"name\": \"hpsgd\"}, \"simulate\": {$HETERO}}"
check hpsgd 0.15
run local-sgd true '{"algorithm": {"name": "local-sgd", "local_steps": 4}}'
check local-sgd 0.15

# The parameter-server family: world = workers + 1; rank 0 serves on its own host. A
# smaller rate: gradients up to ~10 updates stale with momentum 0.9 at the server.
ASYNC='"optimizer": {"lr": 0.01}'
run asgd false "{$ASYNC, \"algorithm\": {\"name\": \"asgd\"}, \"simulate\": {$HETERO}}"
check asgd 0.15
at_least "asgd staleness count" "$(json "$TMP/asgd.out" .staleness.count)" 60
# Throughput counts the samples the workers trained, not the server's applied pushes too.
within "asgd train_samples_per_s x train_s / workers' samples" \
    "$(json "$TMP/asgd.out" '.train_samples_per_s * .train_s / ([.per_rank[] | select(.role == "worker") | .samples] | add)')" 1 0.001
run nsoftsync true "{$ASYNC, \"algorithm\": {\"name\": \"nsoftsync\", \"n\": 2}}"
check nsoftsync 0.15
run dc-asgd true "{$ASYNC, \"algorithm\": {\"name\": \"dc-asgd\"}, \"simulate\": {$HETERO}}"
check dc-asgd 0.15
run ddc-asgd false "{$ASYNC, \"algorithm\": {\"name\": \"ddc-asgd\"}}"
check ddc-asgd 0.15
run dbs-sgd true "{$ASYNC, \"algorithm\": {\"name\": \"dbs-sgd\", \"replan_steps\": 2}, \"simulate\": {$HETERO}}"
check dbs-sgd 0.15
b=$(json "$TMP/dbs-sgd.out" '[.per_rank[1:][].batch_final] | map(tostring) | join(" ")')
echo "dbs-sgd: final batches $b"
json "$TMP/dbs-sgd.out" '[.per_rank[1:][].batch_final] | (add == 128) and (.[0] > .[3])' | grep -q true ||
    fail "dbs-sgd: batches $b should sum to 128 with the slowest worker's smallest"

# emulate.slowdown inside a simulation: the worker's wait (nanosleep, SimGrid's under
# smpicc) passes in simulated time, (f - 1) x its compute, as on a real machine.
run emulate true '{"workers": 2, "epochs": 1, "emulate": {"slowdown": [1, 3]}}'
within "emulated wait / own compute of the 3x rank" \
    "$(json "$TMP/emulate.out" '.per_rank[1] | .emulated_s / (.compute_s - .emulated_s)')" 2 0.001
[ "$(json "$TMP/emulate.out" .per_rank[0].emulated_s)" = 0 ] || fail "emulate: rank 0 waited"

# Metrics records: written by the reporter thread (real time, no MPI) with simulated
# hosts and simulated times.
sim_spec "$TMP/metrics.json" "{$ASYNC, \"algorithm\": {\"name\": \"asgd\"}, \"simulate\": {$HETERO}}"
sim_run metrics --metrics "$TMP/metrics.jsonl"
hosts=$(jq -r .host "$TMP/metrics.jsonl" | sort -u | tr '\n' ' ')
[ "$hosts" = "ps w0 w1 w2 w3 " ] || fail "metrics hosts are '$hosts', want the simulated hosts ps w0 w1 w2 w3"
last=$(jq -s 'map(.time) | max' "$TMP/metrics.jsonl")
awk -v t="$last" -v w="$(json "$TMP/metrics.out" .simulated_wall_s)" 'BEGIN { exit !(t > 0 && t <= w + 0.001) }  # records print 3 decimals' ||
    fail "metrics times end at $last, not within the simulated run"
echo "ok: $(wc -l <"$TMP/metrics.jsonl") metrics records from $hosts, times in simulated seconds (last $last)"

# One copy of the data set for all ranks: 12 more ranks cost far less than 12 copies of
# Fashion-MNIST (55 MB each). pacer-sim reports the simulation's peak memory.
sim_spec "$TMP/wide.json" '{"workers": 16, "epochs": 1}'
sim_run wide
peak() { sed -n 's/.*peak memory \([0-9]*\) MB.*/\1/p' "$TMP/$1.log"; }
m4=$(peak ssgd) m16=$(peak wide)
awk -v a="$m4" -v b="$m16" 'BEGIN { exit !(b - a < 12 * 20) }' ||
    fail "16 ranks peak at $m16 MB, 4 ranks at $m4 MB: the data set is not shared"
echo "ok: data set shared: peak memory $m4 MB with 4 ranks, $m16 MB with 16"
