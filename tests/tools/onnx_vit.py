"""tests/tools/onnx_vit.py - issue 44's ViT and ConvNeXt in their torchvision classes, small,
for tests/integration/onnx_vit.sh.

nets(): the networks of onnx_families.py's set "vit" (its --export and --compare do the
rest: float64 torch numbers from the file's weights, logits, every parameter gradient and
plain SGD losses against pacer's tools/onnx_grads):
  ViT       torchvision.models.vision_transformer.VisionTransformer(image_size 32, patch 4,
            2 layers, 2 heads, hidden 32, mlp 64, 10 classes, dropout 0): the class token
            expanded to the batch (Expand) and concatenated, the positional embedding
            broadcast-added, nn.MultiheadAttention's training export ((L, N, E) and
            (N * heads, L, d) views of the batch, its fused in_proj weight through a
            Transpose, the out-projection a Gemm of (L * N, E)), x[:, 0];
  ConvNeXt  torchvision.models.convnext.ConvNeXt with CNBlockConfig(16, 32, 1) and
            CNBlockConfig(32, None, 1), stochastic depth 0 (the client's
            ai.pacer:StochasticDepth), 10 classes: LayerNorm after a permute, Linear over the
            last axis (a MatMul by a Transpose of its weight), the layer scale, LayerNorm2d.
Usage: /usr/bin/python3 tests/tools/onnx_vit.py --attn-dropout P X.bin OUTDIR
  The ViT above with attention_dropout P, exported as the Python client exports it, into
  OUTDIR/vit_drop.onnx, and torch's evaluation logits of it on X.bin (8 images) into
  OUTDIR/vit_drop.eval.bin: a Dropout on the attention weights imports, and is the
  identity at evaluation.
Usage: /usr/bin/python3 tests/tools/onnx_vit.py --data OUTDIR
  data.npz: N_DATA images (uint8, (N, 3, 32, 32): layout nchw, labels i % 10), the test
  split the same images (adamw_torch.py's way: with 2 ranks of N_DATA / 2 every step is the
  whole set, and each epoch's test_loss is the loss after that step); x_test.bin (float32,
  the images / 255) and labels.bin for onnx_zoo_families.py's --load and onnxruntime.
Usage: /usr/bin/python3 tests/tools/onnx_vit.py --adamw NAME OUTDIR METRICS.jsonl TRAINED.onnx
    STEPS LR WEIGHT_DECAY BETA1 BETA2 LABEL_SMOOTHING
  adamw_torch.py's check of pacer's AdamW (torch.optim.AdamW with the same groups: no
  decay on biases and norms) for network NAME from OUTDIR/NAME.onnx's weights; the
  elements whose gradient is 0 in exact arithmetic (zero_gradient) held to its bound only.
Usage: /usr/bin/python3 tests/tools/onnx_vit.py --load NAME TRAINED.onnx OUTDIR PACER_LOGITS.bin
  onnx_zoo_families.py's check of the trained weights in the torch module
  (load_state_dict(strict=True), its evaluation logits against pacer's).
Usage: /usr/bin/python3 tests/tools/onnx_vit.py --big OUTDIR [NAME...]
  vit_b_16 and convnext_tiny (or the NAMEs: swin_t too) at 224x224 (get_model(name,
  weights=None, num_classes=10)),
  through the client's export, into OUTDIR/NAME.onnx.
Usage: /usr/bin/python3 tests/tools/onnx_vit.py --graphs OUTDIR
  Small graphs by hand (onnx.helper, opset 13) for the importer's refusals of what views of
  the batch axis, Expand and a transposed weight cannot take (onnx_vit.sh checks each
  message), and mha.onnx, valid: the views nn.MultiheadAttention's export makes, by hand
  (the fuzzer's seed fuzz/corpus/onnx/vit-views.onnx is a copy). Each refused graph
  declares an output (N, classes), as the importer wants before it reads the nodes:
    expand_first   Expand of x (N, 4) to the constant (2, 4): the first axis not the batch;
    expand_rank    Expand of x (N, 4) to (N, 1, 4): a new leading axis;
    view_reduce    ReduceSum of x (N, 3, 4) transposed to (3, N, 4) over axis 1, the batch's;
    view_reshape   x (N, 3, 4) transposed to (3, N, 4), reshaped to (N * 4, 3);
    view_softmax   Softmax of x (N, 4) transposed to (4, N) along its last axis, the batch;
    view_slice     Slice of the batch axis of x (N, 3, 4) transposed to (3, N, 4);
    view_output    the graph's output x (N, 3, 4) transposed to (3, N, 4);
    weight_add     Add of x (N, 4, 4) and a Transpose of a (4, 4) initializer;
    weight_perm    Transpose perm (0, 1) of a (4, 4) initializer;
    batch_add      the batch size plus 1 in a Reshape's shape;
    view_gather    Gather along axis 1, the batch, of x (N, 3, 4) transposed to (3, N, 4);
    view_gather_index  Gather of index 5 along axis 0 (of 3) of that view;
    view_lead      Add of x (N, 4, 6) reshaped to (N * 2, 2, 6) (Swin's lead value) and x
                   transposed to (4, N, 6) (a view);
    qkv_view       valid: Swin's q, k = qkv[0], qkv[1] of one window: x (N, 4, 6) as
                   (N, 4, 3, 2) permuted (2, 0, 1, 3), then q @ k^T (the fuzzer's seed
                   fuzz/corpus/onnx/swin-qkv-view.onnx is a copy); qkv_view_x.bin
                   and qkv_view_y.bin as concat_param's;
    concat_view5   valid: Concat of x (N, 3, 4) transposed to (N, 4, 3) four times and,
                   fifth, of x as (3, N, 4) then (N, 4, 3) (a view, read plain), summed
                   over the last axis; concat_view5_x.bin and _y.bin as above;
    concat_param   valid: Concat of a (1, 1, 4) parameter and x (N, 3, 4) along axis 1 (the
                   class token where the batch was fixed to 1), the mean over the tokens;
                   concat_param_x.bin (2 samples) and its logits concat_param_y.bin, by numpy;
    concat_const   the same with a (2, 1, 4) constant.
Exits 77 when torch, torchvision or onnx cannot be imported.
"""
import os
import sys

