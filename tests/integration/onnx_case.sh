# pacer-worker --onnx-case DIR's exit statuses and messages (issue 43's interface), on small
# cases in the backend tests' layout made at test time (tests/tools/onnx_case_make.py):
# 0 when every output of every data set is within rtol 1e-3 and atol 1e-7 (also a value
# moved by half the tolerance), 1 on a mismatch naming the data set, the output and its
# largest error (a value moved by 3 times the tolerance; an output of the wrong size),
# 2 with one line naming what is refused: an operator or attribute value the importer does
# not map (its own message) or a declared output shape the layers do not give, an integer
# activation or weight (its type; an INT64 shape argument is read as a constant and passes), a truncated tensor file, a tensor whose dims claim 2^48 elements, a
# batch whose activations exceed 1 GiB of floats (refused before they are allocated), raw
# data of the wrong length, an input missing, no data set, no model, a second argument;
# samples of rank 0 to 5 pass (Relu, BatchNormalization), a Conv on a volume and an input
# of rank 7 are refused by name; a second graph input of the activation's batch is fed as an
# activation (an Add of two inputs passes), a Conv weight given as an input stays one, each
# output of a Split is compared, an Identity's output, a Conv on (N, C, L) and opset 6 pass,
# opset 5 (but for the global pools, defined once since opset 1) is refused;
# GlobalAveragePool of a sequence, GlobalMaxPool of an image and a sequence,
# LayerNormalization's Mean and InvStdDev (an output, and read by a node) pass;
# Gemm's C of the batch (an activation), of one row and a scalar pass, a scalar with beta 2 is
# refused; opset 6's BatchNormalization with is_test 1 passes, without it (the training form)
# its Y and running mean and variance pass, as with training_mode 1 (ONNX's population
# variance), its saved statistics and a Dropout or an inference-form batch norm beside it
# are refused;
# MaxPool and AveragePool of a volume (N, C, D, H, W) with uneven pads, dilation, ceil_mode
# and count_include_pad both ways pass against numpy; opset 6's Add with broadcast 1 passes,
# with an axis is refused; a Pad of a constant value that no Conv
# reads (as an input, opset 6's attribute) passes, of modes edge and reflect too (reflect
# by the axis's size is refused); a folded Where of
# two inputs is refused; a shape chain of every folded operator, ReduceSum and
# ReduceMean, and MatMul + Add over the last axis pass; a Gather by a constant list of
# indices passes; what moves, merges or reduces the graph's axis 0 (a Transpose, a Flatten,
# a Concat, a constant of the input's rank, a rank-0 input, Gemm's transA) passes read as one sample of
# fixed shape, but next to an operator of batches only (MaxPool) keeps its refusal; Pow
# by a tensor exponent (an initializer, a second input, an int64 initializer) passes.
. tests/lib.sh
$TORCH_PY tests/tools/onnx_case_make.py "$TMP/c" >"$TMP/make.log" 2>&1
rc=$?
[ $rc -eq 77 ] && skip "onnx/numpy not importable by /usr/bin/python3 ($(tail -1 "$TMP/make.log"))"
[ $rc -eq 0 ] || { cat "$TMP/make.log"; fail "tests/tools/onnx_case_make.py exited $rc"; }

# expect NAME STATUS TEXT - --onnx-case on $TMP/c/NAME exits STATUS and prints TEXT (a
# fixed string) on stdout or stderr.
expect() {
    "$WORKER" --onnx-case "$TMP/c/$1" >"$TMP/out" 2>&1
    got=$?
    [ $got -eq "$2" ] || { cat "$TMP/out"; fail "$1: exit $got, want $2"; }
    grep -qF -- "$3" "$TMP/out" || { cat "$TMP/out"; fail "$1: no '$3' in the output"; }
    echo "ok: $1: exit $2, '$3'"
}

