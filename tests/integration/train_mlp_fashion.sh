# MLP 784-256-128-10 on Fashion-MNIST: test accuracy >= 0.87 (issue 2).
. tests/lib.sh
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
$WORKER --spec examples/mlp-fashion.json --summary "$TMP/s.json" || fail "training failed"
at_least "mlp fashion-mnist test_accuracy" "$(json "$TMP/s.json" .test_accuracy)" 0.87
