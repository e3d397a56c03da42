# ResNet-20 on CIFAR-10 at "precision": "bf16" against fp32: the accuracy evidence for
# mixed precision on an image classifier (goal: within 0.5 point of fp32, means over the
# seeds). examples/resnet20-cifar10.json's recipe (batch 128, SGD with momentum 0.9, lr 0.1,
# weight decay 5e-4, augmentation, one epoch of warm-up then cosine to 0) cut to EPOCHS
# epochs, one rank, one thread; per seed the two precisions start from the same weights and
# draw the same batches (the seed fixes both), so the per-seed differences are paired.
# Runs go seed by seed, fp32 then bf16, one at a time; each run's summary is kept in KEEP,
# and a run whose summary is there already is not run again (CONFIGS="" reads KEEP only).
#   SEEDS="1 2 3" EPOCHS=4 sh bench/resnet_bf16_accuracy.sh
. bench/lib.sh
SEEDS=${SEEDS:-1 2 3}
EPOCHS=${EPOCHS:-4}
KEEP=${KEEP:-$BUILD/bench/resnet_bf16_accuracy}
CONFIGS=${CONFIGS-fp32 bf16}
dir="$PACER_SHARED/datasets/cifar-10"
[ -d "$dir" ] || { md ""; md "(CIFAR-10 not found at $dir: resnet_bf16_accuracy skipped)"; exit 0; }
mkdir -p "$KEEP"
load0=$(cut -d' ' -f1-3 /proc/loadavg)
for s in $SEEDS; do
    for p in $CONFIGS; do
        sum=$KEEP/$p.$s.json
        [ -s "$sum" ] && continue
        jq --arg d "$dir" --arg p "$p" --argjson s "$s" --argjson e "$EPOCHS" \
            '.dataset.path = $d | .precision = $p | .seed = $s | .epochs = $e | .threads = 1
             | .log_every = 0 | del(.checkpoint)' examples/resnet20-cifar10.json >"$TMP/spec.json"
        $WORKER --spec "$TMP/spec.json" --summary "$TMP/s.json" >"$KEEP/$p.$s.log" 2>&1 ||
            { tail -5 "$KEEP/$p.$s.log"; echo "resnet_bf16_accuracy: $p seed $s failed"; exit 1; }
        mv "$TMP/s.json" "$sum"
        echo "$p seed $s: test accuracy $(jq .test_accuracy "$sum"), $(jq '.wall_s | round' "$sum") s"
    done
done
acc() { for s in $SEEDS; do [ -s "$KEEP/$1.$s.json" ] && jq '.test_accuracy * 100' "$KEEP/$1.$s.json"; done; }
diffs() {
    for s in $SEEDS; do
        [ -s "$KEEP/fp32.$s.json" ] && [ -s "$KEEP/bf16.$s.json" ] &&
            jq -n --slurpfile a "$KEEP/bf16.$s.json" --slurpfile b "$KEEP/fp32.$s.json" \
                '($a[0].test_accuracy - $b[0].test_accuracy) * 100'
    done
}
kern=$(for s in $SEEDS; do [ -s "$KEEP/bf16.$s.json" ] && jq -r '.kernels.gemm // "-"' "$KEEP/bf16.$s.json"; done | sort -u | tr '\n' ' ')
md ""
md "### ResNet-20 / CIFAR-10 at bf16 against fp32 (\`SEEDS=\"$SEEDS\" EPOCHS=$EPOCHS sh bench/resnet_bf16_accuracy.sh\`)"
md ""
md "$EPOCHS epochs of examples/resnet20-cifar10.json's recipe, one rank, one thread; test accuracy on the 10,000 test images, in points; load at the start $load0"
md ""
md "| precision | test accuracy | by seed |"
md "|---|---|---|"
md "| fp32 | $(acc fp32 | meansd 2) | $(acc fp32 | awk '{ printf "%s%.2f", (NR > 1 ? ", " : ""), $1 }') |"
md "| bf16 (kernels.gemm: ${kern% }) | $(acc bf16 | meansd 2) | $(acc bf16 | awk '{ printf "%s%.2f", (NR > 1 ? ", " : ""), $1 }') |"
md "| bf16 - fp32 (paired) | $(diffs | meansd 2) | $(diffs | awk '{ printf "%s%+.2f", (NR > 1 ? ", " : ""), $1 }') |"
