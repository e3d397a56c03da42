# The held-out modern CNN (tests/tools/heldout_cnn.py: ReLU6, hard-swish, squeeze-excitation,
# SiLU, a channel shuffle, batch norms at ONNX momentum 0.99) trained on CIFAR-10 with one
# SGD recipe (lr LR, momentum 0.9, weight decay WD on every parameter, constant rate,
# augmentation) for the same epochs by
#   torch        PyTorch, one process, batch 2 x BATCH
#   torch-ranks  PyTorch, one process, each batch split in two halves normalised by their
#                own statistics, the first half's running statistics kept: what 2 DDP
#                ranks without SyncBatchNorm compute (heldout_cnn.py's shares)
#   one          pacer, one process (sgd), batch 2 x BATCH
#   ranks        pacer, ssgd on 2 ranks of BATCH (each rank's batch norm on its own batch)
#   sync         the same with sync_batchnorm (the batch norms on the global batch)
# each from the same starting weights per seed (heldout_cnn.py --export SEED); torch's data
# order and augmentation draws are its own generator's, pacer's its seed's. Seeds run one
# after the other, the configurations alternating within a seed. Each run's summary and
# trained model are kept under KEEP (build/bench/heldout_accuracy); CONFIGS runs some of
# them only, CONFIGS="" none: the table reads what KEEP holds for SEEDS. Besides the test
# accuracy each run reports (its batch norms' running statistics, a running average at
# momentum 0.01 that trails the last ~100 steps' weights), the table gives each trained
# model's accuracy with its statistics recomputed for its final weights over STATS training
# images (heldout_cnn.py --recompute): the trained weights' own quality, without the trail.
#   SEEDS="1 2 3" SUBSET=10000 TEST_SUBSET=2000 EPOCHS=3 sh bench/heldout_accuracy.sh
. bench/lib.sh
SEEDS=${SEEDS:-1 2 3}
SUBSET=${SUBSET:-10000}
TEST_SUBSET=${TEST_SUBSET:-2000}
EPOCHS=${EPOCHS:-3}
BATCH=${BATCH:-32}
LR=${LR:-0.05}
WD=${WD:-0.0005}
STATS=${STATS:-5000}
KEEP=${KEEP:-$BUILD/bench/heldout_accuracy}
CONFIGS=${CONFIGS-torch torch-ranks one ranks sync}
TOOL="/usr/bin/python3 tests/tools/heldout_cnn.py"
cifar="$PACER_SHARED/datasets/cifar-10"
[ -d "$cifar" ] || { md ""; md "(CIFAR-10 not found at $cifar: heldout_accuracy skipped)"; exit 0; }
mkdir -p "$KEEP"
load0=$(cut -d' ' -f1-3 /proc/loadavg)
# spec SEED WORKERS BATCH SYNC - pacer's spec of a run (to $TMP/spec.json)
spec() {
    jq -n --arg m "$TMP/w.onnx" --arg p "$cifar" --argjson seed $1 --argjson w $2 --argjson b $3 --argjson sync $4 \
        --argjson n $SUBSET --argjson nt $TEST_SUBSET --argjson e $EPOCHS --argjson lr $LR --argjson wd $WD \
        --arg alg "$([ $2 = 1 ] && echo sgd || echo ssgd)" \
        '{name: "heldout-acc", model: {onnx: $m}, seed: $seed,
          dataset: {name: "cifar10", path: $p, train_subset: $n, test_subset: $nt, augment: true},
          epochs: $e, batch_size: $b, workers: $w, threads: 1, device: "cpu", log_every: 0, sync_batchnorm: $sync,
          algorithm: {name: $alg}, optimizer: {lr: $lr, momentum: 0.9, weight_decay: $wd}}' >"$TMP/spec.json"
}
for seed in $SEEDS; do
    $TOOL --export "$TMP/w.onnx" "$seed" >"$TMP/export.log" 2>&1 ||
        { cat "$TMP/export.log"; echo "heldout_accuracy: export failed"; exit 1; }
    for cfg in $CONFIGS; do
        echo "seed $seed $cfg from $(date -u +%H:%M:%S), load $(cut -d' ' -f1 /proc/loadavg)"
        case $cfg in
        torch | torch-ranks)
            shares=$((2 * BATCH))
            [ $cfg = torch-ranks ] && shares="$BATCH,$BATCH"
            $TOOL --train "$TMP/w.onnx" "$seed" $SUBSET $TEST_SUBSET $EPOCHS $((2 * BATCH)) $LR 0.9 $WD 1 $shares \
                "$KEEP/$cfg.$seed.pt" >"$KEEP/$cfg.$seed.json" 2>"$KEEP/$cfg.$seed.log" ||
                { tail -3 "$KEEP/$cfg.$seed.log"; echo "heldout_accuracy: torch failed"; exit 1; } ;;
        one)
            spec $seed 1 $((2 * BATCH)) false
            $WORKER --spec "$TMP/spec.json" --summary "$KEEP/$cfg.$seed.json" --export-onnx "$KEEP/$cfg.$seed.onnx" \
                >"$KEEP/$cfg.$seed.log" 2>&1 ||
                { tail -3 "$KEEP/$cfg.$seed.log"; echo "heldout_accuracy: pacer $cfg failed"; exit 1; } ;;
        ranks | sync)
            spec $seed 2 $BATCH "$([ $cfg = sync ] && echo true || echo false)"
            $MPIRUN -np 2 $WORKER --spec "$TMP/spec.json" --summary "$KEEP/$cfg.$seed.json" \
                --export-onnx "$KEEP/$cfg.$seed.onnx" >"$KEEP/$cfg.$seed.log" 2>&1 ||
                { tail -3 "$KEEP/$cfg.$seed.log"; echo "heldout_accuracy: pacer $cfg failed"; exit 1; } ;;
        *) echo "heldout_accuracy: unknown configuration $cfg"; exit 1 ;;
        esac
        cut -d' ' -f1-3 /proc/loadavg >"$KEEP/$cfg.$seed.load"
        model="$KEEP/$cfg.$seed.onnx"
        [ -f "$model" ] || model="$KEEP/$cfg.$seed.pt"
        $TOOL --recompute "$model" $STATS $TEST_SUBSET >"$KEEP/$cfg.$seed.recomputed.json" ||
            { echo "heldout_accuracy: --recompute $model failed"; exit 1; }
    done
