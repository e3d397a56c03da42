"""tests/tools/onnx_swin.py - issue 44's Swin Transformer, for tests/integration/onnx_swin.sh
(through onnx_families.py --export swin, which exports it as the Python client does and
computes torch's numbers; this file only defines it).

nets(): the set "swin" of onnx_families.py --export:
  SwinStage  torchvision 0.14's SwinTransformer(patch_size [4, 4], embed_dim 16, depths
             [2, 2], num_heads [2, 2], window_size [4, 4], stochastic_depth_prob 0,
             num_classes 10) on 3x32x32: two stages of two blocks each (the second of each
             pair shifted: torch.roll as Slice + Concat, the attention mask computed from
             shapes by new_zeros, slice assignment (ScatterND), Sub, Equal and Where, which
             pacer folds into a constant), PatchMerging between them (strided Slices, Concat,
             LayerNorm, a Linear without bias), the relative position bias (a parameter table
             gathered by a constant index: pacer's LAYER_GATHER_PARAM), windows moved into
             the batch axis (x.view(B * num_windows, ...)) and q, k, v taken from
             qkv.permute(2, 0, 3, 1, 4) by Gather. Exits 77 without torchvision.

Usage: /usr/bin/python3 tests/tools/onnx_swin.py --adamw OUTDIR STEPS LR WD B1 B2 LS
  Writes OUTDIR/swin.onnx (SwinStage from seed 44, exported by the Python client's
  export_module), OUTDIR/data.npz, x_test.bin and labels.bin (onnx_zoo_families.py's data:
  16 training images, so that each epoch of ssgd on 2 ranks of batch 8 is one step of the
  whole set, and 32 test images), and OUTDIR/swin.losses.npy: torch's loss of each of
  STEPS steps (before the step, on the whole set) of torch.optim.AdamW(lr LR, betas
  (B1, B2), eps 1e-8) with pacer's default groups (weight decay WD on tensors of two or
  more axes, none on the 1-D ones: biases and LayerNorm's) and
  CrossEntropyLoss(label_smoothing=LS), in float32 from the file's weights.

Usage: /usr/bin/python3 tests/tools/onnx_swin.py --check-losses OUTDIR METRICS.jsonl
  pacer's per-step losses (the mean of the 2 ranks' "step" lines) against torch's within
  LOSS_TOL relative.

Usage: /usr/bin/python3 tests/tools/onnx_swin.py --load OUTDIR TRAINED.onnx PACER_LOGITS.bin
  The trained export's initializers loaded into a fresh SwinStage with
  load_state_dict(strict=True) (relative_position_index, a constant of the window size that
  the export keeps as the file's initializer, would otherwise be the module's own); in evaluation mode
  on x_test.bin its logits are pacer's (build/tools/onnx_logits of TRAINED.onnx) within
  LOAD_TOL and every prediction agrees.
Usage: /usr/bin/python3 tests/tools/onnx_swin.py --graphs OUTDIR
  Small graphs written by hand (onnx.helper, opset 13) for the refusals of the folding,
  which onnx_swin.sh checks by message (input (N, 4, 6), logits (N, 4) its sum over the last axis):
    fold_huge.onnx      ConstantOfShape of (4096, 4096): beyond the bound of one folded tensor;
    fold_range.onnx     Range(0, 2^40, 1): the same bound, before any allocation;
    fold_div0.onnx      an integer Div of constants by 0;
    fold_index.onnx     Gather of a parameter (6, 4) by index 60;
    fold_scatter.onnx   ScatterND whose indices do not fit the data;
    fold_param.onnx     Mul of a reshaped parameter by 2 (arithmetic on a parameter);
    batch_times0.onnx   a Reshape to (N * 0, ...);
    batch_move.onnx     x (N, 4, 6) as (N * 2, 2, 6) (a lead value), a Transpose that moves
                        its batch axis, read by a Relu;
    layernorm_cut.onnx  nn.LayerNorm's first nodes, the Pow read by no node (the pattern's
                        probe met no reader: the fuzzer's crash, now an ordinary refusal);
    bias_ok.onnx        (N, 4, 6) + table[index] (6, 4) gathered, reshaped and transposed:
                        accepted (one LAYER_GATHER_PARAM).
Exits 1 naming what failed, 77 when torch, onnx or torchvision cannot be imported.
"""
import os
import sys