N_DATA = 32

try:
    import torch
    import torchvision
    from torchvision.models.convnext import CNBlockConfig, ConvNeXt
    from torchvision.models.vision_transformer import VisionTransformer
except Exception as e:  # pragma: no cover - depends on the machine
    print("onnx_families: torch/torchvision not importable: %s" % e)
    sys.exit(77)


def vit(attention_dropout=0.0):
    net = VisionTransformer(image_size=32, patch_size=4, num_layers=2, num_heads=2, hidden_dim=32, mlp_dim=64,
                            num_classes=10, dropout=0.0, attention_dropout=attention_dropout)
    # torchvision zeroes the head's weight: every other gradient of the first step would be 0
    torch.nn.init.normal_(net.heads.head.weight, std=0.2)
    return net


def convnext():
    return ConvNeXt(block_setting=[CNBlockConfig(16, 32, 1), CNBlockConfig(32, None, 1)], stochastic_depth_prob=0.0,
                    num_classes=10)


def nets():
    return {"ViT": vit, "ConvNeXt": convnext}


def zero_gradient(name):
    """The elements of name's parameters whose gradient is 0 in exact arithmetic, for
    adamw_torch.py's check (AdamW moves them by the sign of a rounding difference): the
    key projection's bias in nn.MultiheadAttention's in_proj_bias (rows E .. 2E) adds q . b
    to every score of a query, which the softmax over the keys takes away."""
    import numpy as np
    if name != "ViT":
        return {}
    E = 32
    mask = np.zeros(3 * E, bool)
    mask[E:2 * E] = True
    return {"encoder.layers.encoder_layer_%d.self_attention.in_proj_bias" % i: mask for i in range(2)}