done
# acc CFG - the seeds' test accuracies of a configuration, one a line (the runs KEEP holds)
acc() { for s in $SEEDS; do [ -f "$KEEP/$1.$s.json" ] && jq -r .test_accuracy "$KEEP/$1.$s.json"; done; }
# racc CFG - the same with the statistics recomputed for the final weights
racc() {
    for s in $SEEDS; do
        [ -f "$KEEP/$1.$s.recomputed.json" ] && jq -r .recomputed_test_accuracy "$KEEP/$1.$s.recomputed.json"
    done
}
secs() { for s in $SEEDS; do [ -f "$KEEP/$1.$s.json" ] && jq -r ".train_s" "$KEEP/$1.$s.json"; done; }
# diff_points A B [FN] - A's mean accuracy minus B's (FN: acc or racc), in points
diff_points() {
    f=${3:-acc}
    [ -n "$($f "$1")" ] && [ -n "$($f "$2")" ] || { echo "not measured"; return; }
    awk -v a="$($f "$1" | awk '{ s += $1 } END { print s / NR }')" -v b="$($f "$2" | awk '{ s += $1 } END { print s / NR }')" \
        'BEGIN { printf "%+.2f points", 100 * (a - b) }'
}
md ""
md "### The held-out modern CNN on CIFAR-10, PyTorch against pacer (\`SEEDS=\"$SEEDS\" SUBSET=$SUBSET TEST_SUBSET=$TEST_SUBSET EPOCHS=$EPOCHS sh bench/heldout_accuracy.sh\`)"
md ""
md "HeldOutCNN (tests/tools/heldout_cnn.py, 24,030 parameters), the first $SUBSET training images, the first $TEST_SUBSET test images," \
    "$EPOCHS epochs, global batch $((2 * BATCH)), SGD lr $LR, momentum 0.9, weight decay $WD on every parameter, constant rate," \
    "augmentation (crop of the image padded by 4, mirror); batch norms at torch's momentum 0.01 (ONNX 0.99), eps 1e-3." \
    "$(nproc) cores shared with other work; load average before: $load0."
md ""
md "| configuration | test accuracy per seed ($SEEDS) | mean ± sd | statistics recomputed over $STATS images: per seed | mean ± sd | training s per run |"
md "|---|---|---|---|---|---|"
for cfg in torch torch-ranks one ranks sync; do
    md "| $cfg | $(acc $cfg | xargs printf '%.4f ')| $(acc $cfg | meansd 4) | $(racc $cfg | xargs printf '%.4f ')| $(racc $cfg | meansd 4) | $(secs $cfg | meansd 0) |"
done
md ""
md "Means against torch (one process), as reported: torch-ranks $(diff_points torch-ranks torch), pacer one $(diff_points one torch)," \
    "ranks $(diff_points ranks torch), sync $(diff_points sync torch); sync against ranks $(diff_points sync ranks)." \
    "With the statistics recomputed: torch-ranks $(diff_points torch-ranks torch racc), one $(diff_points one torch racc)," \
    "ranks $(diff_points ranks torch racc), sync $(diff_points sync torch racc); sync against ranks $(diff_points sync ranks racc)."
