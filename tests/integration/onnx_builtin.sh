# A built-in network as ONNX (issue 25): pacer-worker --export-onnx writes lenet5, the MLP,
# cifar10_quick and resnet20 as graphs of their layers (opset 13, inference form) under
# PyTorch's state_dict names; onnx.checker (full_check) accepts each. The lenet5 the
# worker starts from (--export-onnx-init), imported again as "model": {"onnx": PATH},
# trains bit for bit like the built-in: the same loss lines and final figures, and the
# trained models it exports are the same bytes; so does resnet20 (batch norm, option-A
# shortcuts) on generated CIFAR-10 images. onnxruntime-node (tests/onnxrt, make deps)
# gives pacer's logits of the trained lenet5 and MLP on 256 MNIST test images, and of
# cifar10_quick and resnet20 on 64 random images.
. tests/lib.sh
need_dir "$PACER_SHARED/datasets/mnist" "MNIST"
$TORCH_PY -c "import onnx, numpy" 2>/dev/null || skip "onnx/numpy not importable by /usr/bin/python3"

# spec MODEL DATASET PATH > FILE
spec() {
    jq -n --arg m "$1" --arg d "$2" --arg p "$3" \
        '{model: $m, dataset: {name: $d, path: $p, train_subset: 256, test_subset: 256},
          algorithm: {name: "ssgd"}, workers: 1, batch_size: 32, epochs: 2, seed: 5, device: "cpu",
          optimizer: {lr: 0.05, momentum: 0.9}, log_every: 1}'
}
steps() { sed -n 's/^\(epoch [0-9/]* step [0-9/]* loss [^ ]*\) .*/\1/p; s/^\(epoch [0-9/]* done: .*\)/\1/p' "$1"; }
final() { sed -n 's/^\(final test_accuracy [^ ]* test_loss [^ ]* train_loss [^ ]*\) .*/\1/p' "$1"; }

# the round trip: built-in lenet5, then the file of its initial weights
spec lenet5 mnist "$PACER_SHARED/datasets/mnist" >"$TMP/builtin.json"
$WORKER --spec "$TMP/builtin.json" --export-onnx-init "$TMP/init.onnx" --export-onnx "$TMP/builtin.onnx" \
    >"$TMP/builtin.log" 2>&1 || { tail -20 "$TMP/builtin.log"; fail "built-in lenet5 failed"; }
grep -q "exported the initial model to $TMP/init.onnx" "$TMP/builtin.log" || fail "no --export-onnx-init line"
jq --arg o "$TMP/init.onnx" '.model = {onnx: $o}' "$TMP/builtin.json" >"$TMP/imported.json"
$WORKER --spec "$TMP/imported.json" --export-onnx "$TMP/imported.onnx" >"$TMP/imported.log" 2>&1 ||
    { tail -20 "$TMP/imported.log"; fail "lenet5 imported from its own export failed"; }
[ "$(steps "$TMP/builtin.log" | wc -l)" -eq 18 ] || { cat "$TMP/builtin.log"; fail "expected 16 step and 2 epoch lines"; }
steps "$TMP/builtin.log" >"$TMP/a" && steps "$TMP/imported.log" >"$TMP/b"
diff "$TMP/a" "$TMP/b" || fail "the imported lenet5 trains differently from the built-in"
[ -n "$(final "$TMP/builtin.log")" ] && [ "$(final "$TMP/builtin.log")" = "$(final "$TMP/imported.log")" ] ||
    fail "final figures differ: '$(final "$TMP/builtin.log")' vs '$(final "$TMP/imported.log")'"
cmp "$TMP/builtin.onnx" "$TMP/imported.onnx" || fail "the trained weights of the two runs differ"
cmp -s "$TMP/init.onnx" "$TMP/builtin.onnx" && fail "--export-onnx wrote the initial weights, not the trained ones"
echo "round trip: 16 steps and the trained model bit for bit the same"

# every built-in network: the checker, the names, one graph input and output
$BUILD/tools/gen_dataset cifar "$TMP/cifar" 64 64 7 >/dev/null || fail "cannot generate CIFAR-10 files"
spec mlp mnist "$PACER_SHARED/datasets/mnist" | jq '.epochs = 1' >"$TMP/mlp.json"
for m in cifar10_quick resnet20; do
    spec $m cifar10 "$TMP/cifar" | jq '.epochs = 1 | .dataset.train_subset = 64 | .dataset.test_subset = 64' >"$TMP/$m.json"
done
for m in mlp cifar10_quick; do
    $WORKER --spec "$TMP/$m.json" --export-onnx "$TMP/$m.onnx" >"$TMP/$m.log" 2>&1 ||
        { tail -20 "$TMP/$m.log"; fail "$m with --export-onnx failed"; }
done
# resnet20's round trip too: its option-A shortcut is exported as a 1x1 MaxPool and a Pad of
# the channels, which the importer reads back as the same residual add
$WORKER --spec "$TMP/resnet20.json" --export-onnx-init "$TMP/r20init.onnx" --export-onnx "$TMP/resnet20.onnx" \
    >"$TMP/resnet20.log" 2>&1 || { tail -20 "$TMP/resnet20.log"; fail "resnet20 with --export-onnx failed"; }
jq --arg o "$TMP/r20init.onnx" '.model = {onnx: $o}' "$TMP/resnet20.json" >"$TMP/r20imported.json"
$WORKER --spec "$TMP/r20imported.json" --export-onnx "$TMP/r20imported.onnx" >"$TMP/r20imported.log" 2>&1 ||
    { tail -20 "$TMP/r20imported.log"; fail "resnet20 imported from its own export failed"; }
