"""tests/tools/gpt_torch.py - pacer's built-in GPT (model/gpt.c) against a torch module of
the same shape from the same weights, for tests/integration/gpt_torch.sh.

The module is written here as nanoGPT writes it (GPT-2's pre-norm blocks: LayerNorm,
causal self-attention with a lower-triangular mask, LayerNorm, a GELU MLP 4x wide; learned
position embeddings; the head tied to the token embedding), with nanoGPT's state_dict
names, which pacer's tensors carry.

Usage: /usr/bin/python3 tests/tools/gpt_torch.py --grads GPT_TOOL OUTDIR TEXT L H E T TIE BIAS SEED
Cuts TEXT (a file; its bytes are the tokens, vocabulary 256) into 6 windows of T + 1 bytes,
runs GPT_TOOL (tests/tools/gpt_tool.c: pacer's GPT of that shape, initialised from SEED as
pacer-worker initialises it, one training forward and backward on the windows) and loads
its initial weights into the torch module, then compares pacer's logits and the gradient
of every parameter tensor with torch's in float64: max |pacer - torch| / max |torch| per
quantity within its tolerance, the larger of the named one (TOL) and GRAD_FACTOR times
torch's own float32 error on the same weights and windows (what float32 arithmetic costs
this network, measured rather than guessed).

Usage: /usr/bin/python3 tests/tools/gpt_torch.py --adamw GPT_TOOL OUTDIR TEXT L H E T TIE BIAS SEED
    METRICS.jsonl STEPS LR WEIGHT_DECAY BETA1 BETA2
Trains the torch module from the same initial weights with torch.optim.AdamW for STEPS
steps, each on every window of TEXT (the job's training and validation split are that
text, of exactly its global batch of windows: every step is the whole set, whichever rank
drew which window), two parameter groups as pacer's optimizer.no_decay "auto" (the 1-D
tensors, biases and layer norms, without decay), and compares the loss after each step
with pacer's (rank 0's epoch records in METRICS.jsonl: test_loss over the same windows):
within LOSS_TOL relative, or GRAD_FACTOR times torch's own float32 error on the same
trajectory where that is larger.
Exits 0 when all hold, 1 otherwise, 77 when torch cannot be imported.
"""
import json
import math
import os
import subprocess
import sys

try:
    import numpy as np
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except Exception as e:  # pragma: no cover - depends on the machine
    print("gpt_torch: torch not importable: %s" % e)
    sys.exit(77)

# Named tolerances, max |pacer - torch| / max |torch| per quantity (per tensor for the
# gradients). pacer computes in float32: a dot product of K terms carries at most about
# K x 6e-8 relative error (sqrt(K) x 6e-8 typically), K <= 4 E = 64 here (the MLP's
# projection), a few dozen such operations deep: logits within 1e-5 of float64. The
# gradients go back through the softmaxes and layer norms (a division by a standard
# deviation amplifies by up to the ratio of a row's largest element to its spread, ~10
# here): 1e-4. (Measured: both about 5e-7, as torch's own float32 run.) The named figures
# are floors: where torch's own float32 run is further from float64, GRAD_FACTOR times its
# error holds.
TOL = {"logits": 1e-5, "grad": 1e-4}
LOSS_TOL = 1e-5  # pacer's records carry 6 digits
GRAD_FACTOR = 4.0
WINDOWS = 6


class Attention(nn.Module):
    def __init__(self, E, H, T, bias):
        super().__init__()
        self.c_attn = nn.Linear(E, 3 * E, bias=bias)
        self.c_proj = nn.Linear(E, E, bias=bias)
        self.H = H
        self.register_buffer("mask", torch.tril(torch.ones(T, T)).view(1, 1, T, T))

    def forward(self, x):
        B, T, E = x.size()
        q, k, v = self.c_attn(x).split(E, dim=2)
        q, k, v = (a.view(B, T, self.H, E // self.H).transpose(1, 2) for a in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf"))
        y = F.softmax(att, dim=-1) @ v
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, E))


