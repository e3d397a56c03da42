"""tests/tools/lora_torch.py - pacer's LoRA (model/lora.h) against a PyTorch LoRA written
here from the same weights, for tests/integration/lora.sh.

Usage: /usr/bin/python3 tests/tools/lora_torch.py TEXT L H E T RANK ALPHA LR TARGETS
    STEP1.safetensors STEP2.safetensors METRICS.jsonl MERGED.onnx
TEXT's first (windows x T + 1) bytes are the job's every window (training and validation
set alike, one global batch: every step sees all of them). STEP1 and STEP2 are pacer's
`lora.export: separate` exports after one and after two plain SGD steps (lr LR, no
momentum, no decay) of the same job (the same seed): the base tensors under nanoGPT's
names, the adapters under PEFT's (base_model.model.<module>.lora_A.weight, lora_B). Since B
starts at zero, A's first gradient is zero (dA = scale B^T dy x^T): STEP1's A is pacer's
initial A, which the torch module starts from, with B = 0 and STEP1's base weights.

Checks, each printed:
- the initial A: within PEFT's Kaiming-uniform bound 1 / sqrt(IN), and B zero before;
- the adapters' updates of step 1 (B) and step 2 (A and B) against torch's in float64;
- the validation loss after each step (METRICS.jsonl, rank 0's epoch records) against torch's;
- MERGED.onnx (pacer's merged export after step 2): each target's weight W + (alpha / rank)
  B A from STEP2's tensors, every other initializer STEP2's base tensor bit for bit.
Exits 0 when all hold, 1 otherwise, 77 when torch or onnx cannot be imported.
"""
import fnmatch
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import numpy as np
    import onnx
    from onnx import numpy_helper
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    import gpt_torch
    import st_torch
except Exception as e:  # pragma: no cover - depends on the machine
    print("lora_torch: torch or onnx not importable: %s" % e)
    sys.exit(77)

# Tolerances, derived. u = 2^-24, float32's unit roundoff.
# - An adapter's update is -lr times its gradient, a sum over the N = windows x T rows of the
#   batch (B's: scale sum_n dy_n (A x_n)^T; A's: scale sum_n B^T dy_n x_n^T). Summed in float32,
#   each element is off from the exact sum of its float32 terms by at most gamma_N =
#   N u / (1 - N u) of the sum of the terms' magnitudes (Higham, Accuracy and Stability, 3.1),
#   7.6e-6 for N = 128: the floor below (x 2, the two sums each term passes through).
# - The terms themselves (x_n and dy_n) come out of the float32 forward and backward through
#   layer norms, attention and GELU, each a float32 sum of at most 4E terms; how far that
#   carries on these weights is what torch's own float32 run of the same steps shows, so the
#   bound is the larger of the floor and GRAD_FACTOR times torch float32's distance from
#   float64 (pacer and torch sum in different orders: either may be off by that much).
# Both are relative to the largest element of torch's float64 update.
U = 2.0 ** -24
GRAD_FACTOR = 4.0
LOSS_TOL = 1e-5  # pacer's records carry 6 significant digits


def gamma(n):
    return n * U / (1 - n * U)


class LoRALinear(nn.Module):
    """PEFT's Linear: base(x) + scale * B(A(x)), the base frozen"""

    def __init__(self, base, A, B, scale):
        super().__init__()
        self.base = base
        self.A = nn.Parameter(A.clone())
        self.B = nn.Parameter(B.clone())
        self.scale = scale

    def forward(self, x):
        return self.base(x) + self.scale * F.linear(F.linear(x, self.A), self.B)


def build(base, adapters, L, H, E, T, scale, dtype):
    """gpt_torch's module with base's tensors, every target wrapped with its adapter"""
    net = gpt_torch.GPT(L, H, E, T, 256, True, True)
    sd = net.state_dict()
    with torch.no_grad():
        for name, a in base.items():
            sd[name].copy_(torch.from_numpy(a.astype(np.float64)).view_as(sd[name]))
    net = net.to(dtype)
    for p in net.parameters():
        p.requires_grad_(False)
    for module, (A, B) in adapters.items():
        parent, leaf = module.rsplit(".", 1)
        holder = net.get_submodule(parent)
        lin = getattr(holder, leaf)
        setattr(holder, leaf, LoRALinear(lin, torch.from_numpy(A).to(dtype), torch.from_numpy(B).to(dtype), scale))
    return net