steps "$TMP/resnet20.log" >"$TMP/a" && steps "$TMP/r20imported.log" >"$TMP/b"
[ "$(wc -l <"$TMP/a")" -eq 3 ] || { cat "$TMP/resnet20.log"; fail "expected 2 step lines and 1 epoch line"; }
diff "$TMP/a" "$TMP/b" || fail "the imported resnet20 trains differently from the built-in"
cmp "$TMP/resnet20.onnx" "$TMP/r20imported.onnx" || fail "the trained resnet20 weights of the two runs differ"
echo "round trip: resnet20 bit for bit the same"
$TORCH_PY - "$TMP" <<'PY' || fail "the exported built-in models do not check"
import sys, onnx
from onnx import numpy_helper
want = {
    "builtin": ["conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias", "fc1.weight", "fc1.bias",
                "fc2.weight", "fc2.bias", "fc3.weight", "fc3.bias"],
    "mlp": ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias", "fc3.weight", "fc3.bias"],
    "cifar10_quick": ["conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias", "conv3.weight", "conv3.bias",
                      "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"],
}
for m in ["builtin", "mlp", "cifar10_quick", "resnet20"]:
    p = onnx.load("%s/%s.onnx" % (sys.argv[1], m))
    onnx.checker.check_model(p, full_check=True)
    names = [t.name for t in p.graph.initializer]
    ops = sorted({n.op_type for n in p.graph.node})
    assert p.opset_import[0].version == 13, m
    assert [i.name for i in p.graph.input] == ["input"] and [o.name for o in p.graph.output] == ["logits"], m
    assert m not in want or names == want[m], (m, names)
    if m == "resnet20":
        assert len(names) == 1 + 4 + 18 * 5 + 2 and "layer3.2.bn2.running_var" in names, names
        assert {"BatchNormalization", "Add", "Pad", "GlobalAveragePool"} <= set(ops), ops
        for n in p.graph.node:
            if n.op_type == "BatchNormalization":
                assert len(n.output) == 1, n.name
    print("%s: checker (full_check) ok, %d initializers, ops %s" % (m, len(names), " ".join(ops)))
PY

# an independent runtime's logits: the trained lenet5 and MLP on 256 MNIST test images
if command -v node >/dev/null 2>&1 && [ -d tests/onnxrt/node_modules/onnxruntime-node ]; then
    /usr/bin/python3 - "$PACER_SHARED/datasets/mnist" "$TMP" <<'PY' || fail "cannot write the test images"
import gzip, os, sys
import numpy as np
d, out = sys.argv[1], sys.argv[2]
def idx(name):
    p = os.path.join(d, name)
    raw = gzip.open(p + ".gz").read() if os.path.exists(p + ".gz") else open(p, "rb").read()
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(raw[3])]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * raw[3]).reshape(dims)
x = idx("t10k-images-idx3-ubyte")[:256].astype(np.float32)
((x / 255.0 - 0.1307) / 0.3081).astype("<f4").tofile(os.path.join(out, "x.bin"))
idx("t10k-labels-idx1-ubyte")[:256].astype(np.uint8).tofile(os.path.join(out, "labels.bin"))
PY
    for m in builtin mlp; do
        $BUILD/tools/onnx_logits "$TMP/$m.onnx" "$TMP/x.bin" 256 "$TMP/$m.logits" || fail "onnx_logits $m failed"
        node tests/onnxrt/logits.mjs "$TMP/$m.onnx" "$TMP/x.bin" 256 1x28x28 "$TMP/$m.logits" "$TMP/labels.bin" \
            >"$TMP/$m.ort" || fail "onnxruntime-node could not run the exported $m"
        echo "onnxruntime-node, $m: $(cat "$TMP/$m.ort")"
        at_most "$m: largest logit difference, relative" "$(json "$TMP/$m.ort" .max_rel_diff)" 1e-4
        equals_num "$m: predictions that differ" "$(json "$TMP/$m.ort" .predictions_differ)" 0
    done
    /usr/bin/python3 -c "import numpy as np; r = np.random.RandomState(1)
r.randn(64, 3, 32, 32).astype('<f4').tofile('$TMP/xc.bin'); np.zeros(64, np.uint8).tofile('$TMP/lc.bin')" ||
        fail "cannot write random images"
    for m in cifar10_quick resnet20; do
        $BUILD/tools/onnx_logits "$TMP/$m.onnx" "$TMP/xc.bin" 64 "$TMP/$m.logits" || fail "onnx_logits $m failed"
        node tests/onnxrt/logits.mjs "$TMP/$m.onnx" "$TMP/xc.bin" 64 3x32x32 "$TMP/$m.logits" "$TMP/lc.bin" \
            >"$TMP/$m.ort" || fail "onnxruntime-node could not run the exported $m"
        echo "onnxruntime-node, $m: $(cat "$TMP/$m.ort")"
        at_most "$m: largest logit difference, relative" "$(json "$TMP/$m.ort" .max_rel_diff)" 1e-4
        equals_num "$m: predictions that differ" "$(json "$TMP/$m.ort" .predictions_differ)" 0
    done
else
    echo "note: onnxruntime-node not installed (make deps installs it into tests/onnxrt): runtime check not run"
fi
echo "ok"