class MLP(nn.Module):
    def __init__(self, E, bias):
        super().__init__()
        self.c_fc = nn.Linear(E, 4 * E, bias=bias)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * E, E, bias=bias)

    def forward(self, x):
        return self.c_proj(self.gelu(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, E, H, T, bias):
        super().__init__()
        self.ln_1 = nn.LayerNorm(E)
        self.attn = Attention(E, H, T, bias)
        self.ln_2 = nn.LayerNorm(E)
        self.mlp = MLP(E, bias)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, L, H, E, T, V, tie, bias):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(V, E), wpe=nn.Embedding(T, E),
            h=nn.ModuleList([Block(E, H, T, bias) for _ in range(L)]), ln_f=nn.LayerNorm(E)))
        self.lm_head = nn.Linear(E, V, bias=False)
        if tie:
            self.lm_head.weight = self.transformer.wte.weight

    def forward(self, idx):
        T = idx.size(1)
        pos = torch.arange(0, T, dtype=torch.long)
        x = self.transformer.wte(idx) + self.transformer.wpe(pos)
        for b in self.transformer.h:
            x = b(x)
        return self.lm_head(self.transformer.ln_f(x))


def setup(tool, out, text, L, H, E, T, tie, bias, seed, windows):
    """windows of text into out/ids.i32, pacer's GPT run on them by tool; returns the
    ids (windows, T + 1) and pacer's tensor names with their element counts"""
    data = open(text, "rb").read()[: windows * T + 1]
    ids = np.array([list(data[w * T: w * T + T + 1]) for w in range(windows)], dtype=np.int32)
    ids.tofile(os.path.join(out, "ids.i32"))
    subprocess.run([tool, str(L), str(H), str(E), str(T), "256", str(tie), str(bias), str(seed), out], check=True)
    names = [(l.split()[0], int(l.split()[1])) for l in open(os.path.join(out, "names.txt"))]
    return ids, names


def build(out, names, L, H, E, T, tie, bias, dtype):
    """the torch module with pacer's initial weights (out/init.f32), in dtype"""
    torch.manual_seed(0)
    net = GPT(L, H, E, T, 256, bool(tie), bool(bias)).to(dtype)
    flat = np.fromfile(os.path.join(out, "init.f32"), dtype=np.float32)
    sd = net.state_dict()
    at = 0
    with torch.no_grad():
        for name, n in names:
            if name not in sd or sd[name].numel() != n:
                raise SystemExit("gpt_torch: pacer's tensor %s (%d) is not the module's" % (name, n))
            sd[name].copy_(torch.from_numpy(flat[at: at + n].astype(np.float64)).view_as(sd[name]))
            at += n
    if at != flat.size:
        raise SystemExit("gpt_torch: %d floats in init.f32, the tensors hold %d" % (flat.size, at))
    return net


def grads_of(net, ids, names):
    x, y = torch.from_numpy(ids[:, :-1].astype(np.int64)), torch.from_numpy(ids[:, 1:].astype(np.int64))
    net.zero_grad()
    logits = net(x)
    F.cross_entropy(logits.view(-1, logits.size(-1)), y.reshape(-1)).backward()
    params = dict(net.named_parameters())
    return logits.detach().double().numpy(), {n: params[n].grad.double().numpy().ravel() for n, _ in names}


def rel(a, b):
    s = float(np.max(np.abs(b)))
    e = float(np.max(np.abs(a - b)))
    return e / s if s > 0 else e


