# LeNet-5 on Fashion-MNIST, 5 epochs, batch 64: test accuracy >= 0.89 (issue 2).
. tests/lib.sh
need_dir "$FASHION" "Fashion-MNIST (Debian package dataset-fashion-mnist)"
$WORKER --spec examples/lenet5-fashion.json --summary "$TMP/s.json" || fail "training failed"
at_least "lenet5 fashion-mnist test_accuracy" "$(json "$TMP/s.json" .test_accuracy)" 0.89
