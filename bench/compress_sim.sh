# bench/compress_sim.sh - does gradient compression pay on a given network (issue 47)?
# pacer-sim, ssgd, 16 workers with ResNet-20's cost model on CIFAR-10 (batch 32 each),
# links of 0.1, 1 and 10 Gbit/s from each worker to a non-blocking switch (5 us), 10
# Gflop/s per worker: simulated step time and bytes per step for compression none, bf16
# and powersgd rank 2. The simulated worker is the real one, so the compressor sizes the
# messages SMPI times; deterministic mode charges the training step's and compression's
# compute (compress_step_flops) from the cost model, and "skip_compute" charges without
# running it (the timeline does not depend on values: tests/integration/sim_skip_compute.sh).
# One run per point: deterministic, and with the compute skipped no seed changes the
# timeline. Step time: train_s over steps of one epoch of 5120 samples (10 steps).
# Usage: sh bench/compress_sim.sh [OUT.tsv]
. bench/lib.sh
CIFAR_DIR=$PACER_SHARED/datasets/cifar-10
[ -d "$CIFAR_DIR" ] || { echo "no CIFAR-10 at $CIFAR_DIR" >&2; exit 77; }
out=${1:-/dev/stdout}

printf 'gbps\tcompression\tbytes_per_step\tstep_s\tcompress_s_per_step\tcomm_s_per_step\n' >"$out"
for bw in 0.1 1 10; do
    for k in none bf16 powersgd; do
        jq -n --arg k "$k" --argjson bw "$bw" --arg ds "$CIFAR_DIR" '{
            name: "compress-sim", model: "resnet20", workers: 16, batch_size: 32, epochs: 1, seed: 1, log_every: 0,
            dataset: {name: "cifar10", path: $ds, train_subset: 5120, test_subset: 32},
            optimizer: {lr: 0.1, momentum: 0.9}, algorithm: {name: "ssgd", compression: {kind: $k, rank: 2}},
            simulate: {deterministic: true, skip_compute: true, bandwidth_gbps: $bw}}' >"$TMP/s.json"
        build/pacer-sim --spec "$TMP/s.json" --summary "$TMP/s.out" >"$TMP/s.log" 2>&1 || { tail "$TMP/s.log" >&2; exit 1; }
        jq -r --arg bw "$bw" --arg k "$k" '[$bw, $k, .comm_bytes_per_step, .train_s / .steps,
            .per_rank[0].phases.compress / .steps, .per_rank[0].phases.comm / .steps] | @tsv' "$TMP/s.out" >>"$out"
    done
done