# float32 on both sides, other summation orders, through 2 stages of attention: measured
# on this network over 4 AdamW steps, losses within 2e-6 relative
LOSS_TOL = 1e-4
LOAD_TOL = 1e-4


def nets():
    try:
        from torchvision.models.swin_transformer import SwinTransformer
    except Exception as e:  # pragma: no cover - depends on the machine
        print("onnx_families: torchvision's SwinTransformer not importable: %s" % e)
        sys.exit(77)
    return {"SwinStage": lambda: SwinTransformer(patch_size=[4, 4], embed_dim=16, depths=[2, 2], num_heads=[2, 2],
                                                 window_size=[4, 4], stochastic_depth_prob=0.0, num_classes=10)}


def _tools():
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import onnx_families as fam  # noqa: E402  (exits 77 when torch/onnx are missing)
    import onnx_zoo_families as zoo  # noqa: E402
    return fam, zoo


def adamw(out, steps, lr, wd, b1, b2, ls):
    fam, zoo = _tools()
    torch, np, nn = fam.torch, fam.np, fam.nn
    zoo.data(out)
    torch.manual_seed(44)
    net = nets()["SwinStage"]()
    fam.no_randomness(net)
    with open(out + "/swin.onnx", "wb") as f:
        f.write(fam.client_export()(net, torch.zeros(2, 3, 32, 32)))
    fam.load_from_file(net, out + "/swin.onnx")
    d = np.load(out + "/data.npz")
    x = torch.from_numpy(d["x_train"].astype(np.float32) / np.float32(255.0))
    y = torch.from_numpy(d["y_train"].astype(np.int64))
    decay = [p for p in net.parameters() if p.dim() != 1]
    exempt = [p for p in net.parameters() if p.dim() == 1]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": wd}, {"params": exempt, "weight_decay": 0.0}],
                            lr=lr, betas=(b1, b2), eps=1e-8)
    crit = nn.CrossEntropyLoss(label_smoothing=ls)
    net.train()
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = crit(net(x), y)
        loss.backward()
        losses.append(float(loss))
        opt.step()
    np.save(out + "/swin.losses.npy", np.array(losses))
    print("onnx_swin: swin.onnx, data.npz; torch's AdamW losses %s" % " ".join("%.5f" % v for v in losses))
    return 0


def check_losses(out, metrics):
    import json
    fam, _ = _tools()
    np = fam.np
    want = np.load(out + "/swin.losses.npy")
    per = {}
    for line in open(metrics):
        r = json.loads(line)
        if r.get("kind") == "step" and r.get("role") == "worker":
            per.setdefault(r["step"], []).append(r["loss"])
    got = np.array([np.mean(per[k]) if len(per[k]) == 2 else np.nan for k in sorted(per)])
    e = fam.rel(got, want)
    print("  AdamW losses: pacer %s, torch %s: max_rel %.2e (tol %.0e)" %
          (" ".join("%.5f" % v for v in got), " ".join("%.5f" % v for v in want), e, LOSS_TOL))
    if got.shape != want.shape or not np.all(np.isfinite(got)) or e > LOSS_TOL:
        print("FAIL pacer's AdamW losses are not torch's")
        return 1
    return 0


def load(out, trained, pacer_logits):
    _, zoo = _tools()
    return zoo.load_into(nets()["SwinStage"](), "SwinStage", trained, out, pacer_logits, "relative_position_index",
                         LOAD_TOL)


