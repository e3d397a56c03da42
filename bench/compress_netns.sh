# bench/compress_netns.sh - gradient compression on shaped links, for real (issue 47):
# ssgd, 4 ranks of ResNet-20 on CIFAR-10 (batch 32 each), one rank per namespace host of
# deploy/netns (its own names pcb- and network 10.82.0, apart from the tests' and other
# benchmarks'), every worker host's link limited both ways by deploy/netns/shape.sh (tbf,
# or netem rate with no delay where the kernel has netem) to each of RATES (Mbit/s);
# compression none, bf16 and powersgd rank 2; SEEDS seeds each. Per run: bytes per step
# (the summary's comm_bytes_per_step) and the training step (train_s / steps: the
# training wall time, evaluations left out, over STEPS steps of one short epoch).
# Printed: one TSV line per run. Open MPI sends messages up to 1 MiB eagerly, as the
# coordinator's launch does.
#
#   sudo sh bench/compress_netns.sh        (root: network namespaces)
. bench/lib.sh
ROOT=$(pwd)
case $BUILD in /*) B=$BUILD ;; *) B=$ROOT/$BUILD ;; esac
NETNS=$ROOT/deploy/netns
RATES=${RATES:-100 1000}
SEEDS=${SEEDS:-1 2 3}
KINDS=${KINDS:-none bf16 powersgd}
STEPS=${STEPS:-8}
CIFAR_DIR=$PACER_SHARED/datasets/cifar-10
[ "$(id -u)" -eq 0 ] || { echo "compress_netns: needs root (network namespaces)"; exit 1; }
[ -d "$CIFAR_DIR" ] || { echo "compress_netns: no CIFAR-10 at $CIFAR_DIR"; exit 1; }
compress_cluster_up
printf 'mbit\tcompression\tseed\tbytes_per_step\tstep_s\tcompress_s_per_step\tcomm_s_per_step\ttest_accuracy\n'
for rate in $RATES; do
    compress_shape "$rate"
    for k in $KINDS; do
        for s in $SEEDS; do
            jq -n --arg k "$k" --argjson s "$s" --arg ds "$CIFAR_DIR" --argjson n $((4 * 32 * STEPS)) '{
                name: "compress-netns", model: "resnet20", workers: 4, batch_size: 32, epochs: 1, seed: $s,
                log_every: 0, dataset: {name: "cifar10", path: $ds, train_subset: $n, test_subset: 256},
                optimizer: {lr: 0.1, momentum: 0.9}, algorithm: {name: "ssgd", compression: {kind: $k, rank: 2}}}' \
                >"$TMP/s.json"
            compress_mpirun "$TMP/s.json" "$TMP/s.log" --summary "$TMP/s.out" ||
                { echo "compress_netns: $k at $rate Mbit/s failed" >&2; exit 1; }
            jq -r --arg r "$rate" --arg k "$k" --arg s "$s" '[$r, $k, $s, .comm_bytes_per_step, .train_s / .steps,
                .per_rank[0].phases.compress / .steps, .per_rank[0].phases.comm / .steps, .test_accuracy] | @tsv' "$TMP/s.out"
        done
    done
done
