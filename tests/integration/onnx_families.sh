# The post-2017 convolutional families (issue 43), as miniatures of their blocks in plain
# torch (tests/tools/onnx_families.py --export blocks; no torchvision needed): ReLU6 (Clip),
# hard-swish (HardSigmoid + Mul) and a hard-sigmoid squeeze-excitation with batch norm
# momentum 0.01, batch norm momentum 0.0003, a sigmoid squeeze-excitation, SiLU (x *
# Sigmoid(x): one tensor read by two nodes). Each is exported as the Python client exports
# a module for training (3x32x32 inputs), `pacer-worker --check-onnx` accepts it, and on a
# fixed batch of 8 (tests/tools/onnx_grads) pacer's evaluation and training logits, every
# parameter gradient, every running statistic after the step (the file's momentum) and the
# losses of 4 plain SGD steps match torch's from the same weights within
# onnx_families.py's named tolerances; the losses are finite and fall.
# The importer's refusals of what the new operators cannot take (graphs written at test time
# by onnx_families.py --graphs), each message checked, and the graph of every new operator
# (the fuzzer's seed) accepted. Stochastic depth (the Python client's
# ai.pacer:StochasticDepth): the per-sample mask of pacer's training forward on a small
# block, the identity at evaluation, mode "batch" refused with its message.
# onnx_torchvision.sh runs the same checks on torchvision's own models.
. tests/lib.sh
SET=${FAMILIES_SET:-blocks}
if [ "$SET" = blocks ]; then
    mkdir -p "$TMP/graphs"
    $TORCH_PY tests/tools/onnx_families.py --graphs "$TMP/graphs" >"$TMP/graphs.log" 2>&1
    rc=$?
    [ $rc -eq 77 ] && skip "$(grep '^onnx_families:' "$TMP/graphs.log" | tail -1)"
    [ $rc -eq 0 ] || { cat "$TMP/graphs.log"; fail "tests/tools/onnx_families.py --graphs exited $rc"; }
    expect_accepts "$TMP/graphs/ops.onnx" "$TMP/ops.check"
    g() { echo "$TMP/graphs/$1.onnx"; }
    expect_error 2 "(Clip): min must be a constant float scalar" $WORKER --check-onnx "$(g clip_bound)"
    expect_error 2 "(Clip): a bound is NaN" $WORKER --check-onnx "$(g clip_nan)"
    expect_error 2 "(HardSigmoid): alpha inf and beta 0.5 must be finite" $WORKER --check-onnx "$(g hardsigmoid_inf)"
    # a constant operand broadcasts (a LAYER_CONST parameter); shapes that do not are refused
    expect_accepts "$(g mul_const)" "$TMP/mul_const.check"
    expect_error 2 "(Mul): shapes (N, 4, 6, 6) and (N, 4, 3, 3) do not broadcast" $WORKER --check-onnx "$(g mul_shape)"
    # ReduceMean and ReduceSum of non-batch axes are layers; of the batch axis refused
    expect_error 2 "(ReduceMean): axis 0 is the batch axis" $WORKER --check-onnx "$(g reducemean_axes)"
    expect_error 2 "(ReduceMean): no axes: the reduction over every axis, the batch axis too, is not supported" \
        $WORKER --check-onnx "$(g reducemean_all)"
    expect_accepts "$(g reducesum_c)" "$TMP/reducesum.check"
    # MatMul by an initializer over the last axis of an N-D input (torch.nn.Linear on (B, T, C))
    expect_accepts "$(g matmul_nd)" "$TMP/matmul_nd.check"
    expect_error 2 "(MatMul): the second input must be an initializer (IN, OUT), IN the input's last axis or, of a 2-D input, its features: input (N, 4, 6, 6)" \
        $WORKER --check-onnx "$(g matmul_k)"
    expect_error 2 "(BatchNormalization): momentum 1.5 is out of range \[0, 1\]" $WORKER --check-onnx "$(g bn_momentum)"
    # stochastic depth (the Python client's ai.pacer:StochasticDepth): the per-sample mask
    # of pacer's training forward, the identity at evaluation, mode "batch" refused
    mkdir -p "$TMP/sdepth"
    $TORCH_PY tests/tools/onnx_families.py --sdepth "$TMP/sdepth" >"$TMP/sdepth.log" 2>&1 ||
        { cat "$TMP/sdepth.log"; fail "tests/tools/onnx_families.py --sdepth failed"; }
    expect_error 2 "(StochasticDepth): mode 'batch' is not supported (\"row\" only: one draw per sample)" \
        $WORKER --check-onnx "$TMP/sdepth/sdepth_batch.onnx"
    mkdir -p "$TMP/sdepth/pacer"
    "$BUILD/tools/onnx_grads" "$TMP/sdepth/sdepth.onnx" "$TMP/sdepth/x.bin" 8 1 0.01 "$TMP/sdepth/pacer" ||
        fail "sdepth.onnx: onnx_grads failed"
    $TORCH_PY tests/tools/onnx_families.py --sdepth-check "$TMP/sdepth/pacer" "$TMP/sdepth/sdepth_eval.npy" ||
        fail "stochastic depth's mask (above)"
    # trained and exported (--export-onnx: the inference form), it is an Identity: a
    # runtime that knows no ai.pacer operator runs the file
    if [ -d "$PACER_SHARED/datasets/cifar-10" ]; then
        jq -n --arg m "$TMP/sdepth/sdepth.onnx" --arg p "$PACER_SHARED/datasets/cifar-10" \
            '{model: {onnx: $m}, dataset: {name: "cifar10", path: $p, train_subset: 64, test_subset: 64},
              algorithm: {name: "ssgd"}, workers: 1, batch_size: 16, epochs: 1, seed: 5, device: "cpu"}' \
            >"$TMP/sdepth/spec.json"
        $WORKER --spec "$TMP/sdepth/spec.json" --export-onnx "$TMP/sdepth/trained.onnx" >"$TMP/sdepth/train.log" 2>&1 ||
            { tail -20 "$TMP/sdepth/train.log"; fail "sdepth.onnx did not train"; }
        $TORCH_PY -c 'import onnx, sys
