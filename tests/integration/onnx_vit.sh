# issue 44's ViT and ConvNeXt in torchvision's own classes (tests/tools/onnx_vit.py): a
# VisionTransformer (32x32, patch 4, 2 layers, 2 heads, hidden 32: the class token Expanded
# to the batch and concatenated, the positional embedding added, nn.MultiheadAttention's
# training export with its views of the batch axis) and a ConvNeXt of two CNBlock stages,
# each exported as the Python client exports a module for training:
#  - onnx_families.sh's checks (set "vit"): --check-onnx accepts it; on a batch of 8 pacer's
#    evaluation and training logits, every parameter gradient and 4 SGD steps' losses are
#    torch's float64 numbers from the same weights within onnx_families.py's named
#    tolerances;
#  - the ViT with attention dropout 0.1 (a Dropout on the attention weights, p > 0)
#    imports, drops while training and is the identity at evaluation (torch's evaluation
#    logits within 1e-4);
#  - 4 ssgd steps on 2 ranks with optimizer.kind adamw (weight decay 0.5, the default
#    groups: no decay on biases and norms) and label smoothing 0.1 give torch.optim.AdamW's
#    losses and weights with the same groups (adamw_torch.py's check and tolerances);
#  - the trained export (--export-onnx) in onnxruntime-node gives pacer's logits
#    (tools/onnx_logits) within ORT_TOL and the same predictions, and its weights load
#    into the torch module with load_state_dict(strict=True), whose evaluation logits are
#    pacer's (onnx_zoo_families.py's --load).
# Before that, the importer's refusals of graphs written at test time (onnx_vit.py
# --graphs), each message checked: an Expand whose first axis is not the batch or that adds
# leading axes to an activation; a tensor whose batch axis a Transpose moved summed
# across the batch, sliced along the batch, softmaxed along it, left as the graph's output; a
# Reshape that cannot regroup the axes; a Transpose of a weight read by an Add, or of
# another perm; the batch size plus 1; a Gather of a view along the batch or past its axis;
# a node reading both a Swin lead value and a view. Hand-written graphs of
# nn.MultiheadAttention's views and of Swin's qkv[0], qkv[1] of one window (a Gather of a
# view; both the fuzzer's seeds) are accepted.
. tests/lib.sh
onnx_graphs tests/tools/onnx_vit.py
expect_accepts "$(g mha)" "$TMP/mha.check"
expect_accepts "$(g qkv_view)" "$TMP/qkv.check"
# graph | the refusal's message (a grep pattern)
while IFS='|' read -r graph msg; do
    expect_error 2 "$msg" $WORKER --check-onnx "$(g "$graph")"
done <<'EOF'
expand_first|node 'logits' (Expand): input axis 0 of 1 to a constant: only a broadcast to the batch first and constant sizes after it is supported
expand_rank|node 'logits' (Expand): a shape of 3 axes for an activation of 2: new leading axes would move the batch axis
view_reduce|node 'logits' (ReduceSum): axis 1 of (3, N, 4) holds the batch: a reduction across samples is not supported
view_reshape|node 'logits' (Reshape): (3, N, 4) cannot be read as the shape given (its axes regrouped in order)
view_softmax|node 'logits' (Softmax): input 't' is (4, N): its last axis holds the batch
view_slice|node 'logits' (Slice): axis 1 of (3, N, 4): only an axis without the batch, a step not 0
view_output|the graph's output 'logits' is (3, N, 4): its batch axis moved or merged by a Transpose, Reshape or Concat
weight_add|node 'logits' (Add): input 'wt' is a Transpose of an initializer, which only MatMul reads
weight_perm|node 'wt' (Transpose): of an initializer: only a 2-D one's perm (1, 0)
batch_add|node 'logits' (Reshape): input 'shape' holds N + 1, the batch size plus a constant, which only shape arithmetic reads
view_gather|node 'logits' (Gather): axis 1 of (3, N, 4): only an axis without the batch
view_gather_index|node 'logits' (Gather): index 5 is out of range for an axis of 3
view_lead|node 'logits' (Add): reads a Reshape to (N \* k, ...) and a tensor whose batch axis a Transpose or Reshape moved or merged
concat_const|node 'j' (Concat): constant input 0 must be (1, ...) of the activations' (N, 3, 4) but along axis 1: one parameter for every sample
EOF
# GRAPH's logits of GRAPH_x.bin (2 samples) against numpy's GRAPH_y.bin (onnx_vit.py's)
numpy_logits() {
    "$BUILD/tools/onnx_logits" "$(g "$1")" "$TMP/graphs/$1_x.bin" 2 "$TMP/$1.bin" >"$TMP/$1.log" 2>&1 ||
        { cat "$TMP/$1.log"; fail "$1.onnx: onnx_logits failed"; }
    /usr/bin/python3 -c 'import sys, numpy as np
got, want = np.fromfile(sys.argv[1], "<f4"), np.fromfile(sys.argv[2], "<f4")
e = float(np.max(np.abs(got - want))) if got.shape == want.shape else float("inf")
print("  %s: max |pacer - numpy| %.1e (tol 1e-6)" % (sys.argv[3], e))
sys.exit(e > 1e-6)' "$TMP/$1.bin" "$TMP/graphs/$1_y.bin" "$2" || fail "$1.onnx: not numpy's logits"
}
# a parameter concatenated to activations (the class token where the batch was fixed to 1)
numpy_logits concat_param "a parameter concatenated to every sample"
# Swin's q, k = qkv[0], qkv[1] of one window: Gathers of a view
numpy_logits qkv_view "q @ k^T of a permuted qkv"
# a view as a Concat's fifth input (read plain like the first four)
numpy_logits concat_view5 "a view as a Concat's fifth input"
echo "ok: the refusals name what is wrong; nn.MultiheadAttention's views by hand, Swin's qkv of one window and a concatenated parameter import"

