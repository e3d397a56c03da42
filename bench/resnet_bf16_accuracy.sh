# ResNet-20 on CIFAR-10 at "precision": "bf16" against fp32: the accuracy evidence for
# mixed precision on an image classifier (goal: within 0.5 point of fp32, means over the
# seeds). examples/resnet20-cifar10.json's recipe (batch 128, SGD with momentum 0.9, lr 0.1,
# weight decay 5e-4, augmentation, one epoch of warm-up then cosine to 0) cut to EPOCHS
# epochs, one rank, one thread; per seed the two precisions start from the same weights and
# draw the same batches (the seed fixes both), so the per-seed differences are paired.
# Runs go seed by seed, fp32 then bf16, one at a time (PARALLEL=1: all at once); each run's summary is kept in KEEP,
# and a run whose summary is there already is not run again (CONFIGS="" reads KEEP only).
#   SEEDS="1 2 3" EPOCHS=3 PARALLEL=1 sh bench/resnet_bf16_accuracy.sh
. bench/lib.sh
SEEDS=${SEEDS:-1 2 3}
EPOCHS=${EPOCHS:-3}
KEEP=${KEEP:-$BUILD/bench/resnet_bf16_accuracy}
CONFIGS=${CONFIGS-fp32 bf16}
dir="$PACER_SHARED/datasets/cifar-10"
[ -d "$dir" ] || { md ""; md "(CIFAR-10 not found at $dir: resnet_bf16_accuracy skipped)"; exit 0; }
mkdir -p "$KEEP"
load0=$(cut -d' ' -f1-3 /proc/loadavg)
# one_run PRECISION SEED - one run into KEEP
one_run() {
    sum=$KEEP/$1.$2.json
    [ -s "$sum" ] && return 0
    jq --arg d "$dir" --arg p "$1" --argjson s "$2" --argjson e "$EPOCHS" \
        '.dataset.path = $d | .precision = $p | .seed = $s | .epochs = $e | .threads = 1
         | .log_every = 0 | del(.checkpoint)' examples/resnet20-cifar10.json >"$TMP/spec.$1.$2.json"
    $WORKER --spec "$TMP/spec.$1.$2.json" --summary "$TMP/s.$1.$2.json" >"$KEEP/$1.$2.log" 2>&1 ||
        { tail -5 "$KEEP/$1.$2.log"; echo "resnet_bf16_accuracy: $1 seed $2 failed"; return 1; }
    mv "$TMP/s.$1.$2.json" "$sum"
    echo "$1 seed $2: test accuracy $(jq .test_accuracy "$sum"), $(jq '.wall_s | round' "$sum") s"
}
# PARALLEL=1: every run at once (one thread each; accuracy does not depend on the timing)
for s in $SEEDS; do
    for p in $CONFIGS; do
        if [ "${PARALLEL:-0}" = 1 ]; then one_run "$p" "$s" & else one_run "$p" "$s" || exit 1; fi
    done
done
wait
acc() { for s in $SEEDS; do [ -s "$KEEP/$1.$s.json" ] && jq '.test_accuracy * 100' "$KEEP/$1.$s.json"; done; }
diffs() {
    for s in $SEEDS; do
        [ -s "$KEEP/fp32.$s.json" ] && [ -s "$KEEP/bf16.$s.json" ] &&
            jq -n --slurpfile a "$KEEP/bf16.$s.json" --slurpfile b "$KEEP/fp32.$s.json" \
                '($a[0].test_accuracy - $b[0].test_accuracy) * 100'
    done
}
kern=$(for s in $SEEDS; do [ -s "$KEEP/bf16.$s.json" ] && jq -r '"gemm \(.kernels.gemm // "-"), conv \(.kernels.conv // "-")"' "$KEEP/bf16.$s.json"; done | sort -u | tr '\n' ' ')
md ""
md "### ResNet-20 / CIFAR-10 at bf16 against fp32 (\`SEEDS=\"$SEEDS\" EPOCHS=$EPOCHS sh bench/resnet_bf16_accuracy.sh\`)"
md ""
md "$EPOCHS epochs of examples/resnet20-cifar10.json's recipe, one rank, one thread; test accuracy on the 10,000 test images, in points; load at the start $load0"
md ""
md "| precision | test accuracy | by seed |"
md "|---|---|---|"
md "| fp32 | $(acc fp32 | meansd 2) | $(acc fp32 | awk '{ printf "%s%.2f", (NR > 1 ? ", " : ""), $1 }') |"
md "| bf16 (kernels: ${kern% }) | $(acc bf16 | meansd 2) | $(acc bf16 | awk '{ printf "%s%.2f", (NR > 1 ? ", " : ""), $1 }') |"
md "| bf16 - fp32 (paired) | $(diffs | meansd 2) | $(diffs | awk '{ printf "%s%+.2f", (NR > 1 ? ", " : ""), $1 }') |"
