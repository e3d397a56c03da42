"""tests/tools/onnx_batch_axis.py - networks that move, split or merge the batch axis, or
take sequences (N, C, L), in small torch modules, for tests/integration/onnx_batch_axis.sh
(through onnx_families.py, which exports them as the Python client does and computes
torch's numbers; this file only defines them).

nets(): the set "batchaxis" of onnx_families.py --export:
  Timmish   a patch embedding (Conv 8x8 stride 8: 16 tokens of 16 channels), then the
            attention the way timm writes it: one Linear for q, k and v, reshaped to
            (B, N, 3, heads, d), permuted with the 3 first (its batch axis moved to the
            second place), unbound (torch 1.13 writes Split on axis 0 and a Squeeze of
            each part), q k^T scaled, softmax, times v, transposed and reshaped back to
            (B, N, C), the output projection, a residual Add; the mean over the tokens and
            a Linear head.
  Movedish  a flattened image's batch moved last (relu(h.t())) and back by a Gemm's transA, then
            merged with a feature axis (h.view(B * 2, 8)) before an nn.Linear and split out
            again: Gemm of a moved and of a merged batch axis.
  Catish    torch.cat([h, tanh(h)], 0) of a flattened image (the batch axis 2N), a Linear on
            the 2N rows, .chunk(2, 0) (Slices at (2N + 1) / 2 * k: shape arithmetic of the
            batch) and the halves joined along the features: a Concat along the batch.
  Stackish  two features stacked along a new axis 0 (torch.stack: Unsqueeze puts the batch
            second, Concat along axis 0) and averaged over it, and stacked along axis 1 and
            flattened: a Concat and a ReduceMean of tensors whose batch is not first.
  Seq1dish  the image read as a sequence (B, 3, 1024): Conv1d (stride 2, padding 1),
            BatchNorm1d, ReLU, MaxPool1d (3, stride 2, padding 1), Conv1d (dilation 2),
            AvgPool1d (4), then Flatten and a Linear head: Conv and the pools on (N, C, L).
volume_nets(): the set "volume":
  Vol3dish  a Conv2d and ReLU, the output read as a volume (B, 4, 8, 4, 32), Conv3d
            ((3, 2, 3), stride (1, 1, 2), padding (1, 0, 1), dilation (2, 1, 1), groups 2),
            MaxPool3d ((2, 3, 3), stride (2, 1, 2), padding 1, dilation (1, 1, 2), ceil_mode)
            and AvgPool3d (3, stride (1, 2, 2), padding 1, ceil_mode, count_include_pad
            False), Flatten and a Linear head: convolutions and pools of volumes, which the
            importer runs on the 2-D kernels.

Usage: /usr/bin/python3 tests/tools/onnx_batch_axis.py --graphs OUTDIR
  Writes small graphs by hand (onnx.helper) for onnx_batch_axis.sh:
    view_squeeze.onnx   x (N, 4, 6) transposed to (4, N, 6), Unsqueeze to (1, 4, N, 6),
                        Squeeze back, transposed back, the mean over the last axis: accepted;
    split_batch.onnx    the transposed (4, N, 6) split along axis 1, the batch's: refused;
    squeeze_size.onnx   the transposed (4, N, 6) squeezed on axis 0, of size 4: refused;
    fixed_reshape.onnx  x (1, 4, 6), the batch fixed to 1, reshaped to the constant (2, 2, 6)
                        (Swin's B * windows with B 1): refused, naming the dynamic batch;
    cat_split.onnx      the transposed (4, N, 6) and twice it joined along axis 1, the batch's,
                        split back by sizes computed from its shape ((2N) / 2), added: accepted;
    cat_bound.onnx      x joined with itself along the batch, sliced at N + 1: refused;
    cat_unequal.onnx    x joined along the batch with its first two rows: refused;
    batch_square.onnx   N * N in a Reshape's shape: refused;
    unsqueeze_mid.onnx  an axis of 1 put in front of the batch of the transposed (4, N, 6), moved
                        and reshaped back to (N, 4, 6), summed over the last axis: accepted;
    stack_mean_batch.onnx  torch.stack([x, x], 0) averaged over axis 1, the batch's: refused;
    cat_many.onnx       x joined with itself 70,000 times along the batch: refused;
  and fixed_mha.onnx: a class token and nn.MultiheadAttention exported in inference form with
  the batch fixed to 1 (torch writes the heads' reshapes as constants without the batch):
  refused, naming the dynamic batch to export with.
"""
import sys

