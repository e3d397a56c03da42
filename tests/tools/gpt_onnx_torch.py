"""tests/tools/gpt_onnx_torch.py - a nanoGPT-style torch module exported by torch.onnx
(opset 13 or 17) and imported by pacer, against torch from the same weights, for
tests/integration/gpt_onnx_torch.sh.

The module is gpt_torch.py's (nn.Embedding over int64 ids, learned positions from
torch.arange, pre-norm blocks of LayerNorm, causal self-attention with a registered
lower-triangular mask applied by masked_fill, a GELU MLP, the head tied to the token
embedding), 2 blocks, 2 heads, width 32, block 16, vocabulary 64, with random weights
(every tensor, the layer norms' too, so torch's exporter has no two equal initializers to
merge). Exported with do_constant_folding=False (the weights keep their state_dict names).

Usage: /usr/bin/python3 tests/tools/gpt_onnx_torch.py GPT_TOOL OUTDIR [STYLE:]OPSET[,...]
STYLE nanogpt (the default, the module above) or gpt2 (GPT-2's blocks as Hugging Face
writes them without Conv1D: a boolean mask buffer applied by torch.where with finfo.min, the
tanh GELU, biases, an untied head). For each, in OUTDIR/oOPSET (OUTDIR/gpt2_oOPSET): writes gpt.onnx and OUTDIR/ids.i32 (6 windows of 17 random ids), runs
GPT_TOOL --onnx (pacer's import, one training forward and backward over every position),
and compares pacer's logits and the gradient of every parameter tensor with torch's in
float64: max |pacer - torch| / max |torch| per quantity within the larger of the named
tolerance (gpt_torch.TOL) and GRAD_FACTOR times torch's own float32 error on the same
weights and windows. The tied embedding's gradient is the sum of its two paths in both.

Usage: /usr/bin/python3 tests/tools/gpt_onnx_torch.py --adamw ONNX_DIR TRAIN_BIN METRICS.jsonl STEPS LR WD B1 B2
Trains the module of ONNX_DIR/gpt.onnx (the same weights) with torch.optim.AdamW for STEPS
steps, each on every window of TRAIN_BIN (uint16 ids, nanoGPT's headerless array: the job's
training and validation split, exactly its global batch of windows), the 1-D tensors
without decay as pacer's optimizer.no_decay "auto", and compares the loss after each step
with pacer's (rank 0's epoch records: test_loss over the same windows) within 1e-2
(llm.c's criterion for its own 10 steps against torch), and says how far they are.

Usage: /usr/bin/python3 tests/tools/gpt_onnx_torch.py --export GPT_TOOL TRAINED.onnx OUTDIR
The file pacer-worker --export-onnx wrote after training: its initializers loaded into the
module by load_state_dict(strict=True) (the tied table once), and pacer's logits of it
(GPT_TOOL --onnx on 6 windows of random ids) within gpt_torch.TOL's logits tolerance of
torch's float64 from those weights; when node and tests/onnxrt's onnxruntime-node are
there, onnxruntime's logits of the file (int64 ids) too.
Exits 0 when all hold, 1 otherwise, 77 when torch or onnx cannot be imported.
"""
import math
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import numpy as np
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    import gpt_torch as gt
except (ImportError, SystemExit) as e:  # pragma: no cover - depends on the machine
    print("gpt_onnx_torch: torch not importable: %s" % e)
    sys.exit(77)

L, H, E, T, V = 2, 2, 32, 16, 64
WINDOWS = 6