expect good 0 "test_data_set_1 output_0 'y' (2, 4, 5, 5): 200 values"
[ "$(grep -c ': ok$' "$TMP/out")" -eq 2 ] || { cat "$TMP/out"; fail "good: not two outputs ok"; }
expect near 0 "test_data_set_1 output_0 'y' (2, 4, 5, 5): 200 values, largest error 0.000261 at 7"
expect far 1 "test_data_set_1 output_0 'y' (2, 4, 5, 5): 200 values, largest error 0.00156 at 7"
grep -qF "MISMATCH (1 values outside 1e-07 + 0.001 * |want|)" "$TMP/out" || { cat "$TMP/out"; fail "far: count"; }
expect shape 1 "test_data_set_1 output_0 'y': 199 values expected, the model computes 2 x 100: MISMATCH"
expect reshaped 2 "the last layer gives (N, 4, 5, 5), the graph's output declares another shape"
expect sin 2 "node 'y': operator Sin is not supported (\`pacer-worker --list-ops\` lists the operators"
expect storage 2 "node 'y' (MaxPool): storage_order 1 is not supported"
expect bigbatch 2 "test_data_set_0/input_0.pb: a batch of 65536 needs 5.37e+08 floats of activations (at most 2.68e+08)"
# an INT64 input after the first is a constant: shape arguments fold, a weight is refused
expect int 2 "initializer 'W': data type 7, only float (1) is supported"
expect int_x 2 "test_data_set_1/input_0.pb: data type INT64 (7): only float32 activations are read"
expect shape_input 0 "test_data_set_0 output_0 'y' (2, 4, 3): 24 values"
expect trunc 2 "test_data_set_1/input_0.pb: not a TensorProto, or truncated"
expect huge 2 "test_data_set_1/input_1.pb: shape of 4 dimensions is negative, too large"
expect rawlen 2 "test_data_set_1/input_0.pb: 4 bytes of raw data for 150 elements"
expect fewer 2 "the graph has 2 inputs, the case gives 1"
expect nodata 2 "no test_data_set_0 directory"
expect missing 2 "model.onnx: No such file or directory"
# N-D samples: any rank 0 to 5 after the batch; convolutions take images only
expect nd_relu 0 "test_data_set_0 output_0 'y' (2, 3, 4, 5, 2): 240 values"
expect nd_scalar 0 "test_data_set_0 output_0 'y' (3): 3 values"
expect nd_bn 0 "test_data_set_0 output_0 'y' (2, 3, 4, 2, 2): 96 values"
expect nd_conv 2 "node 'y' (Conv): input 'x' is (N, 3, 2, 3, 4, 2): Conv takes images (N, C, H, W), sequences (N, C, L) and volumes (N, C, D, H, W) only"
expect conv3d 0 "test_data_set_0 output_0 'y' (2, 4, 3, 4, 4): 384 values"
# every graph input as what it is: a second activation is fed with the first, a weight given
# as an input (its first dimension the batch's) stays a weight; every output is compared,
# an output that is the input itself too; Conv on a sequence; opsets 6 to 17
expect inputs_add 0 "test_data_set_0 output_0 'y' (2, 3, 4): 24 values"
expect conv_w_batch 0 "test_data_set_0 output_0 'y' (4, 4, 5, 5): 400 values"
expect outputs_split 0 "test_data_set_0 output_1 'b' (2, 3, 3): 18 values"
grep -qF "test_data_set_0 output_0 'a' (2, 1, 3): 6 values" "$TMP/out" || { cat "$TMP/out"; fail "outputs_split: output_0"; }
expect identity_out 0 "test_data_set_0 output_0 'y' (2, 4, 3): 24 values"
expect conv1d 0 "test_data_set_0 output_0 'y' (2, 4, 6): 48 values"
expect opset6 0 "test_data_set_0 output_0 'y' (2, 4, 3): 24 values"
expect opset5 2 "opset 5 is not supported (6 to 17; 1 to 5 for graphs of operators defined once since opset 1 only"
expect gap1d 0 "test_data_set_0 output_0 'y' (2, 3, 1): 6 values"
expect gmp 0 "test_data_set_0 output_0 'y' (2, 3, 1, 1): 6 values"
expect gmp1d 0 "test_data_set_0 output_0 'y' (2, 3, 1): 6 values"
expect ln_stats 0 "test_data_set_0 output_2 'z' (2, 3, 1, 1): 6 values"
[ "$(grep -c ': ok$' "$TMP/out")" -eq 3 ] || { cat "$TMP/out"; fail "ln_stats: not three outputs ok"; }
expect gemm_c 0 "test_data_set_0 output_0 'y' (3, 4): 12 values"
expect gemm_c_row 0 "test_data_set_0 output_0 'y' (3, 4): 12 values"
expect gemm_c_scalar 0 "test_data_set_0 output_0 'y' (3, 4): 12 values"
expect gemm_c_scalar_beta 2 "node 'y' (Gemm): beta 2 with a C other than a vector of the 4 outputs: only beta 1"
expect bn_opset6 0 "test_data_set_0 output_0 'y' (2, 3, 3): 18 values"
expect bcast_opset6 0 "test_data_set_0 output_0 'y' (2, 3, 4): 24 values"
expect bcast_axis6 2 "node 'y' (Add): attribute 'axis' is not supported"
expect pad_value 0 "test_data_set_0 output_0 'y' (2, 4, 6, 9): 432 values"
expect pad_attr 0 "test_data_set_0 output_0 'y' (2, 3, 6, 9): 324 values"
expect pad_edge 0 "test_data_set_0 output_0 'y' (2, 3, 6, 9): 324 values"
expect pad_reflect 0 "test_data_set_0 output_0 'y' (2, 3, 7, 12): 504 values"
expect pad_reflect_far 2 "node 'y' (Pad): pads 5, 0 of an axis of 5: reflect pads below the axis's size"
expect where_arity 2 "node 'w' (Where): 2 inputs, want 3"
expect pool3d_max 0 "test_data_set_0 output_0 'y' (2, 2, 3, 3, 4): 144 values"
expect pool3d_avg 0 "test_data_set_0 output_0 'y' (2, 2, 3, 4, 7): 336 values"
expect pool3d_avg_cip 0 "test_data_set_0 output_0 'y' (2, 2, 3, 4, 7): 336 values"
expect bn_opset6_train 0 "test_data_set_0 output_2 'rv' (3): 3 values"
[ "$(grep -c ': ok$' "$TMP/out")" -eq 3 ] || { cat "$TMP/out"; fail "bn_opset6_train: not three outputs ok"; }
expect bn_training 0 "test_data_set_0 output_1 'rm' (3): 3 values"
[ "$(grep -c ': ok$' "$TMP/out")" -eq 3 ] || { cat "$TMP/out"; fail "bn_training: not three outputs ok"; }
expect bn_saved 2 "(BatchNormalization): output 3 (the saved statistics) is not compared"
expect bn_dropout 2 "(Dropout) beside a BatchNormalization in training form"
expect bn_mixed 2 "(BatchNormalization) beside a BatchNormalization in training form"
expect unary 0 "test_data_set_0 output_0 'y' (2, 3, 4): 24 values"
expect pow_tensor 0 "test_data_set_0 output_0 'y' (2, 3, 4): 24 values"
expect pow_inputs 0 "test_data_set_0 output_0 'y' (2, 3, 4): 24 values"
expect pow_int 0 "test_data_set_0 output_0 'y' (2, 3, 4): 24 values"
expect bcast 0 "test_data_set_0 output_0 'y' (2, 3, 4): 24 values"
expect bcast_rank 0 "test_data_set_0 output_0 'y' (2, 3, 4): 24 values"
expect bcast_shape 2 "node 'y' (Add): shapes (N, 3, 4) and the constant (5) do not broadcast"
expect movement 0 "test_data_set_0 output_0 'y' (2, 2, 3): 12 values"
expect move_batch 0 "test_data_set_0 output_0 'y' (3, 2, 4): 24 values"
# folding at import of the shape arithmetic, Flatten's batch axis, reductions, a last-axis linear
expect fold 0 "test_data_set_0 output_0 'y' (2, 4, 3): 24 values"
expect slice_down 0 "test_data_set_0 output_0 'y' (2, 3, 3): 18 values"
expect flatten_axis 0 "test_data_set_0 output_0 'y' (6, 4): 24 values"
# the graph's axis 0 as any axis: a case refused as batches is read as one sample of fixed
# shape (model/onnx/unit.c), a node of batches only then keeps the first refusal
expect gather_list 0 "test_data_set_0 output_0 'y' (2, 2, 2, 3): 24 values"
expect unit_axis0 0 "test_data_set_0 output_0 'y' (1, 1, 3): 3 values"
expect unit_scalar 0 "test_data_set_0 output_0 'y' (): 1 values"
expect unit_gemm 0 "test_data_set_0 output_0 'y' (3, 5): 15 values"
expect unit_pool 2 "node 'y' (MaxPool): input 'c' is (N * 2, 3, 4, 4), its batch axis moved or merged by a Transpose, Reshape or Concat"
expect reduce 0 "test_data_set_0 output_0 'y' (2, 3, 1): 6 values"
expect linear 0 "test_data_set_0 output_0 'y' (2, 3, 5): 30 values"
expect nd_rank7 2 "test_data_set_0/input_0.pb: shape (1, 2, 1, 2, 1, 2, 1): the activation must be a batch (N, ...) of rank 0 to 6"
# empty tensors (a dimension of 0): computed as nothing and compared as no values; a layer
# reading one into a non-empty output is refused, and so is any in a model to train
expect nd_empty 0 "test_data_set_0 output_0 'y' (2, 0, 3): 0 values"
expect empty_out 0 "test_data_set_0 output_0 'y' (2, 0, 3): 0 values"
expect empty_into 2 "layer 1 (concat) reads an empty tensor (a dimension of 0) into (4): not supported"
expect empty_dead 0 "test_data_set_0 output_0 'y' (2, 4): 8 values"
expect empty_add 0 "test_data_set_0 output_0 'y' (2, 0, 3): 0 values"
expect batch0 2 "input_0.pb: its axis 0, the batch, is 0: an empty batch is not supported"
"$WORKER" --check-onnx "$TMP/c/empty_dead/model.onnx" >"$TMP/out" 2>&1
[ $? -eq 2 ] && grep -qF "layer 0 (slice) gives an empty tensor (N, 0) (a dimension of 0): a model to train computes none" \
    "$TMP/out" || { cat "$TMP/out"; fail "an empty Slice in a model to train is not refused by name"; }
echo "ok: an empty Slice in a model to train: refused by name"
"$WORKER" --onnx-case "$TMP/c/good" extra >"$TMP/out" 2>&1
[ $? -eq 2 ] && grep -qF -- "--onnx-case takes one directory and nothing else" "$TMP/out" ||
    { cat "$TMP/out"; fail "a second argument is not refused"; }
echo "ok: a second argument: exit 2"