def check_grads(tool, out, text, L, H, E, T, tie, bias, seed):
    ids, names = setup(tool, out, text, L, H, E, T, tie, bias, seed, WINDOWS)
    ref_logits, ref = grads_of(build(out, names, L, H, E, T, tie, bias, torch.float64), ids, names)
    f32_logits, f32 = grads_of(build(out, names, L, H, E, T, tie, bias, torch.float32), ids, names)
    logits = np.fromfile(os.path.join(out, "logits.f32"), dtype=np.float32).astype(np.float64)
    flat = np.fromfile(os.path.join(out, "grads.f32"), dtype=np.float32).astype(np.float64)
    fails = []

    def check(what, err, own, named):
        tol = max(named, GRAD_FACTOR * own)
        print("  %-42s max_rel %.2e (tol %.1e; torch float32 %.1e)" % (what, err, tol, own))
        if not err <= tol:
            fails.append("%s: %.3e > %.1e" % (what, err, tol))

    check("logits", rel(logits, ref_logits.ravel()), rel(f32_logits.ravel(), ref_logits.ravel()), TOL["logits"])
    at = 0
    for name, n in names:
        check("grad " + name, rel(flat[at: at + n], ref[name]), rel(f32[name], ref[name]), TOL["grad"])
        at += n
    return fails


def train(net, ids, steps, lr, wd, betas):
    """AdamW on every window each step; the loss over them after each step"""
    x, y = torch.from_numpy(ids[:, :-1].astype(np.int64)), torch.from_numpy(ids[:, 1:].astype(np.int64))
    params = list(net.parameters())
    groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": wd},
              {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=lr, betas=betas, eps=1e-8)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        logits = net(x)
        F.cross_entropy(logits.view(-1, logits.size(-1)), y.reshape(-1)).backward()
        opt.step()
        with torch.no_grad():
            logits = net(x)
            losses.append(float(F.cross_entropy(logits.view(-1, logits.size(-1)), y.reshape(-1))))
    return losses


def check_adamw(tool, out, text, L, H, E, T, tie, bias, seed, metrics, steps, lr, wd, b1, b2):
    data = open(text, "rb").read()
    windows = (len(data) - 1) // T
    ids, names = setup(tool, out, text, L, H, E, T, tie, bias, seed, windows)
    ref = train(build(out, names, L, H, E, T, tie, bias, torch.float64), ids, steps, lr, wd, (b1, b2))
    f32 = train(build(out, names, L, H, E, T, tie, bias, torch.float32), ids, steps, lr, wd, (b1, b2))
    recs = [json.loads(line) for line in open(metrics) if line.strip()]
    pacer = [r["test_loss"] for r in recs if r.get("kind") == "epoch" and r.get("rank") == 0]
    if len(pacer) != steps:
        return ["pacer recorded %d epoch losses, want %d" % (len(pacer), steps)]
    fails = []
    for i, (p, t, f) in enumerate(zip(pacer, ref, f32)):
        tol = max(LOSS_TOL * abs(t), GRAD_FACTOR * abs(f - t))
        print("  after step %2d: pacer %.6f torch %.6f |difference| %.1e (tol %.1e; torch float32 %.1e)" %
              (i + 1, p, t, abs(p - t), tol, abs(f - t)))
        if not abs(p - t) <= tol:
            fails.append("loss after step %d: %.6f, torch %.6f" % (i + 1, p, t))
    if not ref[-1] < ref[0]:
        fails.append("torch's loss did not fall: %s" % ref)
    return fails


def main(argv):
    if len(argv) < 11 or argv[1] not in ("--grads", "--adamw"):
        print(__doc__)
        return 2
    tool, out, text = argv[2], argv[3], argv[4]
    L, H, E, T, tie, bias, seed = (int(a) for a in argv[5:12])
    torch.set_num_threads(1)
    if argv[1] == "--grads":
        fails = check_grads(tool, out, text, L, H, E, T, tie, bias, seed)
    else:
        metrics, steps = argv[12], int(argv[13])
        lr, wd, b1, b2 = (float(a) for a in argv[14:18])
        fails = check_adamw(tool, out, text, L, H, E, T, tie, bias, seed, metrics, steps, lr, wd, b1, b2)
    for f in fails:
        print("gpt_torch: " + f)
    print("gpt_torch: %s" % ("same within the tolerances" if not fails else "DIFFERENT"))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
