"""tests/tools/adamw_torch.py - pacer's AdamW against torch.optim.AdamW (issue 44), for
tests/integration/adamw_torch.sh.

Usage: /usr/bin/python3 tests/tools/adamw_torch.py --export OUTDIR
Writes into OUTDIR, from a fixed seed:
  adamw_net.onnx  a small network (convolution with bias, ReLU, max pooling, two Linear
                  layers with biases), 1x28x28 -> 10, exported for training as a PyTorch
                  user would (opset 13, no constant folding);
  data.npz        64 training images (uint8, labels i % 10) and the same 64 as the test
                  split: with 2 workers of batch 32 every step is the whole set, so the
                  gradient does not depend on which rank drew which sample.

Usage: /usr/bin/python3 tests/tools/adamw_torch.py --check OUTDIR METRICS.jsonl TRAINED.onnx
    STEPS LR WEIGHT_DECAY BETA1 BETA2 LABEL_SMOOTHING
Trains the same network from the file's weights for STEPS steps on the whole set with
torch.optim.AdamW, two parameter groups as pacer's optimizer.no_decay "auto" (weights
decay, biases do not) and CrossEntropyLoss(label_smoothing=...), and compares:
  - the loss after each step with pacer's (rank 0's epoch records: each epoch is one step,
    and the test split is the training set, so test_loss is the smoothed loss of the whole
    set after that step; the network has no batch norm or dropout, so evaluation and
    training forwards agree): relative difference <= LOSS_TOL;
  - every trained tensor with pacer's (TRAINED.onnx's initializers): at least
    WEIGHT_SHARE of each tensor's elements within WEIGHT_TOL, and every element within
    WEIGHT_BOUND. AdamW's step is lr * m / sqrt(v), about lr * sign(g) for any gradient
    however small: an element whose gradient is ~0 (a unit no image activates) moves by
    up to lr a step on the sign of a rounding difference (2 of 21632 here, by 4e-4);
  - and, so that the groups are shown to matter, the biases of a torch run that decays
    every tensor (plain AdamW) are further than WEIGHT_TOL from pacer's.
Exits 0 when all hold, 1 otherwise, 77 when torch or onnx cannot be imported.
"""
import json
import sys

try:
    import numpy as np
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    import onnx
    from onnx import numpy_helper
except Exception as e:  # pragma: no cover - depends on the machine
    print("adamw_torch: torch/onnx not importable: %s" % e)
    sys.exit(77)

# Both sides compute in float32 with other summation orders (OpenBLAS vs torch's kernels);
# measured on this network over 6 steps: losses within 1e-6 relative (pacer's records
# carry 6 digits), 21630 of 21632 fc1 weights within 1e-5 (the others: see above).
LOSS_TOL = 1e-5
WEIGHT_TOL = 1e-5
WEIGHT_SHARE = 0.999
N = 64


class AdamWNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3)
        self.fc1 = nn.Linear(4 * 13 * 13, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv(x)), 2)
        return self.fc2(F.relu(self.fc1(torch.flatten(x, 1))))


def export(out):
    torch.manual_seed(44)
    net = AdamWNet()
    x = torch.zeros(1, 1, 28, 28)
    torch.onnx.export(net, x, out + "/adamw_net.onnx", opset_version=13, do_constant_folding=False,
                      training=torch.onnx.TrainingMode.TRAINING, input_names=["input"], output_names=["logits"])
    rng = np.random.default_rng(44)
    xs = rng.integers(0, 256, size=(N, 28, 28), dtype=np.uint8)
    ys = (np.arange(N) % 10).astype(np.int64)
    np.savez_compressed(out + "/data.npz", x_train=xs, y_train=ys, x_test=xs, y_test=ys)
    print("adamw_torch: exported adamw_net.onnx and data.npz (%d images)" % N)


def initializers(path):
    return {t.name: numpy_helper.to_array(t) for t in onnx.load(path).graph.initializer}