def loss_of(net, x, y):
    logits = net(x)
    return F.cross_entropy(logits.view(-1, logits.size(-1)), y.reshape(-1))


def sgd(net, x, y, lr, steps):
    """steps of SGD on the adapters; their values and the loss after each step"""
    params = [p for p in net.parameters() if p.requires_grad]
    opt = torch.optim.SGD(params, lr=lr)
    states, losses = [], []
    for _ in range(steps):
        opt.zero_grad()
        loss_of(net, x, y).backward()
        opt.step()
        with torch.no_grad():
            losses.append(float(loss_of(net, x, y)))
        states.append({n: m for n, m in lora_values(net).items()})
    return states, losses


def lora_values(net):
    out = {}
    for name, mod in net.named_modules():
        if isinstance(mod, LoRALinear):
            out[name] = (mod.A.detach().double().numpy().copy(), mod.B.detach().double().numpy().copy())
    return out


def split(tensors):
    """a separate export into base tensors and {module: (A, B)}"""
    base, ad = {}, {}
    for name, a in tensors.items():
        if name.startswith("base_model.model.") and ".lora_" in name:
            module, which = name[len("base_model.model."):].rsplit(".lora_", 1)
            ad.setdefault(module, [None, None])["AB".index(which[0])] = a
        else:
            base[name] = a
    return base, {m: tuple(v) for m, v in ad.items()}


def rel(a, b):
    s = float(np.max(np.abs(b)))
    e = float(np.max(np.abs(a - b)))
    return e / s if s > 0 else e


