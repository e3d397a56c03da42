"""tests/tools/onnx_case_make.py - small cases in the layout of ONNX's backend tests
(model.onnx, test_data_set_N/input_K.pb, output_K.pb), made at test time for
tests/integration/onnx_case.sh to check pacer-worker --onnx-case's exit statuses and
messages on, without libonnx-testdata.

Usage: /usr/bin/python3 tests/tools/onnx_case_make.py OUTDIR
Writes under OUTDIR:
  good/      Conv 3->4 channels, 3x3, pads 1, on x (2, 3, 5, 5): x and the weight W are
             graph inputs (as the suite's cases give them), the bias B an initializer;
             two data sets, the expected y computed here in float64;
  near/      good with one expected value moved by 0.5e-3 of itself (inside rtol 1e-3);
  far/       good with that value moved by 3e-3 of itself (outside): a mismatch;
  shape/     good whose expected y has one value too few;
  int/       good with W given as an INT64 tensor (bound as a constant, refused as a weight);
  int_x/     good with x given as an INT64 tensor;
  shape_input/ Reshape of x (2, 3, 4) to the shape given as an INT64 input_1 (0, 4, 3):
             read as a constant, passes;
  sin/       Sin on x (2, 3, 5, 5): an operator the importer does not map;
  storage/   MaxPool with storage_order 1: an attribute value it refuses;
  reshaped/  good whose graph declares y as (2, 4, 25, 1): as many values, another shape;
  bigbatch/  a 1x1 Conv to 512 channels on x (65536, 1, 4, 4): 2^29 floats of activations;
  trunc/     good with input_0.pb cut in half;
  huge/      good whose input_1.pb claims dims (2^24, 2^24, 1, 1) and holds nothing;
  rawlen/    good whose input_0.pb has 4 bytes of raw data for its 150 elements;
  fewer/     good without input_1.pb;
  nodata/    good's model.onnx alone;
  nd_relu/   Relu on x (2, 3, 4, 5, 2): a rank-4 sample, passes;
  nd_bn/     BatchNormalization (evaluation) on x (2, 3, 4, 2, 2): channels axis 1, passes;
  nd_scalar/ Relu on x (3,): a rank-0 sample, passes;
  nd_conv/   Conv on x (2, 3, 2, 3, 4, 2) (a 4-D convolution): refused by name;
  conv3d/    Conv on a volume x (2, 2, 5, 6, 7) by W (4, 1, 2, 3, 2), strides (2, 1, 2), pads
             (1, 0, 1) and (0, 2, 1), dilations (1, 2, 1), group 2: passes against numpy;
  nd_rank7/  Relu on x of rank 7: more axes than a sample may have, refused;
  nd_empty/  Relu on x (2, 0, 3): an empty tensor in and out, passes (nothing computed);
  inputs_add/ Add of x (2, 3, 4) and z (2, 3, 4), both graph inputs: z is an activation like x
             (fed with it), passes;
  conv_w_batch/ Conv of x (4, 3, 5, 5) by a weight W (4, 3, 3, 3) given as a graph input whose
             first dimension is the batch's: still a weight, passes;
  outputs_split/ Split of x (2, 4, 3) along axis 1 into 1 and 3: two outputs, each compared,
             passes;
  identity_out/ Identity of x: the output is the input, passes;
  conv1d/    Conv on a sequence x (2, 3, 10) by W (4, 3, 3), stride 2, pads 1 and 2: passes;
  opset6/    Relu in opset 6: passes; opset5/ the same in opset 5: refused by its opset;
  gap1d/     GlobalAveragePool of a sequence x (2, 3, 10) in opset 1 (the operator unchanged
             since): (2, 3, 1), passes;
  gmp/, gmp1d/ GlobalMaxPool of x (2, 3, 4, 5) and of the sequence: passes;
  gemm_c/    Gemm (alpha 0.5) of x (3, 5) by B (5, 4) plus C (3, 4), a graph input of the
             batch's: C is data (an activation), passes; gemm_c_row/ C (1, 4), beta 0.25: a
             bias, passes; gemm_c_scalar/ C a scalar: broadcast, passes; gemm_c_scalar_beta/
             the same with beta 2: refused (beta 1 only where C is not a bias vector);
  bn_opset6/ BatchNormalization in opset 6 with is_test 1: passes; bn_opset6_train/ without
             is_test (0, the training form): Y and the running mean and variance pass;
  bcast_opset6/ opset 6's Add of x (2, 3, 4) and c (4) with broadcast 1: passes;
             bcast_axis6/ the same with axis 1 (another alignment than NumPy's): refused;
  pad_value/ Pad of x (2, 3, 4, 5) with 1.5 on channels and both spatial axes, read by no
             Conv (the graph's output): layers of its own, passes; pad_attr/ opset 6's pads
             attribute, zeros: passes; pad_edge/ mode edge: passes; pad_reflect/ mode
             reflect (pads an input): passes; pad_reflect_far/ reflect by the axis's size (of a
             sequence): refused;
  where_arity/ a Where of two constants (it takes three) folded at import: refused by its
             count of inputs (the third was read regardless);
  pool3d_max/ MaxPool of a volume x (2, 2, 5, 6, 7): window (2, 3, 2), strides (2, 1, 2),
             pads (1, 0, 1) and (0, 1, 1), dilations (1, 2, 1), ceil_mode: passes against a
             window-by-window numpy pool; pool3d_avg/, pool3d_avg_cip/ AveragePool (3, 2, 2),
             strides (2, 2, 1), pads (1, 1, 0) and (1, 0, 1), ceil_mode, count_include_pad 0
             and 1: pass;
  ln_stats/  LayerNormalization over axes 2 and 3 of x (2, 3, 4, 5), epsilon 0.25, with its
             Mean a graph output and its InvStdDev read by a Neg: Y, Mean and -InvStdDev pass;
  bn_training/ BatchNormalization with training_mode 1, momentum 0.8, epsilon 0.01 on x (2, 3,
             3): Y by the batch's statistics and the running mean and variance (ONNX's, of
             the population variance, not PyTorch's unbiased one) pass against numpy;
             bn_saved/ opset 9's training form with its saved mean and variance as graph
             outputs: refused by name; bn_dropout/ a Dropout after a training_mode 1 batch
             norm: refused (the forward in training mode would drop); bn_mixed/ a batch
             norm in inference form after it: refused (it would use the batch's statistics);
  unary/     Sqrt(Abs(Exp(Neg(x)))) then Reciprocal then Pow(., 2.5) on x (2, 3, 4): passes;
  pow_tensor/ Pow whose exponent is a (3, 4) initializer (of integers: x may be negative):
             passes; pow_inputs/ Pow of x (2, 3, 4) > 0 by z (2, 3, 4), both graph inputs:
             passes; pow_int/ Pow by an int64 initializer (4): its values as floats, passes;
  bcast/     ((x (2, 3, 4) - c (3, 1)) * k (4), a Constant) / x: broadcasting, passes;
  bcast_rank/ x (2, 3, 4) + c (2, 3, 4): a constant with the batch's axis: read as one
             sample of fixed shape, passes;
  bcast_shape/ x (2, 3, 4) + c (5): shapes that do not broadcast, refused;
  movement/  x (2, 4, 3) split 1 + 3 on axis 1, Unsqueeze and Squeeze of the one, Transpose
             twice of the other, Concat again, Slice of every other row: passes;
  move_batch/ Transpose perm (1, 0, 2): moves the batch axis: read as one sample, passes;
  fold/      Reshape of x (2, 3, 4) to a shape computed from Shape(x) through Slice (step
             -1), Gather, Unsqueeze, Squeeze, Range, Equal, ConstantOfShape, Mod, Not, Where
             and Concat: (N, 4, 3), folded at import, passes;
  slice_down/ Slice of x (2, 5, 3) from row 4 down past the first by step -2: rows 4, 2,
             0, passes;
  empty_out/ Slice of x (2, 4, 3) from row 9 (past the end): an empty output (2, 0, 3),
             passes;
  empty_into/ that empty Slice of x (2, 4) concatenated with x: a layer reading an empty
             tensor into a non-empty one, refused by name;
  empty_dead/ that empty Slice of x (2, 4) read by nothing, and Relu(x): passes as a case,
             refused by name as a model to train;
  empty_add/ Relu of x (2, 0, 3) added to x: two empty tensors summed, passes;
  batch0/    Relu of x (0, 3): an empty batch, refused by name;
  flatten_axis/ Flatten axis 2 of x (2, 3, 4): merges the batch axis: read as one sample,
             passes;
  gather_list/ Gather of x (2, 5, 3) along axis 1 by constant indices [[4, 0], [1, -1]]:
             passes as batches;
  unit_axis0/ Concat along axis 0 of x (2, 3) and z (2, 3), graph inputs, then ReduceSum
             over axis 0 and Unsqueeze of axis 0: read as one sample, passes;
  unit_scalar/ Neg of a rank-0 x: one sample of a scalar, passes;
  unit_gemm/ Gemm of x (4, 3) with transA (a product over the batch axis), B (5, 4) with
             transB, C (1, 5) a graph input, alpha 0.5, beta 2: read as one sample, passes;
  unit_pool/ Concat along axis 0 of x (2, 3, 4, 4) with itself, then MaxPool: an operator
             of batches only, refused with the Concat's reason (the first);
  reduce/    ReduceSum over axis 2 (axes an input) then ReduceMean over -1 of x (2, 3, 4, 5),
             keepdims 0 and 1: (2, 3, 1), passes;
  linear/    MatMul of x (2, 3, 4) by a (4, 5) weight, then Add of a bias: passes.
Exits 77 when onnx or numpy cannot be imported.
"""
import os
import shutil
import sys

try:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
except ImportError as e:
    print("skip: %s" % e)
    sys.exit(77)


def conv(x, w, b, pad):
    n, c, h, wd = x.shape
    oc, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    y = np.zeros((n, oc, h + 2 * pad - kh + 1, wd + 2 * pad - kw + 1))
    for i in range(y.shape[2]):
        for j in range(y.shape[3]):
            y[:, :, i, j] = np.einsum("nckl,ockl->no", xp[:, :, i:i + kh, j:j + kw], w)
    return y + b[None, :, None, None]


def save(path, arr, name):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(arr, name).SerializeToString())


def model(nodes, inputs, output, inits=()):
    g = helper.make_graph(nodes, "case", inputs, [output], list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    return m.SerializeToString()


def main():
    out = sys.argv[1]
    rng = np.random.default_rng(43)
    f32 = TensorProto.FLOAT
    b = rng.standard_normal(4).astype(np.float32)
    good = os.path.join(out, "good")
    os.makedirs(good)
    with open(os.path.join(good, "model.onnx"), "wb") as f:
        f.write(model([helper.make_node("Conv", ["x", "W", "B"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])],
                      [helper.make_tensor_value_info("x", f32, [2, 3, 5, 5]),
                       helper.make_tensor_value_info("W", f32, [4, 3, 3, 3])],
                      helper.make_tensor_value_info("y", f32, [2, 4, 5, 5]), [numpy_helper.from_array(b, "B")]))
    for s in range(2):
        d = os.path.join(good, "test_data_set_%d" % s)
        os.makedirs(d)
        x = rng.standard_normal((2, 3, 5, 5)).astype(np.float32)
        w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
        save(os.path.join(d, "input_0.pb"), x, "x")
        save(os.path.join(d, "input_1.pb"), w, "W")
        y = conv(x.astype(np.float64), w.astype(np.float64), b.astype(np.float64), 1).astype(np.float32)
        save(os.path.join(d, "output_0.pb"), y, "y")

    def variant(name, fn):
        d = os.path.join(out, name)
        shutil.copytree(good, d)
        fn(os.path.join(d, "test_data_set_1"), d)

    def moved(by):
        def fn(s, _):
            y = numpy_helper.to_array(onnx.load_tensor(os.path.join(s, "output_0.pb"))).copy()
            y.flat[7] += by * abs(y.flat[7])
            save(os.path.join(s, "output_0.pb"), y, "y")
        return fn

    variant("near", moved(0.5e-3))
    variant("far", moved(3e-3))
    variant("shape", lambda s, _: save(os.path.join(s, "output_0.pb"), np.zeros(199, np.float32), "y"))
    variant("int", lambda s, _: save(os.path.join(s, "input_1.pb"), np.zeros((4, 3, 3, 3), np.int64), "W"))
    variant("int_x", lambda s, _: save(os.path.join(s, "input_0.pb"), np.zeros((2, 3, 5, 5), np.int64), "x"))

    def trunc(s, _):
        p = os.path.join(s, "input_0.pb")
        data = open(p, "rb").read()
        open(p, "wb").write(data[:len(data) // 2])
    variant("trunc", trunc)

    def huge(s, _):
        t = TensorProto(name="W", data_type=f32, dims=[1 << 24, 1 << 24, 1, 1])
        open(os.path.join(s, "input_1.pb"), "wb").write(t.SerializeToString())
    variant("huge", huge)

    def rawlen(s, _):
        t = TensorProto(name="x", data_type=f32, dims=[2, 3, 5, 5], raw_data=b"\0\0\0\0")
        open(os.path.join(s, "input_0.pb"), "wb").write(t.SerializeToString())
    variant("rawlen", rawlen)
    variant("fewer", lambda s, _: os.remove(os.path.join(s, "input_1.pb")))

    def reshaped(_, d):
        with open(os.path.join(d, "model.onnx"), "wb") as f:
            f.write(model([helper.make_node("Conv", ["x", "W", "B"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])],
                          [helper.make_tensor_value_info("x", f32, [2, 3, 5, 5]),
                           helper.make_tensor_value_info("W", f32, [4, 3, 3, 3])],
                          helper.make_tensor_value_info("y", f32, [2, 4, 25, 1]), [numpy_helper.from_array(b, "B")]))
    variant("reshaped", reshaped)

    def nodata(_, d):
        for s in range(2):
            shutil.rmtree(os.path.join(d, "test_data_set_%d" % s))
    variant("nodata", nodata)

    x = rng.standard_normal((2, 3, 5, 5)).astype(np.float32)
    for name, node, shape in (
            ("sin", helper.make_node("Sin", ["x"], ["y"]), [2, 3, 5, 5]),
            ("storage", helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], storage_order=1),
             [2, 3, 4, 4])):
        d = os.path.join(out, name, "test_data_set_0")
        os.makedirs(d)
        with open(os.path.join(out, name, "model.onnx"), "wb") as f:
            f.write(model([node], [helper.make_tensor_value_info("x", f32, [2, 3, 5, 5])],
                          helper.make_tensor_value_info("y", f32, shape)))
        save(os.path.join(d, "input_0.pb"), x, "x")
        save(os.path.join(d, "output_0.pb"), np.zeros(shape, np.float32), "y")

    def nd_case(name, nodes, xshape, yshape, fn, inits=()):
        """a case of x (xshape) -> y (yshape) with y = fn(x) computed in float64 here"""
        d = os.path.join(out, name, "test_data_set_0")
        os.makedirs(d)
        with open(os.path.join(out, name, "model.onnx"), "wb") as f:
            f.write(model(nodes, [helper.make_tensor_value_info("x", f32, xshape)],
                          helper.make_tensor_value_info("y", f32, yshape), inits))
        xv = rng.standard_normal(xshape).astype(np.float32)
        save(os.path.join(d, "input_0.pb"), xv, "x")
        save(os.path.join(d, "output_0.pb"), fn(xv.astype(np.float64)).astype(np.float32).reshape(yshape), "y")

    relu = helper.make_node("Relu", ["x"], ["y"])
    nd_case("nd_relu", [relu], [2, 3, 4, 5, 2], [2, 3, 4, 5, 2], lambda v: np.maximum(v, 0))
    nd_case("nd_scalar", [relu], [3], [3], lambda v: np.maximum(v, 0))
    bn = [rng.uniform(0.5, 1.5, 3).astype(np.float32) for _ in range(4)]
    bn_names = ["s", "bias", "mean", "var"]
    nd_case("nd_bn", [helper.make_node("BatchNormalization", ["x"] + bn_names, ["y"], epsilon=1e-5)],
            [2, 3, 4, 2, 2], [2, 3, 4, 2, 2],
            lambda v: (v - bn[2][None, :, None, None, None]) / np.sqrt(bn[3][None, :, None, None, None] + 1e-5)
            * bn[0][None, :, None, None, None] + bn[1][None, :, None, None, None],
            [numpy_helper.from_array(t, nm) for t, nm in zip(bn, bn_names)])
    nd_case("nd_conv", [helper.make_node("Conv", ["x", "W"], ["y"], kernel_shape=[1, 1, 1, 1])], [2, 3, 2, 3, 4, 2],
            [2, 2, 2, 3, 4, 2], lambda v: np.zeros((2, 2, 2, 3, 4, 2)),
            [numpy_helper.from_array(np.ones((2, 3, 1, 1, 1, 1), np.float32), "W")])
    wv = rng.standard_normal((4, 1, 2, 3, 2)).astype(np.float32)

    def conv3d(v, w, st, pb, pe, dl, group):
        """ONNX's Conv of a volume, one output at a time"""
        v = np.pad(v, ((0, 0), (0, 0)) + tuple(zip(pb, pe)))
        OC, cg = w.shape[:2]
        outs = [(v.shape[2 + a] - dl[a] * (w.shape[2 + a] - 1) - 1) // st[a] + 1 for a in range(3)]
        y = np.zeros((v.shape[0], OC) + tuple(outs))
        for o in range(OC):
            gi = o // (OC // group)
            for idx in np.ndindex(*outs):
                win = v[:, gi * cg:(gi + 1) * cg, idx[0] * st[0]:idx[0] * st[0] + dl[0] * (w.shape[2] - 1) + 1:dl[0],
                        idx[1] * st[1]:idx[1] * st[1] + dl[1] * (w.shape[3] - 1) + 1:dl[1],
                        idx[2] * st[2]:idx[2] * st[2] + dl[2] * (w.shape[4] - 1) + 1:dl[2]]
                y[(slice(None), o) + idx] = (win * w[o]).sum(axis=(1, 2, 3, 4))
        return y
    nd_case("conv3d", [helper.make_node("Conv", ["x", "W"], ["y"], kernel_shape=[2, 3, 2], strides=[2, 1, 2],
                                        pads=[1, 0, 1, 0, 2, 1], dilations=[1, 2, 1], group=2)], [2, 2, 5, 6, 7],
            [2, 4, 3, 4, 4], lambda v: conv3d(v, wv.astype(np.float64), [2, 1, 2], [1, 0, 1], [0, 2, 1], [1, 2, 1], 2),
            [numpy_helper.from_array(wv, "W")])
    nd_case("nd_rank7", [relu], [1, 2, 1, 2, 1, 2, 1], [1, 2, 1, 2, 1, 2, 1], lambda v: np.maximum(v, 0))
    nd_case("nd_empty", [relu], [2, 0, 3], [2, 0, 3], lambda v: np.maximum(v, 0))

    k = lambda *s: helper.make_node(s[0], list(s[1:-1]), [s[-1]])
    nd_case("unary", [k("Neg", "x", "a"), k("Exp", "a", "b"), k("Abs", "b", "c"), k("Sqrt", "c", "d"),
                      k("Reciprocal", "d", "e"), k("Pow", "e", "p", "y")], [2, 3, 4], [2, 3, 4],
            lambda v: (1 / np.sqrt(np.abs(np.exp(-v)))) ** 2.5, [numpy_helper.from_array(np.float32(2.5), "p")])
    pt = (np.arange(12).reshape(3, 4) % 3 + 1).astype(np.float32)
    nd_case("pow_tensor", [k("Pow", "x", "p", "y")], [2, 3, 4], [2, 3, 4], lambda v: v ** pt,
            [numpy_helper.from_array(pt, "p")])

    cv = rng.standard_normal((3, 1)).astype(np.float32)
    kv = rng.standard_normal(4).astype(np.float32)
    nd_case("bcast", [k("Sub", "x", "c", "s"), helper.make_node("Constant", [], ["k"], value=numpy_helper.from_array(kv)),
                      k("Mul", "s", "k", "m"), k("Div", "m", "x", "y")], [2, 3, 4], [2, 3, 4],
            lambda v: (v - cv) * kv / v, [numpy_helper.from_array(cv, "c")])
    nd_case("bcast_rank", [k("Add", "x", "c", "y")], [2, 3, 4], [2, 3, 4], lambda v: v + 1,
            [numpy_helper.from_array(np.ones((2, 3, 4), np.float32), "c")])
    nd_case("bcast_shape", [k("Add", "x", "c", "y")], [2, 3, 4], [2, 3, 4], lambda v: v,
            [numpy_helper.from_array(np.ones(5, np.float32), "c")])

    i64 = lambda name, v: numpy_helper.from_array(np.array(v, np.int64), name)
    nd_case("movement", [helper.make_node("Split", ["x", "sp"], ["a", "b"], axis=1), k("Unsqueeze", "a", "ax", "u"),
                         k("Squeeze", "u", "ax", "q"), helper.make_node("Transpose", ["b"], ["t"], perm=[0, 2, 1]),
                         helper.make_node("Transpose", ["t"], ["t2"], perm=[0, 2, 1]),
                         helper.make_node("Concat", ["q", "t2"], ["c"], axis=1),
                         k("Slice", "c", "st", "en", "axs", "stp", "y")], [2, 4, 3], [2, 2, 3],
            lambda v: v[:, 1:4:2, :],
            [i64("sp", [1, 3]), i64("ax", [1]), i64("st", [1]), i64("en", [100]), i64("axs", [-2]), i64("stp", [2])])
    nd_case("shape_input", [k("Reshape", "x", "shape", "y")], [2, 3, 4], [2, 4, 3], lambda v: v.reshape(2, 4, 3))
    with open(os.path.join(out, "shape_input", "model.onnx"), "wb") as f:
        f.write(model([k("Reshape", "x", "shape", "y")],
                      [helper.make_tensor_value_info("x", f32, [2, 3, 4]),
                       helper.make_tensor_value_info("shape", TensorProto.INT64, [3])],
                      helper.make_tensor_value_info("y", f32, [2, 4, 3])))
    save(os.path.join(out, "shape_input", "test_data_set_0", "input_1.pb"), np.array([0, 4, 3], np.int64), "shape")
    cos = helper.make_node("ConstantOfShape", ["one"], ["cs"], value=numpy_helper.from_array(np.array([3], np.int64)))
    nd_case("fold", [helper.make_node("Shape", ["x"], ["s"]), k("Slice", "s", "m1", "m3", "z", "m1", "t"),
                     k("Gather", "s", "z0", "g"), k("Unsqueeze", "g", "z", "u"), k("Range", "z0", "one0", "one0", "r"),
                     cos, k("Mod", "seven", "four", "md"), k("Equal", "cs", "md", "eq"), k("Not", "eq", "ne"),
                     helper.make_node("Cast", ["ne"], ["ni"], to=TensorProto.INT64), k("Add", "t", "ni", "t2"),
                     k("Equal", "r", "z", "c0"), k("Where", "c0", "u", "m1", "first"),
                     k("Slice", "t2", "z", "one", "z", "one", "h"), k("Squeeze", "h", "z", "hs"),
                     k("Unsqueeze", "hs", "z", "hu"), k("Slice", "t2", "one", "two", "w"),
                     helper.make_node("Concat", ["first", "hu", "w"], ["shape"], axis=0),
                     k("Reshape", "x", "shape", "y")], [2, 3, 4], [2, 4, 3], lambda v: v.reshape(2, 4, 3),
            [i64("m1", [-1]), i64("m3", [-3]), i64("z", [0]), i64("z0", 0), i64("one0", 1), i64("one", [1]),
             i64("two", [2]), i64("seven", [7]), i64("four", [4])])
    nd_case("slice_down", [k("Slice", "x", "st4", "lo", "ax1", "m2", "y")], [2, 5, 3], [2, 3, 3],
            lambda v: v[:, 4::-2, :], [i64("st4", [4]), i64("lo", [-(1 << 62)]), i64("ax1", [1]), i64("m2", [-2])])
    nd_case("empty_out", [k("Slice", "x", "st9", "end9", "ax1", "y")], [2, 4, 3], [2, 0, 3], lambda v: v[:, 9:9, :],
            [i64("st9", [9]), i64("end9", [9]), i64("ax1", [1])])
    nd_case("empty_into", [k("Slice", "x", "st9", "end9", "ax1", "e"),
                           helper.make_node("Concat", ["e", "x"], ["y"], axis=1)], [2, 4], [2, 4], lambda v: v,
            [i64("st9", [9]), i64("end9", [9]), i64("ax1", [1])])
    nd_case("empty_dead", [k("Slice", "x", "st9", "end9", "ax1", "e"), relu], [2, 4], [2, 4], lambda v: np.maximum(v, 0),
            [i64("st9", [9]), i64("end9", [9]), i64("ax1", [1])])
    nd_case("empty_add", [k("Relu", "x", "r"), k("Add", "x", "r", "y")], [2, 0, 3], [2, 0, 3],
            lambda v: v + np.maximum(v, 0))
    nd_case("batch0", [relu], [0, 3], [0, 3], lambda v: np.maximum(v, 0))
    nd_case("flatten_axis", [helper.make_node("Flatten", ["x"], ["y"], axis=2)], [2, 3, 4], [6, 4],
            lambda v: v.reshape(6, 4))
    nd_case("reduce", [helper.make_node("ReduceSum", ["x", "ax"], ["s"], keepdims=0),
                       helper.make_node("ReduceMean", ["s"], ["y"], axes=[-1])],
            [2, 3, 4, 5], [2, 3, 1], lambda v: v.sum(axis=2).mean(axis=-1, keepdims=True), [i64("ax", [2])])
    lw = rng.standard_normal((4, 5)).astype(np.float32)
    lb = rng.standard_normal(5).astype(np.float32)
    nd_case("linear", [k("MatMul", "x", "lw", "mm"), k("Add", "mm", "lb", "y")], [2, 3, 4], [2, 3, 5],
            lambda v: v @ lw + lb, [numpy_helper.from_array(lw, "lw"), numpy_helper.from_array(lb, "lb")])
    nd_case("move_batch", [helper.make_node("Transpose", ["x"], ["y"], perm=[1, 0, 2])], [2, 3, 4], [3, 2, 4],
            lambda v: v.transpose(1, 0, 2))

    def case(name, nodes, ins, outs, inits=(), opset=13):
        """a case of graph inputs ins and outputs outs (name: array, in order)"""
        d = os.path.join(out, name, "test_data_set_0")
        os.makedirs(d)
        g = helper.make_graph(nodes, "case", [helper.make_tensor_value_info(n, f32, list(a.shape)) for n, a in ins],
                              [helper.make_tensor_value_info(n, f32, list(a.shape)) for n, a in outs], list(inits))
        with open(os.path.join(out, name, "model.onnx"), "wb") as f:
            f.write(helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]).SerializeToString())
        for i, (n, a) in enumerate(ins):
            save(os.path.join(d, "input_%d.pb" % i), a.astype(np.float32), n)
        for i, (n, a) in enumerate(outs):
            save(os.path.join(d, "output_%d.pb" % i), a.astype(np.float32), n)

    rnd = lambda *shape: rng.standard_normal(shape).astype(np.float32)
    xa, za = rnd(2, 3, 4), rnd(2, 3, 4)
    case("inputs_add", [k("Add", "x", "z", "y")], [("x", xa), ("z", za)], [("y", xa.astype(np.float64) + za)])
    xc, wc = rnd(4, 3, 5, 5), rnd(4, 3, 3, 3)
    case("conv_w_batch", [helper.make_node("Conv", ["x", "W"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])],
         [("x", xc), ("W", wc)], [("y", conv(xc.astype(np.float64), wc.astype(np.float64), np.zeros(4), 1))])
    xs = rnd(2, 4, 3)
    case("outputs_split", [helper.make_node("Split", ["x", "sp"], ["a", "b"], axis=1)], [("x", xs)],
         [("a", xs[:, :1]), ("b", xs[:, 1:])], [i64("sp", [1, 3])])
    case("identity_out", [helper.make_node("Identity", ["x"], ["y"])], [("x", xs)], [("y", xs)])
    xq, wq = rnd(2, 3, 10), rnd(4, 3, 3)
    xpad = np.pad(xq.astype(np.float64), ((0, 0), (0, 0), (1, 2)))
    yq = np.stack([np.einsum("ncl,ocl->no", xpad[:, :, 2 * t:2 * t + 3], wq.astype(np.float64)) for t in range(6)], 2)
    case("conv1d", [helper.make_node("Conv", ["x", "W"], ["y"], kernel_shape=[3], strides=[2], pads=[1, 2])],
         [("x", xq)], [("y", yq)], [numpy_helper.from_array(wq, "W")])
    case("opset6", [helper.make_node("Relu", ["x"], ["y"])], [("x", xs)], [("y", np.maximum(xs, 0))], opset=6)
    case("opset5", [helper.make_node("Relu", ["x"], ["y"])], [("x", xs)], [("y", np.maximum(xs, 0))], opset=5)
    bn_inits = [numpy_helper.from_array(t, nm) for t, nm in zip(bn, bn_names)]

    def bn_train(v, mom, eps):
        """ONNX's training form of x (N, C, L) (its reference, onnx's batchnorm.py): Y by the
        batch's mean and population variance, the running ones momentum * before + (1 -
        momentum) * the batch's"""
        v = v.astype(np.float64)
        mu, var = v.mean(axis=(0, 2)), v.var(axis=(0, 2))
        y = (v - mu[None, :, None]) / np.sqrt(var[None, :, None] + eps) * bn[0][None, :, None] + bn[1][None, :, None]
        return [("y", y), ("rm", bn[2] * mom + mu * (1 - mom)), ("rv", bn[3] * mom + var * (1 - mom))]
    bn_out = ["y", "rm", "rv"]
    case("bn_training", [helper.make_node("BatchNormalization", ["x"] + bn_names, bn_out, training_mode=1,
                                          momentum=0.8, epsilon=0.01)],
         [("x", xs[:, :3])], bn_train(xs[:, :3], 0.8, 0.01), bn_inits, 15)
    case("bn_saved", [helper.make_node("BatchNormalization", ["x"] + bn_names, bn_out + ["sm", "sv"])],
         [("x", xs[:, :3])], bn_train(xs[:, :3], 0.9, 1e-5) + [("sm", bn[2]), ("sv", bn[3])], bn_inits, 9)
    case("bn_dropout", [helper.make_node("BatchNormalization", ["x"] + bn_names, bn_out, training_mode=1),
                        helper.make_node("Dropout", ["y"], ["z"])],
         [("x", xs[:, :3])], [("z", xs[:, :3])], bn_inits, 15)
    case("bn_mixed", [helper.make_node("BatchNormalization", ["x"] + bn_names, bn_out, training_mode=1),
                      helper.make_node("BatchNormalization", ["y"] + bn_names, ["z"])],
         [("x", xs[:, :3])], [("z", xs[:, :3])], bn_inits, 15)
    case("gap1d", [helper.make_node("GlobalAveragePool", ["x"], ["y"])], [("x", xq)],
         [("y", xq.astype(np.float64).mean(axis=2, keepdims=True))], opset=1)
    xm = rnd(2, 3, 4, 5)
    case("gmp", [helper.make_node("GlobalMaxPool", ["x"], ["y"])], [("x", xm)],
         [("y", xm.max(axis=(2, 3), keepdims=True))])
    case("gmp1d", [helper.make_node("GlobalMaxPool", ["x"], ["y"])], [("x", xq)], [("y", xq.max(axis=2, keepdims=True))])
    xg, bg, cg = rnd(3, 5), rnd(5, 4), rnd(3, 4)
    ab = xg.astype(np.float64) @ bg
    gemm = lambda c, **kw: [helper.make_node("Gemm", ["x", "B", "C"], ["y"], **kw)]
    case("gemm_c", gemm("C", alpha=0.5), [("x", xg), ("C", cg)], [("y", 0.5 * ab + cg)], [numpy_helper.from_array(bg, "B")])
    case("gemm_c_row", gemm("C", beta=0.25), [("x", xg)], [("y", ab + 0.25 * cg[:1])],
         [numpy_helper.from_array(bg, "B"), numpy_helper.from_array(cg[:1], "C")])
    case("gemm_c_scalar", gemm("C"), [("x", xg)], [("y", ab + cg[0, 0])],
         [numpy_helper.from_array(bg, "B"), numpy_helper.from_array(cg[0, 0].reshape(()), "C")])
    case("gemm_c_scalar_beta", gemm("C", beta=2.0), [("x", xg)], [("y", ab + 2 * cg[0, 0])],
         [numpy_helper.from_array(bg, "B"), numpy_helper.from_array(cg[0, 0].reshape(()), "C")])
    bn4 = lambda v: ((v - bn[2][None, :, None]) / np.sqrt(bn[3][None, :, None] + 1e-5) * bn[0][None, :, None] +
                     bn[1][None, :, None])
    case("bn_opset6", [helper.make_node("BatchNormalization", ["x"] + bn_names, ["y"], epsilon=1e-5, is_test=1)],
         [("x", xs[:, :3])], [("y", bn4(xs[:, :3].astype(np.float64)))],
         [numpy_helper.from_array(t, nm) for t, nm in zip(bn, bn_names)], 6)
    case("bn_opset6_train", [helper.make_node("BatchNormalization", ["x"] + bn_names, bn_out)],
         [("x", xs[:, :3])], bn_train(xs[:, :3], 0.9, 1e-5), bn_inits, 6)
    def pool3d(x, k, st, pb, pe, dl, ceil, cip, is_max):
        """ONNX's and PyTorch's 3-D pool of x (N, C, D, H, W), one window at a time (ops.h's rules)"""
        sp, outs = x.shape[2:], []
        for a in range(3):
            span = sp[a] + pb[a] + pe[a] - dl[a] * (k[a] - 1) - 1
            o = (-(-span // st[a]) if ceil else span // st[a]) + 1
            outs.append(o - 1 if ceil and (o - 1) * st[a] >= sp[a] + pb[a] else o)
        y = np.zeros(x.shape[:2] + tuple(outs))
        for idx in np.ndindex(*outs):
            taps = [[i * st[a] - pb[a] + t * dl[a] for t in range(k[a])] for a, i in enumerate(idx)]
            inb = [[p for p in tp if 0 <= p < sp[a]] for a, tp in enumerate(taps)]
            win = x[:, :, inb[0]][:, :, :, inb[1]][:, :, :, :, inb[2]]
            cnt = np.prod([len([p for p in tp if -pb[a] <= p < sp[a] + pe[a]]) if cip else len(inb[a])
                           for a, tp in enumerate(taps)])
            y[(slice(None), slice(None)) + idx] = win.max(axis=(2, 3, 4)) if is_max else win.sum(axis=(2, 3, 4)) / cnt
        return y
    cb = rnd(4)
    case("bcast_opset6", [helper.make_node("Add", ["x", "c"], ["y"], broadcast=1)], [("x", xa)],
         [("y", xa.astype(np.float64) + cb)], [numpy_helper.from_array(cb, "c")], 6)
    case("bcast_axis6", [helper.make_node("Add", ["x", "c"], ["y"], broadcast=1, axis=1)], [("x", xa)],
         [("y", xa)], [numpy_helper.from_array(rnd(3), "c")], 6)
    xp = rnd(2, 3, 4, 5)
    case("pad_value", [helper.make_node("Pad", ["x", "pads", "pv"], ["y"])], [("x", xp)],
         [("y", np.pad(xp, ((0, 0), (1, 0), (0, 2), (3, 1)), constant_values=1.5))],
         [numpy_helper.from_array(np.array([0, 1, 0, 3, 0, 0, 2, 1], np.int64), "pads"),
          numpy_helper.from_array(np.array(1.5, np.float32), "pv")])
    case("pad_attr", [helper.make_node("Pad", ["x"], ["y"], pads=[0, 0, 2, 1, 0, 0, 0, 3])], [("x", xp)],
         [("y", np.pad(xp, ((0, 0), (0, 0), (2, 0), (1, 3))))], opset=6)
    case("pad_edge", [helper.make_node("Pad", ["x"], ["y"], pads=[0, 0, 2, 1, 0, 0, 0, 3], mode="edge")], [("x", xp)],
         [("y", np.pad(xp, ((0, 0), (0, 0), (2, 0), (1, 3)), mode="edge"))], opset=6)
    case("pad_reflect", [helper.make_node("Pad", ["x", "pp"], ["y"], mode="reflect")], [("x", xp)],
         [("y", np.pad(xp, ((0, 0), (0, 0), (2, 1), (4, 3)), mode="reflect"))], [i64("pp", [0, 0, 2, 4, 0, 0, 1, 3])])
    case("pad_reflect_far", [helper.make_node("Pad", ["x", "pp"], ["y"], mode="reflect")], [("x", xp[:, :, 0])],
         [("y", np.zeros((2, 3, 10), np.float32))], [i64("pp", [0, 0, 5, 0, 0, 0])])
    xg = rnd(2, 5, 3)
    case("gather_list", [helper.make_node("Gather", ["x", "gi"], ["y"], axis=1)], [("x", xg)],
         [("y", np.take(xg, [[4, 0], [1, -1]], axis=1))], [i64("gi", [[4, 0], [1, -1]])])
    xa0, za0 = rnd(2, 3), rnd(2, 3)
    case("unit_axis0", [helper.make_node("Concat", ["x", "z"], ["c"], axis=0), k("ReduceSum", "c", "r0", "s"),
                        k("Unsqueeze", "s", "u0", "y")],
         [("x", xa0), ("z", za0)], [("y", np.concatenate([xa0, za0]).astype(np.float64).sum(axis=0)[None, None])],
         [i64("r0", [0]), i64("u0", [0])])
    case("unit_scalar", [k("Neg", "x", "y")], [("x", np.array(1.5, np.float32))], [("y", np.array(-1.5))])
    xpw, zpw = np.abs(rnd(2, 3, 4)) + 0.5, rnd(2, 3, 4)
    case("pow_inputs", [k("Pow", "x", "z", "y")], [("x", xpw), ("z", zpw)],
         [("y", xpw.astype(np.float64) ** zpw.astype(np.float64))])
    case("pow_int", [k("Pow", "x", "q", "y")], [("x", xpw)], [("y", xpw.astype(np.float64) ** np.arange(1, 5))],
         [i64("q", [1, 2, 3, 4])])
    xg4, bg, cg = rnd(4, 3), rnd(5, 4), rnd(1, 5)
    case("unit_gemm", [helper.make_node("Gemm", ["x", "B", "C"], ["y"], transA=1, transB=1, alpha=0.5, beta=2.0)],
         [("x", xg4), ("B", bg), ("C", cg)],
         [("y", 0.5 * xg4.T.astype(np.float64) @ bg.T.astype(np.float64) + 2.0 * cg)])
    xq = rnd(2, 3, 4, 4)
    case("unit_pool", [helper.make_node("Concat", ["x", "x"], ["c"], axis=0),
                       helper.make_node("MaxPool", ["c"], ["y"], kernel_shape=[2, 2])], [("x", xq)],
         [("y", np.zeros((4, 3, 3, 3), np.float32))])
    case("where_arity", [helper.make_node("Where", ["wc", "wv"], ["w"]), k("Add", "x", "w", "y")], [("x", xs)],
         [("y", xs)], [numpy_helper.from_array(np.ones(3, np.float32), "wc"),
                       numpy_helper.from_array(np.ones(3, np.float32), "wv")])
    xv = rnd(2, 2, 5, 6, 7)
    case("pool3d_max", [helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 3, 2], strides=[2, 1, 2],
                                         pads=[1, 0, 1, 0, 1, 1], dilations=[1, 2, 1], ceil_mode=1)],
         [("x", xv)], [("y", pool3d(xv.astype(np.float64), [2, 3, 2], [2, 1, 2], [1, 0, 1], [0, 1, 1], [1, 2, 1], 1, 0, 1))])
    for cip in (0, 1):
        case("pool3d_avg%s" % ("_cip" if cip else ""),
             [helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[3, 2, 2], strides=[2, 2, 1],
                               pads=[1, 1, 0, 1, 0, 1], ceil_mode=1, count_include_pad=cip)],
             [("x", xv)], [("y", pool3d(xv.astype(np.float64), [3, 2, 2], [2, 2, 1], [1, 1, 0], [1, 0, 1], [1, 1, 1], 1,
                                        cip, 0))])
    lw, lb = rnd(4, 5), rnd(4, 5)
    x64 = xm.astype(np.float64)
    mu = x64.mean(axis=(2, 3), keepdims=True)
    inv = 1 / np.sqrt(((x64 - mu) ** 2).mean(axis=(2, 3), keepdims=True) + 0.25)
    case("ln_stats", [helper.make_node("LayerNormalization", ["x", "lw", "lb"], ["y", "mean", "inv"], axis=2,
                                       epsilon=0.25), k("Neg", "inv", "z")], [("x", xm)],
         [("y", (x64 - mu) * inv * lw + lb), ("mean", mu), ("z", -inv)],
         [numpy_helper.from_array(lw, "lw"), numpy_helper.from_array(lb, "lb")], 17)

    d = os.path.join(out, "bigbatch", "test_data_set_0")
    os.makedirs(d)
    with open(os.path.join(out, "bigbatch", "model.onnx"), "wb") as f:
        f.write(model([helper.make_node("Conv", ["x", "W"], ["y"], kernel_shape=[1, 1])],
                      [helper.make_tensor_value_info("x", f32, [65536, 1, 4, 4])],
                      helper.make_tensor_value_info("y", f32, [65536, 512, 4, 4]),
                      [numpy_helper.from_array(np.ones((512, 1, 1, 1), np.float32), "W")]))
    save(os.path.join(d, "input_0.pb"), np.zeros((65536, 1, 4, 4), np.float32), "x")
    save(os.path.join(d, "output_0.pb"), np.zeros(1, np.float32), "y")


main()
