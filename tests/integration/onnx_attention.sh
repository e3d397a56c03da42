# Issue 44's operators against torch: a small attention block and a ConvNeXt-like stack in
# plain torch (tests/tools/onnx_attention.py: softmax(Q^T K / sqrt(d)) and V A^T as MatMuls of
# two activations, nn.GELU, a lone erf, LogSoftmax; two CNBlocks with nn.LayerNorm after a
# permute, their Linear layers as 1x1 convolutions, a layer scale; tokens picked by a
# constant index, ViT's x[:, 0], as a Gather) exported in training
# form as the Python client exports a module, then onnx_families.sh's checks on each (the file
# accepted by --check-onnx; logits, every parameter gradient and 4 SGD steps' losses against
# torch's float64 numbers within onnx_families.py's named tolerances). GELU's five nodes
# and LayerNorm's nine must each import as one layer (23 and 25 layers). Before that, the
# importer's refusals of graphs written at test time (onnx_attention.py --graphs), each
# message checked: Softmax on the batch axis, a non-last axis before opset 13, a MatMul of
# activations whose shapes do not multiply, LayerNormalization's scale of the wrong size
# and its batch axis, a Gather of an activation by nine indices (more than a constant list
# holds); opset 17's LayerNormalization and a Gather by two indices accepted. (torchvision's own CNBlock
# and ViT need a Linear over the last axis: another branch's, not here.)
. tests/lib.sh
mkdir -p "$TMP/graphs"
$TORCH_PY tests/tools/onnx_attention.py --graphs "$TMP/graphs" >"$TMP/graphs.log" 2>&1
rc=$?
[ $rc -eq 77 ] && skip "$(tail -1 "$TMP/graphs.log")"
[ $rc -eq 0 ] || { cat "$TMP/graphs.log"; fail "tests/tools/onnx_attention.py --graphs exited $rc"; }
g() { echo "$TMP/graphs/$1.onnx"; }
expect_error 2 "(Softmax): axis 0: only a non-batch axis (1 to 1) is supported" $WORKER --check-onnx "$(g softmax_batch)"
expect_error 2 "(Softmax): axis 1 in opset 12 normalises that axis and every later one together; only the last axis is supported before opset 13" \
    $WORKER --check-onnx "$(g softmax_opset12)"
expect_accepts "$(g softmax_last12)" "$TMP/last12.check"
expect_error 2 "(MatMul): (N, 4, 6, 6) times (N, 4, 3, 3): two activations multiply as" $WORKER --check-onnx "$(g matmul_shape)"
expect_accepts "$(g layernorm17)" "$TMP/ln17.check"
expect_error 2 "(LayerNormalization): scale and bias must be initializers of 10 elements" $WORKER --check-onnx "$(g layernorm_scale)"
expect_error 2 "(LayerNormalization): axis 0: only a non-batch axis (1 to 1) is supported" $WORKER --check-onnx "$(g layernorm_batch)"
expect_accepts "$(g gather_indices)" "$TMP/gi.check"
[ "$(json "$TMP/gi.check" .classes)" = 2 ] || { cat "$TMP/gi.check"; fail "gather_indices: not 2 classes"; }
expect_error 2 "(Gather): the indices of an activation must be a constant of 1 to 8 integers" $WORKER --check-onnx "$(g gather_many)"
echo "ok: the refusals name what is wrong"

FAMILIES_SET=attention
export FAMILIES_SET
. tests/integration/onnx_families.sh
[ "$(json "$TMP/Attentionish.check" .layers)" = 23 ] ||
    { cat "$TMP/Attentionish.check"; fail "Attentionish: not 23 layers (GELU not one layer?)"; }
[ "$(json "$TMP/ConvNeXtish.check" .layers)" = 25 ] ||
    { cat "$TMP/ConvNeXtish.check"; fail "ConvNeXtish: not 25 layers (LayerNorm or GELU not one layer?)"; }
echo "ok: Attentionish imports as 23 layers, ConvNeXtish as 25 (each GELU and LayerNorm one)"
