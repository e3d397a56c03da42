"""tests/tools/onnx_eval_form.py - networks exported in inference form, the way most people
export (model.eval(), then torch.onnx.export with its defaults: constant folding on, no
training mode; the batch axis dynamic), for tests/integration/onnx_eval_form.sh (through
onnx_families.py's set "evalform", which exports them so and computes torch's numbers;
this file defines them and maps the folded file's initializers back to the module's
parameters).

nets(): the set "evalform":
  TimmAttn   a patch embedding (Conv 16x16 stride 16: 4 tokens of 16 channels), timm's
             attention as timm writes it (onnx_batch_axis.py's TimmAttention: dim 16, 2
             heads; qkv reshaped to (B, N, 3, heads, d), permuted (2, 0, 3, 1, 4),
             unbound), a residual Add, a Linear head on the flattened tokens; opset 13.
  EinsumAttn TimmAttn with the attention written as torchvision's MaxViT writes it: q, k, v
             of (B, G, H, N, d) (2 groups of 2 tokens, 2 heads: a Reshape and a Transpose
             of the batch-first projection, chunked), q k^T and A v as torch.einsum
             ("B G H I D, B G H J D -> B G H I J", "B G H I J, B G H J D -> B G H I D");
  ViT        torchvision's VisionTransformer (image 32, patch 8, 1 layer, 2 heads, hidden 16,
             mlp 32, dropout 0), opset 13: the class token Expanded to the batch, the
             folded shapes of nn.MultiheadAttention's inference export;
  ViT17      the same at opset 17 (nn.LayerNorm as LayerNormalization);
  Swin       torchvision's SwinTransformer (patch 4, embed 16, depths [2, 1], heads [2, 2],
             window 4), opset 13: the second block's shifted windows (their mask computed
             in the graph, which pacer folds), PatchMerging, the relative position bias
             folded by torch into one initializer per block (as_exported).
OPSET: the opset each is exported at.

as_exported(net): the module as the file parametrises it (a Swin attention's relative
position bias folded from its table into a weight of its own: FoldedBias).

by_initializer(res, net, path): torch's numbers keyed by the module's parameter names
(onnx_families.py's steps()) renamed to the file's weights (file_weights: initializers and
Identity aliases of them): a parameter under its own name, else the one whose values the
weight holds, as they are or transposed (constant folding renames a Linear's weight it
transposed for MatMul "onnx::MatMul_123"; its gradient is transposed with it). Exits 1
naming a weight no parameter explains or a parameter without a weight.

Usage: /usr/bin/python3 tests/tools/onnx_eval_form.py --graphs OUTDIR
  Einsum graphs by hand over x (N, 4, 6), each then Flatten and a Gemm to (N, 10):
  einsum_bmm ("b i d, b j d -> b i j" of x and x: a Transpose and a MatMul) and einsum_perm
  ("bij->bji": a Transpose) import; einsum_sum ("bij->bi"), einsum_diag ("bii->bi"),
  einsum_ellipsis ("...ij,...kj->...ik"), einsum_implicit ("bij,bkj", no "->") and
  einsum_inputs (two terms, one input) are refused, each message checked by the test.
  NAME_x.bin (2 samples) and numpy's logits of them NAME_y.bin for the two that import.
Usage: /usr/bin/python3 tests/tools/onnx_eval_form.py --zoo OUTDIR OPSET N [NAME...]
  torchvision's zoo (ZOO, or the NAMEs; get_model(NAME, weights=None, num_classes=10),
  googlenet and inception_v3 without their auxiliary classifiers) in inference form at
  OPSET, each at the smallest input it takes (224 for vit_b_16 and swin_t): OUTDIR/NAME.onnx,
  OUTDIR/x_NAME.bin (N images, float32) and OUTDIR/NAME.eval.npz (the module's evaluation
  logits of them, float64, and torch's own float32 error of them), for bench/onnx_eval_zoo.sh. Batch norm is folded into the
  convolutions by torch, so the file trains a network without it: only the evaluation
  logits are the module's.
Usage: /usr/bin/python3 tests/tools/onnx_eval_form.py --zoo-check NAME.eval.npz PACERDIR
  tools/onnx_grads' evaluation logits within ZOO_TOL of the module's (or twice torch's own
  float32 error), its first SGD loss finite, the others printed; exit 1 naming what is not.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from onnx_batch_axis import TimmAttention  # noqa: E402  (exits 77 when torch/onnx are missing)
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

OPSET = {"TimmAttn": 13, "EinsumAttn": 13, "ViT": 13, "ViT17": 17, "Swin": 13}


class TimmAttn(nn.Module):
    def __init__(self, d=16):
        super().__init__()
        self.embed = nn.Conv2d(3, d, 16, 16)
        self.attn = TimmAttention(d, 2)
        self.head = nn.Linear(4 * d, 10)

    def forward(self, x):
        t = self.embed(x).flatten(2).transpose(1, 2)
        t = t + self.attn(t)
        return self.head(t.flatten(1))


class EinsumAttention(nn.Module):
    """Attention written with torch.einsum as torchvision's MaxViT writes it (its
    RelativePositionalMultiHeadAttention without the bias): q k^T and A v as two Einsums of
    (B, G, H, N, d) tensors (G groups of tokens, H heads)."""

    def __init__(self, dim=16, heads=2, groups=2):
        super().__init__()
        self.heads, self.groups, self.d = heads, groups, dim // heads
        self.scale = self.d ** -0.5
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        B, N, C = x.shape
        x = x.reshape(B, self.groups, N // self.groups, C)
        q, k, v = self.qkv(x).reshape(B, self.groups, N // self.groups, self.heads, 3 * self.d).transpose(2, 3) \
            .chunk(3, dim=-1)
        a = torch.einsum("B G H I D, B G H J D -> B G H I J", q, k) * self.scale
        out = torch.einsum("B G H I J, B G H J D -> B G H I D", a.softmax(dim=-1), v)
        return self.proj(out.transpose(2, 3).reshape(B, N, C))


class EinsumAttn(TimmAttn):
    def __init__(self, d=16):
        super().__init__(d)
        self.attn = EinsumAttention(d)


def vit():
    try:
        from torchvision.models.vision_transformer import VisionTransformer
    except Exception as e:  # pragma: no cover - depends on the machine
        print("onnx_families: torchvision not importable: %s" % e)
        sys.exit(77)
    net = VisionTransformer(image_size=32, patch_size=8, num_layers=1, num_heads=2, hidden_dim=16, mlp_dim=32,
                            num_classes=10, dropout=0.0, attention_dropout=0.0)
    # torchvision zeroes the head's weight: every other gradient of the first step would be 0
    nn.init.normal_(net.heads.head.weight, std=0.2)
    return net


def swin():
    try:
        from torchvision.models.swin_transformer import SwinTransformer
    except Exception as e:  # pragma: no cover - depends on the machine
        print("onnx_families: torchvision not importable: %s" % e)
        sys.exit(77)
    return SwinTransformer(patch_size=[4, 4], embed_dim=16, depths=[2, 1], num_heads=[2, 2], window_size=[4, 4],
                           stochastic_depth_prob=0.0, num_classes=10)


def nets():
    return {"TimmAttn": TimmAttn, "EinsumAttn": EinsumAttn, "ViT": vit, "ViT17": vit, "Swin": swin}


class FoldedBias(nn.Module):
    """A Swin attention's relative position bias as the inference-form file holds it: torch
    folds table[index] (permuted, unsqueezed) into one (1, heads, N, N) initializer, so the
    file's weight is that tensor, every entry its own, no longer the table's shared rows."""

    def __init__(self, bias):
        super().__init__()
        self.bias = nn.Parameter(bias.detach().clone())

    def forward(self):
        return self.bias


def as_exported(net):
    """The module as the inference-form file parametrises it: each Swin attention's table
    of relative position biases replaced by the folded bias (FoldedBias); the rest as it
    is. Torch's numbers of the file are this module's."""
    for mod in net.modules():
        if type(mod).__name__ == "ShiftedWindowAttention":
            folded = FoldedBias(mod.get_relative_position_bias())
            del mod.relative_position_bias_table
            mod.folded = folded
            mod.get_relative_position_bias = folded.forward
    return net


def file_weights(path):
    """The file's float weights by the names pacer trains them under: each initializer, and
    each Identity of one (in inference form torch keeps one initializer of equal values,
    a fresh module's zero biases and LayerNorm's ones, and gives each other parameter's
    name to an Identity of it; pacer imports every such name as a weight of its own)."""
    import numpy as np
    import onnx
    from onnx import numpy_helper
    g = onnx.load(path).graph
    w = {t.name: numpy_helper.to_array(t).astype(np.float64) for t in g.initializer
         if t.data_type == onnx.TensorProto.FLOAT and t.dims}
    for n in g.node:
        if n.op_type == "Identity" and n.input[0] in w:
            w[n.output[0]] = w[n.input[0]]
    return w


def by_initializer(res, net, path):
    import numpy as np
    params = {n: p.detach().double().numpy().astype(np.float32) for n, p in net.named_parameters()}
    weights = {k: v.astype(np.float32) for k, v in file_weights(path).items()}
    rename = {}  # parameter name -> (the file's name, transposed)
    # a parameter under its own name first (equal values are merged), then by its values
    for pname, p in params.items():
        if pname in weights and weights[pname].shape == p.shape and np.array_equal(weights[pname], p):
            rename[pname] = (pname, False)
    taken = {v[0] for v in rename.values()}
    for name, a in weights.items():
        if name in taken:
            continue
        found = None
        for pname, p in params.items():
            if pname in rename:
                continue
            if p.shape == a.shape and np.array_equal(p, a):
                found = (pname, False)
            elif p.ndim == 2 and p.T.shape == a.shape and np.array_equal(p.T, a):
                found = (pname, True)
            if found:
                break
        if found is None:
            if a.size > 1:  # a folded scalar (the attention's scale) is a constant, not a weight
                print("onnx_families: %s: initializer %s %s holds no parameter's values" % (path, name, a.shape))
                sys.exit(1)
            continue
        rename[found[0]] = (name, found[1])
    missing = [p for p in params if p not in rename]
    if missing:
        print("onnx_families: %s: parameters with no initializer of theirs: %s" % (path, " ".join(missing)))
        sys.exit(1)
    out = {}
    for key, v in res.items():
        parts = key.split(":")
        if len(parts) >= 2 and parts[-1] in rename:
            name, tr = rename[parts[-1]]
            parts[-1] = name
            v = v.T if tr and np.ndim(v) == 2 else v
            key = ":".join(parts)
        out[key] = v
    return out


# torchvision's zoo (onnx_zoo_families.py's sixteen, shufflenet_v2_x0_5 and the four
# transformers; swin_v2_t is left out: torch 1.13 cannot export it, "aten::zero"), each at
# the smallest square input it takes (onnx_zoo_families.py's SIZE; the transformers at
# the 224 they are built for)
ZOO = ["mobilenet_v2", "mobilenet_v3_small", "mnasnet0_5", "regnet_y_400mf", "efficientnet_b0", "shufflenet_v2_x0_5",
       "resnet18", "densenet121", "googlenet", "alexnet", "inception_v3", "regnet_x_400mf", "resnet50",
       "resnext50_32x4d", "squeezenet1_0", "vgg11_bn", "wide_resnet50_2", "convnext_tiny", "vit_b_16", "swin_t",
       "maxvit_t"]
ZOO_SIZE = {"vit_b_16": 224, "swin_t": 224, "maxvit_t": 224}
# the named tolerance of the evaluation logits (onnx_families.py's eval_logits)
ZOO_TOL = 1e-4


def zoo(out, opset, n, names):
    """NAME.onnx in inference form at opset, x_NAME.bin (n images) and NAME.eval.npy (the
    module's evaluation logits of them, float64) per NAME; prints "NAME: exported" or
    "NAME: export failed: WHY"."""
    import numpy as np
    import onnx_zoo_families as zf
    for i, name in enumerate(names):
        torch.manual_seed(100 + i)
        net = zf.model(name).eval()
        s = ZOO_SIZE.get(name, zf.SIZE.get(name, 32))
        # torchvision zeroes the ViT head's weight and bias: logits all 0 would compare nothing
        for m in net.modules():
            if isinstance(m, nn.Linear) and not m.weight.detach().any():
                nn.init.normal_(m.weight, std=0.2)
        x = torch.randn(n, 3, s, s)
        x.numpy().astype("<f4").tofile("%s/x_%s.bin" % (out, name))
        try:
            torch.onnx.export(net, x[:1], "%s/%s.onnx" % (out, name), opset_version=opset, input_names=["input"],
                              output_names=["logits"], dynamic_axes={"input": {0: "N"}, "logits": {0: "N"}})
        except Exception as e:
            print("%s: export failed: %s" % (name, str(e).splitlines()[0] if str(e) else type(e).__name__))
            continue
        with torch.no_grad():
            f32 = net(x).double().numpy()
            want = net.double()(x.double()).numpy()
        # torch's own float32 error (its float32 forward against float64): a deep network
        # without normalisation (inception_v3's) moves its logits by 1e-4 in float32
        f32err = float(np.max(np.abs(f32 - want)) / np.max(np.abs(want)))
        np.savez("%s/%s.eval.npz" % (out, name), logits=want, f32err=np.array(f32err))
        print("%s: exported (%dx%d, opset %d)" % (name, s, s, opset), flush=True)


def zoo_check(want, pdir):
    """onnx_grads' evaluation logits against the module's within ZOO_TOL of the largest (or
    twice torch's own float32 error, where that is larger), and its first SGD loss finite:
    exit 1 naming what is not. The later losses are printed, not held: a network whose
    batch norm torch folded trains without it, and a fresh inception_v3's (evaluation
    logits near 1e8: its running statistics, mean 0 and variance 1, normalise nothing)
    diverges, as torch's own steps on the module with its batch norms folded do."""
    import numpy as np
    t = np.load(want)
    logits, tol = t["logits"], max(ZOO_TOL, 2 * float(t["f32err"]))
    got = np.fromfile(pdir + "/eval_logits.bin", dtype="<f4").astype(np.float64)
    scale = max(float(np.max(np.abs(logits))), 1e-30)
    e = float(np.max(np.abs(got - logits.ravel()))) / scale if got.size == logits.size else float("inf")
    losses = np.loadtxt(pdir + "/losses.txt", ndmin=1)
    print("  eval_logits max_rel %.2e (tol %.1e); SGD losses %s" % (e, tol, " ".join("%.4g" % v for v in losses)))
    if not e <= tol:
        print("onnx_eval_form: %s: evaluation logits differ from the module's" % want)
        return 1
    if not np.isfinite(losses[0]):
        print("onnx_eval_form: %s: the first loss is not finite" % pdir)
        return 1
    return 0


def graphs(out):
    """Einsum graphs by hand (onnx.helper, opset 13) over x (N, 4, 6), for onnx_eval_form.sh."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    def model(name, equation, inputs, width):
        nodes = [helper.make_node("Einsum", inputs, ["e"], equation=equation, name=name),
                 helper.make_node("Flatten", ["e"], ["f"]),
                 helper.make_node("Gemm", ["f", "w"], ["logits"], transB=1)]
        w = numpy_helper.from_array(np.random.RandomState(5).uniform(-0.5, 0.5, (10, width)).astype(np.float32), "w")
        g = helper.make_graph(nodes, "einsum", [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 4, 6])],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 10])], [w])
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), "%s/%s.onnx" % (out, name))
        if name in ("einsum_bmm", "einsum_perm"):
            # x (2 samples) and numpy's logits of it, for the graphs that import
            xs = np.random.RandomState(6).uniform(-1, 1, (2, 4, 6)).astype(np.float32)
            e = np.einsum(equation.replace(" ", ""), *[xs.astype(np.float64)] * len(inputs))
            xs.tofile("%s/%s_x.bin" % (out, name))
            y = e.reshape(2, -1) @ numpy_helper.to_array(w).astype(np.float64).T
            y.astype("<f4").tofile("%s/%s_y.bin" % (out, name))

    x = ["input", "input"]
    model("einsum_bmm", "b i d, b j d -> b i j", x, 16)  # x x^T: accepted
    model("einsum_perm", "bij->bji", ["input"], 24)  # a Transpose: accepted
    model("einsum_sum", "bij->bi", ["input"], 4)  # a sum over j
    model("einsum_diag", "bii->bi", ["input"], 4)
    model("einsum_ellipsis", "...ij,...kj->...ik", x, 16)
    model("einsum_implicit", "bij,bkj", x, 16)
    model("einsum_inputs", "bij,bkj->bik", ["input"], 16)  # two terms, one input


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--graphs":
        graphs(sys.argv[2])
        return 0
    if len(sys.argv) >= 5 and sys.argv[1] == "--zoo":
        zoo(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5:] or ZOO)
        return 0
    if len(sys.argv) == 4 and sys.argv[1] == "--zoo-check":
        return zoo_check(sys.argv[2], sys.argv[3])
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