class Attention2(nn.Module):
    """GPT-2's attention as Hugging Face writes it (Conv1D-free): a boolean lower-triangular
    buffer named bias, torch.where(kept, scores, finfo.min), scores divided by sqrt(D)"""

    def __init__(self):
        super().__init__()
        self.c_attn = nn.Linear(E, 3 * E)
        self.c_proj = nn.Linear(E, E)
        self.register_buffer("bias", torch.tril(torch.ones(T, T, dtype=torch.bool)).view(1, 1, T, T))

    def forward(self, x):
        B, Tx, Ex = x.size()
        q, k, v = self.c_attn(x).split(Ex, dim=2)
        q, k, v = (a.view(B, Tx, H, Ex // H).transpose(1, 2) for a in (q, k, v))
        att = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(v.size(-1))
        low = torch.tensor(torch.finfo(att.dtype).min, dtype=att.dtype)
        att = torch.where(self.bias[:, :, :Tx, :Tx], att, low)
        return self.c_proj((F.softmax(att, dim=-1) @ v).transpose(1, 2).contiguous().view(B, Tx, Ex))


class MLP2(nn.Module):
    """GPT-2's MLP: the tanh approximation of GELU (gelu_new), decomposed by the exporter"""

    def __init__(self):
        super().__init__()
        self.c_fc = nn.Linear(E, 4 * E)
        self.act = nn.GELU(approximate="tanh")
        self.c_proj = nn.Linear(4 * E, E)

    def forward(self, x):
        return self.c_proj(self.act(self.c_fc(x)))


def module(dtype, style="nanogpt"):
    """nanogpt: gpt_torch.py's module, head tied; gpt2: GPT-2's blocks (above), with biases,
    pre-norm, and an untied head"""
    torch.manual_seed(1)
    net = gt.GPT(L, H, E, T, V, style == "nanogpt", True)
    if style == "gpt2":
        for b in net.transformer.h:
            b.attn, b.mlp = Attention2(), MLP2()
    with torch.no_grad():
        for name, p in net.named_parameters():
            # layer norms near 1 and 0, the rest GPT-2's scale: every tensor distinct
            p.copy_((1.0 if name.endswith("ln_1.weight") or name.endswith("ln_2.weight") or
                     name.endswith("ln_f.weight") else 0.0) + 0.1 * torch.randn_like(p))
    return net.to(dtype)


def adamw(argv):
    import json
    out, train_bin, metrics = argv[2], argv[3], argv[4]
    steps, lr, wd, b1, b2 = int(argv[5]), float(argv[6]), float(argv[7]), float(argv[8]), float(argv[9])
    data = np.fromfile(train_bin, dtype=np.uint16).astype(np.int32)
    windows = (data.size - 1) // T
    ids = np.array([data[w * T: w * T + T + 1] for w in range(windows)], dtype=np.int32)
    ref = gt.train(module(torch.float64), ids, steps, lr, wd, (b1, b2))
    recs = [json.loads(line) for line in open(metrics) if line.strip()]
    pacer = [r["test_loss"] for r in recs if r.get("kind") == "epoch" and r.get("rank") == 0]
    if len(pacer) != steps:
        print("gpt_onnx_torch: pacer recorded %d epoch losses, want %d" % (len(pacer), steps))
        return 1
    fails = []
    for i, (p, t) in enumerate(zip(pacer, ref)):
        print("  after step %2d: pacer %.6f torch %.6f |difference| %.1e (tol 1e-2)" % (i + 1, p, t, abs(p - t)))
        if not abs(p - t) <= 1e-2:
            fails.append("loss after step %d: %.6f, torch %.6f" % (i + 1, p, t))
    if not ref[-1] < ref[0]:
        fails.append("torch's loss did not fall: %s" % ref)
    for f in fails:
        print("gpt_onnx_torch: " + f)
    print("gpt_onnx_torch: AdamW %s" % ("same within 1e-2" if not fails else "DIFFERENT"))
    return 1 if fails else 0


def export(argv):
    import shutil
    import onnx
    from onnx import numpy_helper
    tool, trained, out = argv[2], argv[3], argv[4]
    inits = {t.name: numpy_helper.to_array(t) for t in onnx.load(trained).graph.initializer}
    # the tied head is the token table itself (one parameter; state_dict names it twice)
    if "lm_head.weight" not in inits and "transformer.wte.weight" in inits:
        inits["lm_head.weight"] = inits["transformer.wte.weight"]
    net = module(torch.float64)
    sd = {k: torch.from_numpy(inits[k].astype(np.float64)) for k in net.state_dict() if k in inits}
    missing = [k for k in net.state_dict() if k not in inits]
    if missing:
        print("gpt_onnx_torch: the exported file lacks %s" % missing)
        return 1
    net.load_state_dict(sd, strict=True)
    rng = np.random.default_rng(11)
    ids = rng.integers(0, V, size=(WINDOWS, T + 1)).astype(np.int32)
    ids.tofile(os.path.join(out, "ids.i32"))
    subprocess.run([tool, "--onnx", trained, out], check=True)
    with torch.no_grad():
        ref = net(torch.from_numpy(ids[:, :-1].astype(np.int64))).numpy().ravel()
    fails = []
    got = {"pacer": np.fromfile(os.path.join(out, "logits.f32"), dtype=np.float32)}
    node = shutil.which("node")
    here = os.path.dirname(os.path.abspath(__file__))
    ort_dir = os.path.join(here, "..", "onnxrt")
    if node and os.path.isdir(os.path.join(ort_dir, "node_modules", "onnxruntime-node")):
        subprocess.run([node, os.path.join(ort_dir, "lm_logits.mjs"), trained, os.path.join(out, "ids.i32"),
                        str(T), os.path.join(out, "ort.f32")], check=True)
        got["onnxruntime"] = np.fromfile(os.path.join(out, "ort.f32"), dtype=np.float32)
    else:
        print("  (onnxruntime-node is not installed under tests/onnxrt: its check is skipped)")
    for who, logits in got.items():
        err = gt.rel(logits.astype(np.float64), ref) if logits.size == ref.size else float("inf")
        print("  %-12s logits of the exported file: max_rel %.2e (tol %.1e)" % (who, err, gt.TOL["logits"]))
        if not err <= gt.TOL["logits"]:
            fails.append("%s's logits differ from torch's of the exported weights: %.3e" % (who, err))
    for f in fails:
        print("gpt_onnx_torch: " + f)
    print("gpt_onnx_torch: export %s" % ("agrees" if not fails else "DIFFERENT"))
    return 1 if fails else 0


def main(argv):
    if len(argv) == 5 and argv[1] == "--export":
        torch.set_num_threads(1)
        return export(argv)
    if len(argv) == 10 and argv[1] == "--adamw":
        torch.set_num_threads(1)
        return adamw(argv)
    if len(argv) != 4:
        print(__doc__)
        return 2
    torch.set_num_threads(1)
    rc = 0
    for item in argv[3].split(","):
        style, opset = item.split(":") if ":" in item else ("nanogpt", item)
        out = os.path.join(argv[2], "o%s" % opset if style == "nanogpt" else "%s_o%s" % (style, opset))
        os.makedirs(out, exist_ok=True)
        rc |= compare(argv[1], out, int(opset), style)
    return rc


def compare(tool, out, opset, style):
    net = module(torch.float32, style)
    path = os.path.join(out, "gpt.onnx")
    torch.onnx.export(net, (torch.zeros(2, T, dtype=torch.long),), path, opset_version=opset,
                      do_constant_folding=False, training=torch.onnx.TrainingMode.PRESERVE,
                      input_names=["idx"], output_names=["logits"],
                      dynamic_axes={"idx": {0: "N"}, "logits": {0: "N"}})
    rng = np.random.default_rng(7)
    ids = rng.integers(0, V, size=(WINDOWS, T + 1)).astype(np.int32)
    ids.tofile(os.path.join(out, "ids.i32"))
    subprocess.run([tool, "--onnx", path, out], check=True)
    names = [(l.split()[0], int(l.split()[1])) for l in open(os.path.join(out, "names.txt"))]
    params = dict(net.named_parameters())
    for name, n in names:
        if name not in params or params[name].numel() != n:
            print("gpt_onnx_torch: pacer's tensor %s (%d) is not the module's" % (name, n))
            return 1
    if len(names) != len(params):
        print("gpt_onnx_torch: pacer has %d parameter tensors, torch %d (the tie lost?)" % (len(names), len(params)))
        return 1
    init = np.fromfile(os.path.join(out, "init.f32"), dtype=np.float32)
    at = 0
    for name, n in names:
        want = params[name].detach().numpy().ravel()
        if not np.array_equal(init[at: at + n], want):
            print("gpt_onnx_torch: pacer's %s is not the file's weights" % name)
            return 1
        at += n
    ref_logits, ref = gt.grads_of(module(torch.float64, style), ids, names)
    f32_logits, f32 = gt.grads_of(module(torch.float32, style), ids, names)
    logits = np.fromfile(os.path.join(out, "logits.f32"), dtype=np.float32).astype(np.float64)
    flat = np.fromfile(os.path.join(out, "grads.f32"), dtype=np.float32).astype(np.float64)
    fails = []

    def check(what, err, own, named):
        tol = max(named, gt.GRAD_FACTOR * own)
        print("  %-42s max_rel %.2e (tol %.1e; torch float32 %.1e)" % (what, err, tol, own))
        if not err <= tol:
            fails.append("%s: %.3e > %.1e" % (what, err, tol))

    check("logits", gt.rel(logits, ref_logits.ravel()), gt.rel(f32_logits.ravel(), ref_logits.ravel()),
          gt.TOL["logits"])
    at = 0
    for name, n in names:
        check("grad " + name, gt.rel(flat[at: at + n], ref[name]), gt.rel(f32[name], ref[name]), gt.TOL["grad"])
        at += n
    for f in fails:
        print("gpt_onnx_torch: " + f)
    print("gpt_onnx_torch: %s opset %d %s" % (style, opset, "same within the tolerances" if not fails else "DIFFERENT"))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