ORT_TOL=1e-4 # onnxruntime's logits against pacer's, relative to max(1, |logit|): as onnx_zoo_families.sh
FAMILIES_SET=vit
export FAMILIES_SET
. tests/integration/onnx_families.sh

$TORCH_PY tests/tools/onnx_vit.py --attn-dropout 0.1 "$TMP/x.bin" "$TMP" >"$TMP/drop.log" 2>&1 ||
    { cat "$TMP/drop.log"; fail "onnx_vit.py --attn-dropout failed"; }
expect_accepts "$TMP/vit_drop.onnx" "$TMP/drop.check"
mkdir -p "$TMP/drop"
"$BUILD/tools/onnx_grads" "$TMP/vit_drop.onnx" "$TMP/x.bin" 8 1 0.01 "$TMP/drop" >"$TMP/drop.grads" 2>&1 ||
    { cat "$TMP/drop.grads"; fail "vit_drop.onnx: onnx_grads failed"; }
/usr/bin/python3 - "$TMP" <<'PY' || fail "attention dropout (above)"
import sys
import numpy as np
d = sys.argv[1]
got, want = np.fromfile(d + "/drop/eval_logits.bin", "<f4"), np.fromfile(d + "/vit_drop.eval.bin", "<f4")
train = np.fromfile(d + "/drop/train_logits.bin", "<f4")
e = float(np.max(np.abs(got - want)) / np.max(np.abs(want)))
t = float(np.max(np.abs(train - got)) / np.max(np.abs(got)))
print("  attention dropout 0.1: evaluation logits vs torch's max_rel %.1e (tol 1e-4); training vs evaluation %.1e" % (e, t))
sys.exit(0 if e <= 1e-4 and np.all(np.isfinite(train)) and t > 1e-3 else 1)
PY
echo "ok: attention dropout p > 0 drops while training and is the identity at evaluation"

$TORCH_PY tests/tools/onnx_vit.py --data "$TMP" >"$TMP/data.log" 2>&1 || { cat "$TMP/data.log"; fail "onnx_vit.py --data failed"; }
ORT=0
if command -v node >/dev/null 2>&1 && [ -d tests/onnxrt/node_modules/onnxruntime-node ]; then
    ORT=1
else
    echo "note: onnxruntime-node not installed (make deps installs it into tests/onnxrt): runtime check not run"
fi
for net in ViT ConvNeXt; do
    jq -n --arg m "$TMP/$net.onnx" --arg p "$TMP/data.npz" --arg c "$TMP/cache" \
        '{model: {onnx: $m}, dataset: {format: "npz", layout: "nchw", path: $p, mean: [0], std: [1], cache_dir: $c},
          algorithm: {name: "ssgd"}, workers: 2, batch_size: 16, epochs: 4, seed: 1, device: "cpu", log_every: 0,
          optimizer: {kind: "adamw", lr: 0.003, weight_decay: 0.5, betas: [0.9, 0.99]}, loss: {label_smoothing: 0.1}}' \
        >"$TMP/$net.adamw.json"
    $MPIRUN -np 2 $WORKER --spec "$TMP/$net.adamw.json" --metrics "$TMP/$net.adamw.jsonl" \
        --export-onnx "$TMP/$net.trained.onnx" >"$TMP/$net.adamw.log" 2>&1 ||
        { tail -20 "$TMP/$net.adamw.log"; fail "$net: ssgd with adamw on 2 ranks failed"; }
    $TORCH_PY tests/tools/onnx_vit.py --adamw $net "$TMP" "$TMP/$net.adamw.jsonl" "$TMP/$net.trained.onnx" \
        4 0.003 0.5 0.9 0.99 0.1 || fail "$net: pacer's AdamW differs from torch.optim.AdamW (above)"
    "$BUILD/tools/onnx_logits" "$TMP/$net.trained.onnx" "$TMP/x_test.bin" 32 "$TMP/$net.logits.bin" \
        >"$TMP/$net.logits.log" 2>&1 || { cat "$TMP/$net.logits.log"; fail "$net: onnx_logits failed"; }
    if [ $ORT = 1 ]; then
        node tests/onnxrt/logits.mjs "$TMP/$net.trained.onnx" "$TMP/x_test.bin" 32 3x32x32 "$TMP/$net.logits.bin" \
            "$TMP/labels.bin" >"$TMP/$net.ort.json" 2>&1 ||
            { cat "$TMP/$net.ort.json"; fail "$net: onnxruntime-node could not run the exported model"; }
        d=$(json "$TMP/$net.ort.json" .max_rel_diff) p=$(json "$TMP/$net.ort.json" .predictions_differ)
        echo "  $net: onnxruntime-node: logits max_rel $d (tol $ORT_TOL), $p of 32 predictions differ"
        cmp_num "$d" "<=" $ORT_TOL && [ "$p" = 0 ] || fail "$net: onnxruntime-node's logits are not pacer's"
    fi
    $TORCH_PY tests/tools/onnx_vit.py --load $net "$TMP/$net.trained.onnx" "$TMP" "$TMP/$net.logits.bin" ||
        fail "$net: the trained weights in torch (above)"
done
echo "ok: ViT and ConvNeXt trained with adamw on 2 ranks as torch, exported, run by onnxruntime and reloaded"