def graphs(out):
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    ints = lambda name, v: helper.make_node("Constant", [], [name], value=numpy_helper.from_array(
        np.array(v, np.int64), name))
    flat = [helper.make_node("ReduceSum", ["y", "sum_axes"], ["logits"], keepdims=0)]
    table = numpy_helper.from_array(np.arange(24, dtype=np.float32).reshape(6, 4), "table")

    def model(nodes, inits=(), name="y"):
        g = helper.make_graph([ints("sum_axes", [2])] + nodes + flat, "swin44", [helper.make_tensor_value_info("input", TensorProto.FLOAT,
                                                                                     ["N", 4, 6])],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 4])], list(inits))
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])

    add = lambda c: helper.make_node("Add", ["input", c], ["y"])
    files = {
        "fold_huge": model([ints("s", [4096, 4096]), helper.make_node("ConstantOfShape", ["s"], ["c"]), add("c")]),
        "fold_range": model([ints("a", 0), ints("b", 1 << 40), ints("d", 1),
                             helper.make_node("Range", ["a", "b", "d"], ["r"]),
                             helper.make_node("Cast", ["r"], ["c"], to=1), add("c")]),
        "fold_div0": model([ints("a", [6]), ints("z", [0]), helper.make_node("Div", ["a", "z"], ["q"]),
                            helper.make_node("Cast", ["q"], ["c"], to=1), add("c")]),
        "fold_index": model([ints("i", [[60, 0, 1, 2, 3, 4], [0, 1, 2, 3, 4, 5], [0, 1, 2, 3, 4, 5],
                                        [0, 1, 2, 3, 4, 5]]),
                             helper.make_node("Gather", ["table", "i"], ["c"], axis=0), add("c")], [table]),
        "fold_scatter": model([ints("s", [4, 6]), helper.make_node("ConstantOfShape", ["s"], ["z"],
                                                                   value=numpy_helper.from_array(
                                                                       np.array([0.0], np.float32))),
                               ints("i", [[9, 0]]),
            helper.make_node("ScatterND", ["z", "i", "u"], ["c"]), add("c")],
            [numpy_helper.from_array(np.ones(1, np.float32), "u")]),
        "fold_param": model([ints("s", [4, 6]), helper.make_node("Reshape", ["table", "s"], ["t"]),
                             helper.make_node("Mul", ["t", "two"], ["c"]), add("c")],
                            [table, numpy_helper.from_array(np.array(2.0, np.float32), "two")]),
        "batch_times0": model([helper.make_node("Shape", ["input"], ["sh"]), ints("k0", 0),
                               helper.make_node("Gather", ["sh", "k0"], ["n"], axis=0), ints("zero", 0),
                               helper.make_node("Mul", ["n", "zero"], ["n0"]), ints("ax", [0]),
                               helper.make_node("Unsqueeze", ["n0", "ax"], ["n1"]), ints("rest", [24]),
                               helper.make_node("Concat", ["n1", "rest"], ["s2"], axis=0),
                               helper.make_node("Reshape", ["input", "s2"], ["y"])]),
        "batch_move": model([ints("lead", [-1, 2, 6]), helper.make_node("Reshape", ["input", "lead"], ["w"]),
                             helper.make_node("Transpose", ["w"], ["t"], perm=[1, 0, 2]),
                             helper.make_node("Relu", ["t"], ["y"])]),
        "layernorm_cut": model([ints("ax", [-1]), helper.make_node("ReduceMean", ["input"], ["m"], axes=[-1]),
                                helper.make_node("Sub", ["input", "m"], ["d"]),
                                helper.make_node("Pow", ["d", "two"], ["p"]),
                                helper.make_node("Div", ["d", "d"], ["y"])],
                               [numpy_helper.from_array(np.array(2.0, np.float32), "two")]),
        "bias_ok": model([ints("i", [[5 - j for j in range(6)]] * 4), ints("s2", [6, 4, 4]),
                          helper.make_node("Gather", ["table", "i"], ["g"], axis=0),
                          helper.make_node("Reshape", ["g", "s2"], ["r"]),
                          ints("z1", [0]), ints("o1", [1]), ints("two_ax", [2]),
                          helper.make_node("Slice", ["r", "z1", "o1", "two_ax"], ["sl"]),
                          helper.make_node("Squeeze", ["sl", "two_ax"], ["sq"]),
                          helper.make_node("Transpose", ["sq"], ["c"], perm=[1, 0]), add("c")], [table]),
    }
    for name, m in files.items():
        onnx.save(m, "%s/%s.onnx" % (out, name))
    print("onnx_swin: %d graphs written" % len(files))
    return 0


if __name__ == "__main__":
    a = sys.argv
    if len(a) == 3 and a[1] == "--graphs":
        sys.exit(graphs(a[2]))
    if len(a) == 9 and a[1] == "--adamw":
        sys.exit(adamw(a[2], int(a[3]), float(a[4]), float(a[5]), float(a[6]), float(a[7]), float(a[8])))
    if len(a) == 4 and a[1] == "--check-losses":
        sys.exit(check_losses(a[2], a[3]))
    if len(a) == 5 and a[1] == "--load":
        sys.exit(load(a[2], a[3], a[4]))
    print(__doc__)
    sys.exit(2)