def client_export():
    """The Python client's export_module (clients/python/pacer), from this checkout."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "clients", "python"))
    from pacer.client import export_module
    return export_module


def data(out):
    import numpy as np
    rng = np.random.RandomState(44)
    x = rng.randint(0, 256, (N_DATA, 3, 32, 32)).astype(np.uint8)
    y = (np.arange(N_DATA) % 10).astype(np.uint8)
    np.savez(out + "/data.npz", x_train=x, y_train=y, x_test=x, y_test=y)
    (x.astype(np.float32) / np.float32(255)).astype("<f4").tofile(out + "/x_test.bin")
    y.tofile(out + "/labels.bin")
    print("onnx_vit: data.npz (%d images, the test split the same), x_test.bin, labels.bin" % N_DATA)


def attn_dropout(p, xbin, out):
    import numpy as np
    torch.manual_seed(1)
    net = vit(p)
    with open(out + "/vit_drop.onnx", "wb") as f:
        f.write(client_export()(net, torch.zeros(1, 3, 32, 32)))
    net.eval()
    x = torch.from_numpy(np.fromfile(xbin, dtype="<f4").reshape(-1, 3, 32, 32))
    with torch.no_grad():
        net(x).numpy().astype("<f4").tofile(out + "/vit_drop.eval.bin")
    print("onnx_vit: vit_drop.onnx (attention dropout %g) and torch's evaluation logits" % p)


def graphs(out):
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    def model(nodes, xshape, yshape, inits=()):
        g = helper.make_graph(nodes, "vit44", [helper.make_tensor_value_info("input", TensorProto.FLOAT, xshape)],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, yshape)], list(inits))
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])

    ints = lambda name, v: numpy_helper.from_array(np.array(v, np.int64), name)
    w44 = numpy_helper.from_array(np.eye(4, dtype=np.float32), "w")
    node = helper.make_node
    tr = lambda perm, out="t": node("Transpose", ["input"], [out], perm=perm)
    # the batch size times k, as torch's shape arithmetic writes it: Shape, Gather, Mul, Unsqueeze
    batch_k = lambda k, op="Mul": [node("Shape", ["input"], ["s"]), node("Gather", ["s", "zero"], ["n"], axis=0),
                                   node(op, ["n", "k"], ["nk"]), node("Unsqueeze", ["nk", "axes0"], ["nk1"]),
                                   node("Concat", ["nk1", "rest"], ["shape"], axis=0)]
    shape_inits = lambda k, rest: [ints("zero", 0), ints("k", k), ints("axes0", [0]), ints("rest", rest)]
    # nn.MultiheadAttention's views by hand: x (N, 6, 4) as (6, N, 4), heads of 2 as
    # (6, N * 2, 2) -> (N * 2, 6, 2), scores (N * 2, 6, 6), a softmax, back through
    # (6, N * 2, 2) to (6 * N, 4), a Gemm, (6, N, 4) and (N, 6, 4), then the mean of axis 1
    mha = batch_k(2) + [
        node("Concat", ["six", "nk1", "two"], ["heads"], axis=0), tr([1, 0, 2], "l"),
        node("Reshape", ["l", "heads"], ["lh"]), node("Transpose", ["lh"], ["q"], perm=[1, 0, 2]),
        node("Transpose", ["lh"], ["k"], perm=[1, 2, 0]), node("MatMul", ["q", "k"], ["sc"]),
        node("Softmax", ["sc"], ["a"], axis=-1), node("MatMul", ["a", "q"], ["o"]),
        node("Transpose", ["o"], ["ot"], perm=[1, 0, 2]), node("Mul", ["n", "six0"], ["ln"]),
        node("Unsqueeze", ["ln", "axes0"], ["ln1"]), node("Concat", ["ln1", "four"], ["flat"], axis=0),
        node("Reshape", ["ot", "flat"], ["of"]), node("Gemm", ["of", "w", "b"], ["g"], transB=1),
        node("Reshape", ["g", "back"], ["gb"]), node("Transpose", ["gb"], ["gt"], perm=[1, 0, 2]),
        node("ReduceMean", ["gt"], ["logits"], axes=[1], keepdims=0)]
    mha_inits = shape_inits(2, []) + [ints("six", [6]), ints("two", [2]), ints("six0", 6), ints("four", [4]),
                                      ints("back", [6, -1, 4]), w44,
                                      numpy_helper.from_array(np.zeros(4, np.float32), "b")]
    files = {
        "mha": model(mha, ["N", 6, 4], ["N", 4], mha_inits),
        "expand_first": model([node("Expand", ["input", "to"], ["logits"])], ["N", 4], [2, 4], [ints("to", [2, 4])]),
        "expand_rank": model(batch_k(1) + [node("Expand", ["input", "shape"], ["logits"])], ["N", 4], ["N", 4],
                             shape_inits(1, [1, 4])),
        "view_reduce": model([tr([1, 0, 2]), node("ReduceSum", ["t", "ax"], ["logits"])], ["N", 3, 4], ["N", 3],
                             [ints("ax", [1])]),
        "view_reshape": model([tr([1, 0, 2])] + batch_k(4) + [node("Reshape", ["t", "shape"], ["logits"])],
                              ["N", 3, 4], ["N", 12], shape_inits(4, [3])),
        "view_softmax": model([tr([1, 0]), node("Softmax", ["t"], ["logits"], axis=-1)], ["N", 4], ["N", 4]),
        "view_slice": model([tr([1, 0, 2]), node("Slice", ["t", "st", "en", "ax"], ["logits"])], ["N", 3, 4],
                            ["N", 12], [ints("st", [0]), ints("en", [1]), ints("ax", [1])]),
        "view_output": model([tr([1, 0, 2], "logits")], ["N", 3, 4], ["N", 12]),
        "weight_add": model([node("Transpose", ["w"], ["wt"], perm=[1, 0]), node("Add", ["input", "wt"], ["logits"])],
                            ["N", 4, 4], ["N", 16], [w44]),
        "weight_perm": model([node("Transpose", ["w"], ["wt"], perm=[0, 1]), node("MatMul", ["input", "wt"], ["logits"])],
                             ["N", 4], ["N", 4], [w44]),
        "batch_add": model(batch_k(1, "Add") + [node("Reshape", ["input", "shape"], ["logits"])], ["N", 4], ["N", 4],
                           shape_inits(1, [4])),
        "view_gather": model([tr([1, 0, 2]), node("Gather", ["t", "one"], ["logits"], axis=1)], ["N", 3, 4],
                             ["N", 12], [ints("one", 1)]),
        "view_gather_index": model([tr([1, 0, 2]), node("Gather", ["t", "five"], ["logits"], axis=0)], ["N", 3, 4],
                                   ["N", 12], [ints("five", 5)]),
        "view_lead": model([node("Reshape", ["input", "lead"], ["w"]), tr([1, 0, 2]),
                            node("Add", ["w", "t"], ["logits"])], ["N", 4, 6], ["N", 24], [ints("lead", [-1, 2, 6])]),
        "qkv_view": model([node("Reshape", ["input", "qkv_shape"], ["qkv"]),
                           node("Transpose", ["qkv"], ["p"], perm=[2, 0, 1, 3]),
                           node("Gather", ["p", "zero"], ["q"], axis=0), node("Gather", ["p", "one"], ["k"], axis=0),
                           node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]), node("MatMul", ["q", "kt"], ["sc"]),
                           node("ReduceSum", ["sc", "ax"], ["logits"], keepdims=0)], ["N", 4, 6], ["N", 4],
                          [ints("qkv_shape", [0, 4, 3, 2]), ints("zero", 0), ints("one", 1), ints("ax", [2])]),
        "concat_view5": model([tr([1, 0, 2], "u"), node("Transpose", ["u"], ["v"], perm=[1, 2, 0]),
                               tr([0, 2, 1], "p"), node("Concat", ["p", "p", "p", "p", "v"], ["j"], axis=1),
                               node("ReduceSum", ["j", "ax"], ["logits"], keepdims=0)], ["N", 3, 4], ["N", 20],
                              [ints("ax", [2])]),
    }
    # torch.cat([cls, x], dim=1) of a (1, 1, 4) parameter where the batch was fixed to 1,
    # then the mean over the tokens: (cls + the sum of x's 3 tokens) / 4 for every sample
    rng = np.random.RandomState(5)
    cls = rng.randn(1, 1, 4).astype(np.float32)
    x = rng.randn(2, 3, 4).astype(np.float32)
    x.astype("<f4").tofile(out + "/concat_param_x.bin")
    ((cls[:, 0] + x.sum(1)) / 4).astype("<f4").tofile(out + "/concat_param_y.bin")
    # qkv_view's sample and numpy's logits: q @ k^T summed over the keys
    x = rng.randn(2, 4, 6).astype(np.float32)
    x.astype("<f4").tofile(out + "/qkv_view_x.bin")
    p = x.reshape(2, 4, 3, 2).transpose(2, 0, 1, 3)
    (p[0] @ p[1].transpose(0, 2, 1)).sum(2).astype("<f4").tofile(out + "/qkv_view_y.bin")
    # concat_view5's: the fifth input a view read plain, the same as the other four
    x = rng.randn(2, 3, 4).astype(np.float32)
    x.astype("<f4").tofile(out + "/concat_view5_x.bin")
    np.tile(x.sum(1), (1, 5)).astype("<f4").tofile(out + "/concat_view5_y.bin")
    cat = lambda c: [node("Concat", [c, "input"], ["j"], axis=1), node("ReduceMean", ["j"], ["logits"], axes=[1],
                                                                      keepdims=0)]
    files["concat_param"] = model(cat("cls"), ["N", 3, 4], ["N", 4], [numpy_helper.from_array(cls, "cls")])
    files["concat_const"] = model(cat("c2"), ["N", 3, 4], ["N", 4],
                                  [numpy_helper.from_array(np.zeros((2, 1, 4), np.float32), "c2")])
    for name, m in files.items():
        onnx.save(m, "%s/%s.onnx" % (out, name))
    print("onnx_vit: %d graphs written" % len(files))


def main():
    a = sys.argv[1:]
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    if len(a) == 4 and a[0] == "--attn-dropout":
        attn_dropout(float(a[1]), a[2], a[3])
        return 0
    if len(a) == 2 and a[0] == "--graphs":
        graphs(a[1])
        return 0
    if len(a) == 2 and a[0] == "--data":
        data(a[1])
        return 0
    if len(a) == 11 and a[0] == "--adamw":
        import adamw_torch
        ok = adamw_torch.check(a[2], a[3], a[4], int(a[5]), float(a[6]), float(a[7]), float(a[8]), float(a[9]),
                               float(a[10]), make=nets()[a[1]], path="%s/%s.onnx" % (a[2], a[1]),
                               exempt=zero_gradient(a[1]))
        print("onnx_vit: %s: AdamW %s" % (a[1], "as torch's" if ok else "DIFFERENT from torch's"))
        return 0 if ok else 1
    if len(a) == 5 and a[0] == "--load":
        import onnx_zoo_families as zoo
        zoo.model = lambda name: nets()[name]()  # its check, on this file's networks
        zoo.N_TEST = N_DATA
        return zoo.load(a[1], a[2], a[3], a[4])
    if len(sys.argv) >= 3 and sys.argv[1] == "--big":
        for name in sys.argv[3:] or ("vit_b_16", "convnext_tiny"):
            net = torchvision.models.get_model(name, weights=None, num_classes=10)
            with open(os.path.join(sys.argv[2], name + ".onnx"), "wb") as f:
                f.write(client_export()(net, torch.zeros(1, 3, 224, 224)))
            print("%s: exported" % name)
        return 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
