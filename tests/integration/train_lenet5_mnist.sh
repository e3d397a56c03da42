# LeNet-5 on MNIST (../shared copy), 3 epochs: test accuracy >= 0.985 (issue 2).
. tests/lib.sh
need_dir "$PACER_SHARED/datasets/mnist" "MNIST"
jq --arg p "$PACER_SHARED/datasets/mnist" '.dataset.path = $p' examples/lenet5-mnist.json > "$TMP/spec.json"
$WORKER --spec "$TMP/spec.json" --summary "$TMP/s.json" || fail "training failed"
at_least "lenet5 mnist test_accuracy" "$(json "$TMP/s.json" .test_accuracy)" 0.985
