"""tests/tools/onnx_attention.py - issue 44's operators in small torch modules, for
tests/integration/onnx_attention.sh (through onnx_families.py, which exports them as the
Python client does and computes torch's numbers; this file only defines them).

nets(): the set "attention" of onnx_families.py --export:
  Attentionish  a patch embedding (Conv 8x8 stride 8: 16 tokens of 16 channels), queries,
                keys and values by 1x1 convolutions, two heads: softmax(Q^T K / sqrt(d)) (a
                MatMul of two activations, Softmax on the last axis) and V A^T (MatMul
                again), a residual Add, nn.GELU (torch 1.13 writes Div, Erf, Add, Mul, Mul:
                one GELU row in pacer), y + 0.1 * erf(y) (a lone Erf), then Linear and
                LogSoftmax over the classes.
  ConvNeXtish   a stem (Conv 4x4 stride 4) and two of torchvision's CNBlock (depthwise 7x7,
                permute, nn.LayerNorm over the channels (torch 1.13 writes ReduceMean, Sub,
                Pow, ReduceMean, Add, Sqrt, Div, Mul, Add: one LayerNorm row in pacer),
                permute back, GELU, layer scale, residual) with their Linear layers as 1x1
                convolutions, x.mean([2, 3]), nn.LayerNorm of the pooled features, Linear.
  Tokenish      a patch embedding as tokens, t[:, 0] + t[:, -1] (Gather of an activation by
                a constant index), Linear.
  (The Linear over the last axis that torchvision's own CNBlock and ViT use is another
  branch's: those blocks wait for it.)

Usage: /usr/bin/python3 tests/tools/onnx_attention.py --graphs OUTDIR
  Writes small graphs by hand (onnx.helper) for the importer's refusals, which
  onnx_attention.sh checks by message:
    softmax_batch.onnx   Softmax on axis 0 (the batch);
    softmax_opset12.onnx Softmax on axis 1 of a (N, 2, 5) input in opset 12 (it normalises
                         axes 1 and 2 together there);
    softmax_last12.onnx  Softmax on the last axis in opset 12: accepted;
    matmul_shape.onnx    MatMul of (N, 4, 6, 6) by (N, 4, 3, 3) activations;
    layernorm17.onnx     LayerNormalization (opset 17) of (N, 10): accepted;
    layernorm_scale.onnx the same with a scale and bias of 5 elements;
    layernorm_batch.onnx the same on axis 0 (the batch);
    gather_indices.onnx  Gather of an activation by two indices.
    gather_many.onnx     Gather of an activation by nine indices.
Exits 77 when torch or onnx cannot be imported.
"""
import math
import sys

try:
    import numpy as np
    import torch
    import torch.nn as nn
    import onnx
    from onnx import TensorProto, helper, numpy_helper
except Exception as e:  # pragma: no cover - depends on the machine
    print("onnx_families: torch/onnx not importable: %s" % e)
    sys.exit(77)


class Attentionish(nn.Module):
    def __init__(self, d=16, heads=2):
        super().__init__()
        self.d, self.heads = d, heads
        self.embed = nn.Conv2d(3, d, 8, 8)
        self.q, self.k, self.v = nn.Conv2d(d, d, 1), nn.Conv2d(d, d, 1), nn.Conv2d(d, d, 1)
        self.act = nn.GELU()
        self.fc = nn.Linear(d * 16, 10)

    def forward(self, x):
        e = self.embed(x)  # (B, d, 4, 4): 16 tokens
        b, dh = e.shape[0], self.d // self.heads
        q = self.q(e).reshape(b, self.heads, dh, 16)
        k = self.k(e).reshape(b, self.heads, dh, 16)
        v = self.v(e).reshape(b, self.heads, dh, 16)
        a = torch.softmax(q.transpose(2, 3) @ k / math.sqrt(dh), dim=-1)  # (B, h, T, T)
        y = self.act((v @ a.transpose(2, 3)).reshape(b, self.d, 4, 4) + e)
        y = y + 0.1 * torch.erf(y)
        return torch.log_softmax(self.fc(torch.flatten(y, 1)), dim=1)