def main(argv):
    if len(argv) != 14:
        print(__doc__)
        return 2
    text, (L, H, E, T, rank), alpha, lr = argv[1], (int(a) for a in argv[2:7]), float(argv[7]), float(argv[8])
    targets = argv[9].split(",")
    step1, step2, metrics, merged = argv[10:14]
    torch.set_num_threads(1)
    scale = alpha / rank
    data = open(text, "rb").read()
    windows = (len(data) - 1) // T
    ids = np.array([list(data[w * T: w * T + T + 1]) for w in range(windows)], dtype=np.int64)
    x, y = torch.from_numpy(ids[:, :-1].copy()), torch.from_numpy(ids[:, 1:].copy())
    N = windows * T
    fails = []

    def check(what, err, own, floor):
        tol = max(floor, GRAD_FACTOR * own)
        print("  %-52s max_rel %.2e (tol %.1e; torch float32 %.1e)" % (what, err, tol, own))
        if not err <= tol:
            fails.append("%s: %.3e > %.1e" % (what, err, tol))

    base1, ad1 = split(st_torch.read(step1)[0])
    base2, ad2 = split(st_torch.read(step2)[0])
    want = sorted(m for m in (n[: -len(".weight")] for n in base1 if n.endswith(".weight"))
                  if any(fnmatch.fnmatchcase(m + ".weight", g) for g in targets))
    if sorted(ad1) != want or sorted(ad2) != want:
        fails.append("adapters on %s and %s, the targets name %s" % (sorted(ad1), sorted(ad2), want))
        return report(fails)
    init = {}
    for m, (A, B) in ad1.items():
        IN = A.shape[1]
        if A.shape != (rank, IN) or B.shape[1] != rank:
            fails.append("%s: A %s, B %s; want (%d, IN) and (OUT, %d)" % (m, A.shape, B.shape, rank, rank))
        bound = 1.0 / math.sqrt(IN)
        print("  %-52s max |A| %.4f (PEFT's bound 1/sqrt(%d) = %.4f)" % (m + " initial A", np.abs(A).max(), IN, bound))
        if not (np.abs(A).max() <= bound and np.abs(A).max() > 0.5 * bound and A.std() > 0.25 * bound):
            fails.append("%s: the initial A is not U(-1/sqrt(IN), 1/sqrt(IN)) (max |A| %g)" % (m, np.abs(A).max()))
        init[m] = (A.astype(np.float64), np.zeros(B.shape))
    for name in base1:
        if base1[name].tobytes() != base2[name].tobytes():
            fails.append("base tensor %s changed between step 1 and step 2" % name)
    ref, ref_loss = sgd(build(base1, init, L, H, E, T, scale, torch.float64), x, y, lr, 2)
    f32, f32_loss = sgd(build(base1, {m: (a.astype(np.float32), b.astype(np.float32)) for m, (a, b) in init.items()},
                              L, H, E, T, scale, torch.float32), x, y, lr, 2)
    floor = 2 * gamma(N)
    for m in want:
        A0, B0 = init[m]
        for step, pacer, before in ((1, ad1, init), (2, ad2, ad1)):
            pb = before[m] if step == 1 else tuple(v.astype(np.float64) for v in before[m])
            tb = init[m] if step == 1 else ref[0][m]
            fb = init[m] if step == 1 else f32[0][m]
            for j, which in enumerate("AB"):
                if step == 1 and which == "A":
                    if pacer[m][0].tobytes() != ad1[m][0].tobytes():
                        fails.append("%s: A moved in step 1 (its gradient is zero while B is)" % m)
                    continue
                d_pacer = pacer[m][j].astype(np.float64) - pb[j]
                d_ref = ref[step - 1][m][j] - tb[j]
                d_f32 = f32[step - 1][m][j] - fb[j]
                check("step %d: %s's update of %s" % (step, which, m), rel(d_pacer, d_ref), rel(d_f32, d_ref), floor)
    recs = [json.loads(line) for line in open(metrics) if line.strip()]
    pacer_loss = [r["test_loss"] for r in recs if r.get("kind") == "epoch" and r.get("rank") == 0]
    if len(pacer_loss) != 2:
        fails.append("pacer recorded %d epoch losses, want 2" % len(pacer_loss))
    for i, (p, t, f) in enumerate(zip(pacer_loss, ref_loss, f32_loss)):
        tol = max(LOSS_TOL * abs(t), GRAD_FACTOR * abs(f - t))
        print("  loss after step %d: pacer %.6f torch %.6f (tol %.1e)" % (i + 1, p, t, tol))
        if not abs(p - t) <= tol:
            fails.append("loss after step %d: pacer %.6f, torch %.6f" % (i + 1, p, t))
    check_merged(merged, base2, ad2, scale, fails)
    return report(fails)


def check_merged(path, base, ad, scale, fails):
    """The merged weights are rounded once from double: each within u |W + scale B A| of the
    exact value, and pacer's double sum of rank products and numpy's differ from it by at
    most (rank + 2) 2^-53 (|W| + scale |B| |A|) each (gamma in double); the rest bit for bit."""
    got = {t.name: numpy_helper.to_array(t) for t in onnx.load(path).graph.initializer}
    worst = 0.0
    for name, W in base.items():
        if name not in got:
            fails.append("merged export: no initializer %s" % name)
            continue
        module = name[: -len(".weight")] if name.endswith(".weight") else None
        if module in ad:
            A, B = (v.astype(np.float64) for v in ad[module])
            want = W.astype(np.float64) + scale * (B @ A)
            err = np.abs(got[name].astype(np.float64) - want)
            mag = np.abs(W.astype(np.float64)) + scale * (np.abs(B) @ np.abs(A))
            bound = U * np.abs(want) + 2 * (A.shape[0] + 2) * 2.0 ** -53 * mag
            worst = max(worst, float(np.max(err / bound)))
            if not np.all(err <= bound):
                fails.append("merged %s: off by %.3e (bound u |W + sBA|)" % (name, float(np.max(err))))
        elif got[name].tobytes() != W.astype(np.float32).tobytes():
            fails.append("merged export: %s is not the base tensor bit for bit" % name)
    print("  merged export: every target within %.2f of its bound u |W + scale B A|; the rest bit for bit" % worst)


def report(fails):
    for f in fails:
        print("lora_torch: " + f)
    print("lora_torch: %s" % ("same within the tolerances" if not fails else "DIFFERENT"))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
