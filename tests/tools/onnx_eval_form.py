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
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from onnx_batch_axis import TimmAttention  # noqa: E402  (exits 77 when torch/onnx are missing)
import torch.nn as nn  # noqa: E402

OPSET = {"TimmAttn": 13, "ViT": 13, "ViT17": 17, "Swin": 13}


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
    return {"TimmAttn": TimmAttn, "ViT": vit, "ViT17": vit, "Swin": swin}


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