class CNBlockish(nn.Module):
    """torchvision's CNBlock with its two Linear layers over the channels as 1x1 convolutions
    (a Linear over the last axis is not in pacer yet): depthwise 7x7, permute, LayerNorm
    (eps 1e-6), permute back, 1x1 up, GELU, 1x1 down, layer scale, the input added back."""

    def __init__(self, d):
        super().__init__()
        self.dw = nn.Conv2d(d, d, 7, padding=3, groups=d)
        self.norm = nn.LayerNorm(d, eps=1e-6)
        self.up, self.act, self.down = nn.Conv2d(d, 4 * d, 1), nn.GELU(), nn.Conv2d(4 * d, d, 1)
        self.layer_scale = nn.Parameter(torch.full((d, 1, 1), 0.5))

    def forward(self, x):
        y = self.norm(self.dw(x).permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
        return x + self.layer_scale * self.down(self.act(self.up(y)))


class ConvNeXtish(nn.Module):
    def __init__(self, d=16):
        super().__init__()
        self.stem = nn.Conv2d(3, d, 4, 4)  # (d, 8, 8)
        self.blocks = nn.Sequential(CNBlockish(d), CNBlockish(d))
        self.norm = nn.LayerNorm(d)  # over the pooled features (N, d)
        self.fc = nn.Linear(d, 10)

    def forward(self, x):
        return self.fc(self.norm(self.blocks(self.stem(x)).mean([2, 3])))


class Tokenish(nn.Module):
    """A patch embedding as tokens (B, 16, d), the first and the last token picked by a
    constant index (Gather: ViT's x[:, 0]) and added, then Linear."""

    def __init__(self, d=8):
        super().__init__()
        self.d = d
        self.embed = nn.Conv2d(3, d, 8, 8)
        self.fc = nn.Linear(d, 10)

    def forward(self, x):
        e = self.embed(x)
        t = e.reshape(e.shape[0], self.d, 16).transpose(1, 2)
        return self.fc(t[:, 0] + t[:, -1])


def nets():
    return {"Attentionish": Attentionish, "ConvNeXtish": ConvNeXtish, "Tokenish": Tokenish}


def graphs(out):
    def model(nodes, xshape, yshape, opset=13, inits=()):
        g = helper.make_graph(nodes, "ops44", [helper.make_tensor_value_info("input", TensorProto.FLOAT, xshape)],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, yshape)], list(inits))
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])

    ln = lambda axis: helper.make_node("LayerNormalization", ["input", "ln.weight", "ln.bias"], ["logits"], axis=axis)
    ln_inits = lambda n: [numpy_helper.from_array(np.ones(n, np.float32), "ln.weight"),
                          numpy_helper.from_array(np.zeros(n, np.float32), "ln.bias")]
    sm = lambda axis, out="logits": helper.make_node("Softmax", ["input"], [out], axis=axis)
    files = {
        "softmax_batch": model([sm(0)], ["N", 10], ["N", 10]),
        "softmax_opset12": model([sm(1, "logits0"), helper.make_node("Flatten", ["logits0"], ["logits"])],
                                 ["N", 2, 5], ["N", 10], 12),
        "softmax_last12": model([sm(1)], ["N", 10], ["N", 10], 12),
        "matmul_shape": model([helper.make_node("MaxPool", ["input"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
                               helper.make_node("MatMul", ["input", "p"], ["logits"])], ["N", 4, 6, 6], ["N", 10]),
        "gather_indices": model([helper.make_node("Gather", ["input", "idx"], ["logits"], axis=1)], ["N", 10],
                                ["N", 2], 13, [numpy_helper.from_array(np.array([0, 1], np.int64), "idx")]),
        "gather_many": model([helper.make_node("Gather", ["input", "idx"], ["logits"], axis=1)], ["N", 10],
                             ["N", 9], 13, [numpy_helper.from_array(np.arange(9, dtype=np.int64), "idx")]),
        "layernorm17": model([ln(-1)], ["N", 10], ["N", 10], 17, ln_inits(10)),
        "layernorm_scale": model([ln(-1)], ["N", 10], ["N", 10], 17, ln_inits(5)),
        "layernorm_batch": model([ln(0)], ["N", 10], ["N", 10], 17, ln_inits(10)),
    }
    for name, m in files.items():
        onnx.save(m, "%s/%s.onnx" % (out, name))
    print("onnx_attention: %d graphs written" % len(files))


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--graphs":
        graphs(sys.argv[2])
        sys.exit(0)
    print(__doc__)
    sys.exit(2)
