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
# A Concat along the axis that holds the batch (cat_split, and Catish of the networks:
# torch.cat(..., 0) then .chunk(2, 0)) is accepted and matches; cut at a bound that is no
# multiple of N, joined with a tensor of another shape, or with N * N in its shape
# arithmetic, it is refused by message.
. tests/lib.sh
mkdir -p "$TMP/graphs"
$TORCH_PY tests/tools/onnx_batch_axis.py --graphs "$TMP/graphs" >"$TMP/graphs.log" 2>&1
rc=$?
[ $rc -eq 77 ] && skip "$(tail -1 "$TMP/graphs.log")"
[ $rc -eq 0 ] || { cat "$TMP/graphs.log"; fail "tests/tools/onnx_batch_axis.py --graphs exited $rc"; }
g() { echo "$TMP/graphs/$1.onnx"; }
expect_accepts "$(g view_squeeze)" "$TMP/view_squeeze.check"
expect_error 2 "(Split): axis 1 of (4, N, 6): only an axis without the batch" $WORKER --check-onnx "$(g split_batch)"
# the batch joined and split back by sizes computed from its shape: t + 2 t, its mean over
# the last axis 3 x.mean(2); each of its 6 + 2 float32 roundings costs at most 2^-24 of the
# sums' magnitude, so |pacer - float64| <= 8 * 2^-24 * 3 mean|x| per element
expect_accepts "$(g cat_split)" "$TMP/cat_split.check"
$TORCH_PY -c "import numpy as np; np.random.seed(1); np.random.randn(5, 4, 6).astype('<f4').tofile('$TMP/x5.bin')" ||
    fail "numpy cannot write the input"
build/tools/onnx_logits "$(g cat_split)" "$TMP/x5.bin" 5 "$TMP/cat_split.out" || fail "onnx_logits cat_split failed"
$TORCH_PY -c "
import numpy as np, sys
x = np.fromfile('$TMP/x5.bin', '<f4').reshape(5, 4, 6).astype(np.float64)
y = np.fromfile('$TMP/cat_split.out', '<f4').reshape(5, 4)
err, bound = np.abs(y - 3 * x.mean(2)), 8 * 2.0 ** -24 * 3 * np.abs(x).mean(2)
print('cat_split: worst error %.2e, %.2f of its bound' % (err.max(), (err / bound).max()))
sys.exit(0 if (err <= bound).all() else 1)" || fail "cat_split: pacer's logits are not 3 x.mean(2)"
# an axis of 1 put in front of the batch, moved and reshaped back: x.sum(2), 5 roundings
expect_accepts "$(g unsqueeze_mid)" "$TMP/unsqueeze_mid.check"
build/tools/onnx_logits "$(g unsqueeze_mid)" "$TMP/x5.bin" 5 "$TMP/unsqueeze_mid.out" ||
    fail "onnx_logits unsqueeze_mid failed"
$TORCH_PY -c "
import numpy as np, sys
x = np.fromfile('$TMP/x5.bin', '<f4').reshape(5, 4, 6).astype(np.float64)
y = np.fromfile('$TMP/unsqueeze_mid.out', '<f4').reshape(5, 4)
err, bound = np.abs(y - x.sum(2)), 5 * 2.0 ** -24 * np.abs(x).sum(2)
print('unsqueeze_mid: worst error %.2e, %.2f of its bound' % (err.max(), (err / bound).max()))
sys.exit(0 if (err <= bound).all() else 1)" || fail "unsqueeze_mid: pacer's logits are not x.sum(2)"
expect_error 2 "(ReduceMean): axis 1 of (2, N, 4, 6) holds the batch: a reduction across samples is not supported" \
    $WORKER --check-onnx "$(g stack_mean_batch)"
expect_error 2 "(Slice): axis 0 of (N . 2, 4, 6): bounds at multiples of N . 1 only" $WORKER --check-onnx "$(g cat_bound)"
expect_error 2 "(Concat): its 70000 inputs joined exceed a bound of the model" $WORKER --check-onnx "$(g cat_many)"
expect_error 2 "(Concat): along axis 0, which holds the batch, input 1 is (N, 2, 6) and input 0 (N, 4, 6)" \
    $WORKER --check-onnx "$(g cat_unequal)"
expect_error 2 "(Mul): the batch size enters shape arithmetic that is not k . N + c" \
    $WORKER --check-onnx "$(g batch_square)"
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