def train(out, steps, lr, wd, betas, ls, groups, make=AdamWNet, path=None):
    """make: the module (another test's network, onnx_vit.py's), path its ONNX file"""
    net = make()
    init = initializers(path or out + "/adamw_net.onnx")
    net.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in init.items()}, strict=True)
    d = np.load(out + "/data.npz")
    x = torch.from_numpy(d["x_train"].astype(np.float32) / np.float32(255.0))
    x = x.unsqueeze(1) if x.dim() == 3 else x  # (N, H, W) grey, or (N, C, H, W)
    y = torch.from_numpy(d["y_train"])
    decay = [p for n, p in net.named_parameters() if not (groups and p.dim() == 1)]
    exempt = [p for n, p in net.named_parameters() if groups and p.dim() == 1]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": wd}, {"params": exempt, "weight_decay": 0.0}],
                            lr=lr, betas=betas, eps=1e-8)
    crit = nn.CrossEntropyLoss(label_smoothing=ls)
    losses = []  # after each step
    for _ in range(steps):
        opt.zero_grad()
        loss = crit(net(x), y)
        loss.backward()
        opt.step()
        with torch.no_grad():
            losses.append(float(crit(net(x), y)))
    return losses, {k: v.detach().numpy() for k, v in net.state_dict().items()}


def check(out, metrics, trained, steps, lr, wd, b1, b2, ls, make=AdamWNet, path=None, exempt=None):
    """exempt: {tensor: boolean mask} of elements whose gradient is 0 in exact arithmetic
    (the step then has the sign of rounding): held to the bound only"""
    losses, weights = train(out, steps, lr, wd, (b1, b2), ls, True, make, path)
    _, plain = train(out, steps, lr, wd, (b1, b2), ls, False, make, path)
    recs = [json.loads(line) for line in open(metrics) if line.strip()]
    pacer = [r["test_loss"] for r in recs if r.get("kind") == "epoch" and r.get("rank") == 0]
    ok = True
    if len(pacer) != steps:
        print("adamw_torch: pacer recorded %d epoch losses, want %d" % (len(pacer), steps))
        return False
    for i, (p, t) in enumerate(zip(pacer, losses)):
        rel = abs(p - t) / abs(t)
        bad = rel > LOSS_TOL
        ok &= not bad
        print("after step %d: pacer loss %.6f torch %.6f relative %.1e%s" %
              (i + 1, p, t, rel, "  <- over %g" % LOSS_TOL if bad else ""))
    got = initializers(trained)
    bound = 2 * lr * steps
    for k, t in weights.items():
        d = np.abs(got[k] - t)
        keep = ~exempt[k] if exempt and k in exempt else np.ones(d.shape, bool)
        share, err = float(np.mean(d[keep] <= WEIGHT_TOL)), float(np.max(d))
        bad = share < WEIGHT_SHARE or err > bound
        ok &= not bad
        print("%s: %.4f of %d within %g, largest |pacer - torch| %.1e (bound %g)%s" %
              (k, share, d.size, WEIGHT_TOL, err, bound, "  <- DIFFERENT" if bad else ""))
    for k in weights:
        if not k.endswith("bias"):
            continue
        err = float(np.max(np.abs(got[k] - plain[k])))
        print("%s: largest difference from torch's decay of every tensor %.1e" % (k, err))
        if err <= WEIGHT_TOL:
            print("adamw_torch: %s is as close to a run that decays biases: the groups are not shown" % k)
            ok = False
    return ok


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--export":
        export(sys.argv[2])
        return 0
    if len(sys.argv) == 11 and sys.argv[1] == "--check":
        a = sys.argv
        ok = check(a[2], a[3], a[4], int(a[5]), float(a[6]), float(a[7]), float(a[8]), float(a[9]), float(a[10]))
        print("adamw_torch: %s (losses within %g relative, %g of each tensor within %g)" %
              ("same" if ok else "DIFFERENT", LOSS_TOL, WEIGHT_SHARE, WEIGHT_TOL))
        return 0 if ok else 1
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