try:
    import torch
    import torch.nn as nn
    import onnx
    from onnx import TensorProto, helper
except Exception as e:  # pragma: no cover - depends on the machine
    print("onnx_families: torch/onnx not importable: %s" % e)
    sys.exit(77)


class TimmAttention(nn.Module):
    """timm's Attention (vision_transformer.py) as written there."""

    def __init__(self, dim=16, heads=2):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        attn = (q @ k.transpose(-2, -1)) * self.scale
        attn = attn.softmax(dim=-1)
        x = (attn @ v).transpose(1, 2).reshape(B, N, C)
        return self.proj(x)


class Timmish(nn.Module):
    def __init__(self, d=16):
        super().__init__()
        self.embed = nn.Conv2d(3, d, 8, 8)
        self.attn = TimmAttention(d)
        self.head = nn.Linear(d, 10)

    def forward(self, x):
        t = self.embed(x).flatten(2).transpose(1, 2)
        t = t + self.attn(t)
        return self.head(t.mean(1))


class Seq1dish(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv1d(3, 8, 5, stride=2, padding=1)
        self.bn = nn.BatchNorm1d(8)
        self.pool1 = nn.MaxPool1d(3, stride=2, padding=1)
        self.conv2 = nn.Conv1d(8, 8, 3, dilation=2)
        self.pool2 = nn.AvgPool1d(4)
        self.head = nn.Linear(8 * 63, 10)

    def forward(self, x):
        s = x.flatten(2)
        s = self.pool1(torch.relu(self.bn(self.conv1(s))))
        s = self.pool2(self.conv2(s))
        return self.head(s.flatten(1))


class Movedish(nn.Module):
    """The batch axis of a flattened image moved last and back through a Gemm's transA (torch
    writes y.t() @ W as Gemm(transA=1) of y's transpose), then merged with a feature axis, x.view(B * 2, 8),
    before an nn.Linear (a Gemm of (N * 2, 8)) and split out again."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Conv2d(3, 8, 8, 8)
        self.mix = nn.Linear(128, 16)
        self.tok = nn.Linear(8, 8)
        self.head = nn.Linear(16, 10)

    def forward(self, x):
        B = x.shape[0]
        h = self.embed(x).flatten(1)
        h = self.mix(torch.relu(h.t()).t())
        h = torch.relu(self.tok(h.reshape(B * 2, 8)))
        return self.head(h.reshape(B, 16))


class Catish(nn.Module):
    """Two views of each sample through one layer as one batch: torch.cat([h, tanh(h)], 0) of a
    flattened image (its batch axis 2N), a Linear and ReLU on the 2N rows, then .chunk(2, 0)
    (torch writes two Slices whose bounds are shape arithmetic, (2N + 1) / 2 * k) and the halves'
    features joined per sample for the head."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Conv2d(3, 4, 8, 8)
        self.fc = nn.Linear(64, 16)
        self.head = nn.Linear(32, 10)

    def forward(self, x):
        h = self.embed(x).flatten(1)
        h = torch.relu(self.fc(torch.cat([h, torch.tanh(h)], 0)))
        a, b = h.chunk(2, 0)
        return self.head(torch.cat([a, b], 1))


class Stackish(nn.Module):
    """Two features of one image stacked along a new axis 0 (torch.stack: an Unsqueeze of each,
    which puts the batch second, and a Concat along axis 0) and averaged over it (ReduceMean over
    axis 0), and stacked along axis 1 and flattened, both joined for the head."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Conv2d(3, 4, 8, 8)
        self.f = nn.Linear(64, 16)
        self.g = nn.Linear(64, 16)
        self.head = nn.Linear(48, 10)

    def forward(self, x):
        h = self.embed(x).flatten(1)
        a, b = self.f(h), torch.tanh(self.g(h))
        m = torch.stack([a, b], 0).mean(0)
        s = torch.stack([a, b], 1).flatten(1)
        return self.head(torch.cat([m, s], 1))


def nets():
    return {"Timmish": Timmish, "Seq1dish": Seq1dish, "Movedish": Movedish, "Catish": Catish, "Stackish": Stackish}


class Vol3dish(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.conv3 = nn.Conv3d(4, 4, (3, 2, 3), stride=(1, 1, 2), padding=(1, 0, 1), dilation=(2, 1, 1), groups=2)
        self.pool1 = nn.MaxPool3d((2, 3, 3), stride=(2, 1, 2), padding=1, dilation=(1, 1, 2), ceil_mode=True)
        self.pool2 = nn.AvgPool3d(3, stride=(1, 2, 2), padding=1, ceil_mode=True, count_include_pad=False)
        self.head = nn.Linear(4 * 4 * 2 * 5, 10)

    def forward(self, x):
        v = torch.relu(self.conv(x)).view(x.shape[0], 4, 8, 4, 32)
        return self.head(self.pool2(self.pool1(self.conv3(v))).flatten(1))


def volume_nets():
    return {"Vol3dish": Vol3dish}


class FixedMHA(nn.Module):
    """torchvision's ViT in small: a class token concatenated, LayerNorm, nn.MultiheadAttention."""

    def __init__(self, d=16):
        super().__init__()
        self.embed = nn.Conv2d(3, d, 8, 8)
        self.cls = nn.Parameter(torch.randn(1, 1, d))
        self.ln = nn.LayerNorm(d)
        self.mha = nn.MultiheadAttention(d, 2, batch_first=True)
        self.head = nn.Linear(d, 10)

    def forward(self, x):
        t = self.embed(x).flatten(2).transpose(1, 2)
        t = torch.cat([self.cls.expand(x.shape[0], -1, -1), t], 1)
        y = self.ln(t)
        y, _ = self.mha(y, y, y, need_weights=False)
        return self.head((t + y)[:, 0])


def graphs(out):
    def model(nodes, yshape, batch="N"):
        g = helper.make_graph(nodes, "batchaxis", [helper.make_tensor_value_info("input", TensorProto.FLOAT,
                                                                                [batch, 4, 6])],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, yshape)],
                              [helper.make_tensor("zero", TensorProto.INT64, [1], [0]),
                               helper.make_tensor("one", TensorProto.INT64, [1], [1]),
                               helper.make_tensor("two", TensorProto.INT64, [1], [2]),
                               helper.make_tensor("minus", TensorProto.INT64, [1], [-1]),
                               helper.make_tensor("keep3", TensorProto.INT64, [3], [0, 4, 6]),
                               helper.make_tensor("twof", TensorProto.FLOAT, [], [2.0]),
                               helper.make_tensor("windows", TensorProto.INT64, [3], [2, 2, 6])])
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])

    t = helper.make_node("Transpose", ["input"], ["t"], perm=[1, 0, 2])
    files = {
        "view_squeeze": model([t, helper.make_node("Unsqueeze", ["t", "zero"], ["u"]),
                               helper.make_node("Squeeze", ["u", "zero"], ["q"]),
                               helper.make_node("Transpose", ["q"], ["b"], perm=[1, 0, 2]),
                               helper.make_node("ReduceMean", ["b"], ["logits"], axes=[2], keepdims=0)],
                              ["N", 4]),
        "split_batch": model([t, helper.make_node("Split", ["t"], ["logits", "s2"], axis=1)], ["N", 24]),
        "squeeze_size": model([t, helper.make_node("Squeeze", ["t", "zero"], ["logits"])], ["N", 24]),
        "fixed_reshape": model([helper.make_node("Reshape", ["input", "windows"], ["r"]),
                                helper.make_node("ReduceSum", ["r", "zero"], ["logits"], keepdims=0)], [2, 6], 1),
    }
    # the batch joined along axis 1 of the transposed (4, N, 6) and split back by sizes computed
    # from its shape ((2N) / 2 twice): t + 2 t', back to (N, 4) by the mean over the last axis
    half = [helper.make_node("Shape", ["c"], ["cs"]), helper.make_node("Gather", ["cs", "one"], ["n2"]),
            helper.make_node("Div", ["n2", "two"], ["n1"])]
    files["cat_split"] = model([t, helper.make_node("Mul", ["t", "twof"], ["t2"]),
                                helper.make_node("Concat", ["t", "t2"], ["c"], axis=1)] + half +
                               [helper.make_node("Concat", ["n1", "n1"], ["sizes"], axis=0),
                                helper.make_node("Split", ["c", "sizes"], ["a", "b"], axis=1),
                                helper.make_node("Add", ["a", "b"], ["s"]),
                                helper.make_node("Transpose", ["s"], ["u"], perm=[1, 0, 2]),
                                helper.make_node("ReduceMean", ["u"], ["logits"], axes=[2], keepdims=0)], ["N", 4])
    # a Slice of the joined (2N, 4, 6) at N + 1, which is no multiple of N: refused
    files["cat_bound"] = model([helper.make_node("Concat", ["input", "input"], ["c"], axis=0)] + half[:1] +
                               [helper.make_node("Gather", ["cs", "zero"], ["n2"]),
                                helper.make_node("Div", ["n2", "two"], ["n1"]),
                                helper.make_node("Add", ["n1", "one"], ["end"]),
                                helper.make_node("Slice", ["c", "zero", "end", "zero"], ["cut"]),
                                helper.make_node("ReduceSum", ["cut", "two"], ["logits"], keepdims=0)], ["N", 4])
    # x joined along the batch with its first two rows: refused (one shape joins there)
    files["cat_unequal"] = model([helper.make_node("Slice", ["input", "zero", "two", "one"], ["x2"]),
                                  helper.make_node("Concat", ["input", "x2"], ["c"], axis=0),
                                  helper.make_node("ReduceSum", ["c", "two"], ["logits"], keepdims=0)], ["N", 4])
    # an axis of 1 put in front of the batch of the transposed (4, N, 6), (4, 1, N, 6), moved
    # to (N, 4, 1, 6) and reshaped to (N, 4, 6): the new axis is no piece of the batch's, so
    # this is x, its sum over the last axis x.sum(2)
    files["unsqueeze_mid"] = model([t, helper.make_node("Unsqueeze", ["t", "one"], ["u"]),
                                    helper.make_node("Transpose", ["u"], ["v"], perm=[2, 0, 1, 3]),
                                    helper.make_node("Reshape", ["v", "keep3"], ["r"]),
                                    helper.make_node("ReduceSum", ["r", "two"], ["logits"], keepdims=0)], ["N", 4])
    # torch.stack([x, x], 0) averaged over axis 1, the batch's: refused (across samples)
    files["stack_mean_batch"] = model([helper.make_node("Unsqueeze", ["input", "zero"], ["u"]),
                                       helper.make_node("Concat", ["u", "u"], ["c"], axis=0),
                                       helper.make_node("ReduceMean", ["c"], ["logits"], axes=[1], keepdims=0)],
                                      ["N", 4])
    # x joined with itself 70,000 times along the batch: past the model's list bounds,
    # refused by name at once (the inputs' walk stops at the first bound)
    files["cat_many"] = model([helper.make_node("Concat", ["input"] * 70000, ["c"], axis=0),
                               helper.make_node("ReduceSum", ["c", "two"], ["logits"], keepdims=0)], ["N", 4])
    # N * N in shape arithmetic: refused
    files["batch_square"] = model([helper.make_node("Shape", ["input"], ["xs"]),
                                   helper.make_node("Gather", ["xs", "zero"], ["n"]),
                                   helper.make_node("Mul", ["n", "n"], ["nn"]),
                                   helper.make_node("Concat", ["nn", "minus"], ["sh"], axis=0),
                                   helper.make_node("Reshape", ["input", "sh"], ["r"]),
                                   helper.make_node("ReduceSum", ["r", "one"], ["logits"], keepdims=0)], ["N", 4])
    for name, m in files.items():
        onnx.save(m, "%s/%s.onnx" % (out, name))
    torch.manual_seed(0)
    torch.onnx.export(FixedMHA().eval(), torch.randn(1, 3, 32, 32), "%s/fixed_mha.onnx" % out)
    print("onnx_batch_axis: %d graphs written" % (len(files) + 1))


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--graphs":
        graphs(sys.argv[2])
        sys.exit(0)
    print(__doc__)
    sys.exit(2)