g = onnx.load(sys.argv[1]).graph
bad = [n.op_type for n in g.node if n.domain == "ai.pacer"] + [o.domain for o in onnx.load(sys.argv[1]).opset_import if o.domain == "ai.pacer"]
sys.exit("ai.pacer nodes left in the exported file: %s" % bad if bad else 0)' "$TMP/sdepth/trained.onnx" ||
            fail "the exported file keeps pacer's own operator"
        echo "ok: trained and exported, stochastic depth is an Identity in the file"
    fi
fi
$TORCH_PY tests/tools/onnx_families.py --export "$SET" "$TMP" >"$TMP/export.log" 2>&1
rc=$?
[ $rc -eq 77 ] && skip "$(grep '^onnx_families:' "$TMP/export.log" | tail -1)"
[ $rc -eq 0 ] || { tail -20 "$TMP/export.log"; fail "tests/tools/onnx_families.py --export $SET exited $rc"; }
[ -x "$BUILD/tools/onnx_grads" ] || fail "$BUILD/tools/onnx_grads is not built"

nets=$(sed -n 's/^\([A-Za-z0-9_]*\): exported .*/\1/p' "$TMP/export.log")
[ -n "$nets" ] || { cat "$TMP/export.log"; fail "no network exported"; }
for net in $nets; do
    f="$TMP/$net.onnx"
    expect_accepts "$f" "$TMP/$net.check"
    need_number "$net parameters" "$(json "$TMP/$net.check" .parameters)"
    mkdir -p "$TMP/$net"
    lr=$(sed -n "s/^$net: exported .*, lr \([^,]*\),.*/\1/p" "$TMP/export.log")
    "$BUILD/tools/onnx_grads" "$f" "$TMP/x.bin" 8 4 "$lr" "$TMP/$net" || fail "$net: onnx_grads failed"
    echo "$net ($(grep "^$net:" "$TMP/export.log" | sed 's/^[^(]*(\([^)]*\)).*/\1/'), $(json "$TMP/$net.check" .layers) layers):"
    $TORCH_PY tests/tools/onnx_families.py --compare "$TMP/$net.torch.npz" "$TMP/$net" ||
        fail "$net: pacer and torch differ (above)"
done
echo "ok: $(echo $nets | wc -w) networks import and match torch: $(echo $nets)"
