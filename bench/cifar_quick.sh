# cifar10_quick on CIFAR-10, 3 epochs (issue 2: test accuracy >= 0.60; a benchmark
# because it takes minutes on 2 cores). `threads: 2`.
. bench/lib.sh
dir="$PACER_SHARED/datasets/cifar-10"
[ -d "$dir" ] || { md ""; md "(CIFAR-10 not found at $dir: cifar10_quick skipped)"; exit 0; }
jq --arg p "$dir" '.dataset.path = $p | .threads = 2 | .log_every = 0' examples/cifar10-quick.json > "$TMP/spec.json"
$WORKER --spec "$TMP/spec.json" --summary "$TMP/s.json" >/dev/null 2>&1 || exit 1
md ""
md "### cifar10_quick / CIFAR-10 (\`sh bench/cifar_quick.sh\`, spec examples/cifar10-quick.json)"
md ""
md "$(jq -r '"\(.epochs) epochs: test accuracy \(.test_accuracy * 10000 | round / 10000) (target >= 0.60), train loss \(.train_loss * 1000 | round / 1000), \(.train_samples_per_s | round) samples/s, \(.wall_s | round) s"' "$TMP/s.json")"
