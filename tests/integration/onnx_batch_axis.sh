# The batch axis moved, split and merged, and sequences (N, C, L), against torch: timm's
# attention (one Linear for q, k and v reshaped to (B, N, 3, heads, d), permuted with the 3
# first, unbound: torch writes a Split on axis 0 and a Squeeze of each part) and a stack of
# Conv1d, BatchNorm1d, MaxPool1d and AvgPool1d on the image read as (B, 3, 1024)
# (tests/tools/onnx_batch_axis.py), exported in training form as the Python client exports a
# module, then onnx_families.sh's checks on each: the file accepted by --check-onnx, the
# evaluation and training logits, every parameter gradient, the running statistics and 4
# SGD steps' losses against torch's float64 numbers within onnx_families.py's named
# tolerances. Before that, graphs written at test time (onnx_batch_axis.py --graphs): an
# Unsqueeze and a Squeeze of a tensor whose batch axis a Transpose moved are accepted; a
# Split along the axis that holds the batch and a Squeeze of an axis that is not of size 1
# are refused by message, and so is a ViT-like network (class token, nn.MultiheadAttention)
# exported in inference form with the batch fixed to 1, whose head reshapes torch wrote as
# constants that no longer say where the batch goes: the message names the dynamic batch
# to export with; so is a Reshape of such a file to a constant (2, 2, 6) (Swin's windows).
. tests/lib.sh
mkdir -p "$TMP/graphs"
$TORCH_PY tests/tools/onnx_batch_axis.py --graphs "$TMP/graphs" >"$TMP/graphs.log" 2>&1
rc=$?
[ $rc -eq 77 ] && skip "$(tail -1 "$TMP/graphs.log")"
[ $rc -eq 0 ] || { cat "$TMP/graphs.log"; fail "tests/tools/onnx_batch_axis.py --graphs exited $rc"; }
g() { echo "$TMP/graphs/$1.onnx"; }
expect_accepts "$(g view_squeeze)" "$TMP/view_squeeze.check"
expect_error 2 "(Split): axis 1 of (4, N, 6): only an axis without the batch" $WORKER --check-onnx "$(g split_batch)"
expect_error 2 "(Squeeze): axis 0 of (4, N, 6) is not of size 1" $WORKER --check-onnx "$(g squeeze_size)"
expect_error 2 "the file fixes the batch to 1, so the shape no longer says which axis holds it; export with a dynamic batch" \
    $WORKER --check-onnx "$(g fixed_mha)"
expect_error 2 "(Reshape): the shape's first value 2 is a constant that is not the batch: the file fixes the batch to 1" \
    $WORKER --check-onnx "$(g fixed_reshape)"
FAMILIES_SET=batchaxis
export FAMILIES_SET
. tests/integration/onnx_families.sh
[ "$(json "$TMP/Seq1dish.check" .argmax_per_sample)" = 2048 ] ||
    { cat "$TMP/Seq1dish.check"; fail "Seq1dish: MaxPool1d's argmax is not 8 x 256 per sample"; }
