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
    training forwards agree), against torch's float64 run: within LOSS_TOL relative, or
    GRAD_FACTOR times torch's own float32 error where that is larger;
  - every trained tensor with pacer's (TRAINED.onnx's initializers): every element within
    its own bound, WEIGHT_TOL or, where AdamW amplifies a rounding of the gradient (a
    gradient ~0: a unit no image activates, an element whose sign rounding decides), the
    bound check() derives from float32's error and the element's second moment, at most
    2 lr a step;
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

# The reference is torch in float64; the bounds follow from float32's own error on the same
# trajectory (check()'s docstring). WEIGHT_TOL: the floor of an element's bound, about 0.3%
# of a step at lr 3e-3, what float32's rounding of the weights and update leaves. LOSS_TOL:
# the floor of a loss's bound (pacer's records carry 6 digits). GRAD_FACTOR: pacer's float32
# gradients and losses are held to no worse than that many times torch's float32 ones.
# UPDATE_GAIN: an error in g moves m_hat / sqrt(v_hat) through both moments.
LOSS_TOL = 1e-5
WEIGHT_TOL = 1e-5
GRAD_FACTOR = 4.0
UPDATE_GAIN = 2.0
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


def train(out, steps, lr, wd, betas, ls, groups, make=AdamWNet, path=None, dtype=torch.float32, scale=1.0):
    """make: the module (another test's network, onnx_vit.py's), path its ONNX file. Runs in
    dtype, the inputs scaled by scale; returns the loss after each step, the final weights
    and, per step, each parameter's gradient and AdamW's bias-corrected second moment."""
    net = make()
    init = initializers(path or out + "/adamw_net.onnx")
    net.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in init.items()}, strict=True)
    net = net.to(dtype)
    d = np.load(out + "/data.npz")
    x = torch.from_numpy(d["x_train"].astype(np.float32) / np.float32(255.0))
    x = (x.unsqueeze(1) if x.dim() == 3 else x).to(dtype) * scale  # (N, H, W) grey, or (N, C, H, W)
    y = torch.from_numpy(d["y_train"])
    named = list(net.named_parameters())
    decay = [p for n, p in named if not (groups and p.dim() == 1)]
    exempt = [p for n, p in named if groups and p.dim() == 1]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": wd}, {"params": exempt, "weight_decay": 0.0}],
                            lr=lr, betas=betas, eps=1e-8)
    crit = nn.CrossEntropyLoss(label_smoothing=ls)
    losses, grads, vhat = [], [], []  # after each step
    for t in range(1, steps + 1):
        opt.zero_grad()
        loss = crit(net(x), y)
        loss.backward()
        grads.append({n: p.grad.detach().double().numpy().copy() for n, p in named})
        opt.step()
        vhat.append({n: opt.state[p]["exp_avg_sq"].detach().double().numpy() / (1 - betas[1] ** t)
                     for n, p in named})
        with torch.no_grad():
            losses.append(float(crit(net(x), y)))
    weights = {k: v.detach().double().numpy() for k, v in net.state_dict().items()}
    return losses, weights, grads, vhat


def bounds(out, steps, lr, wd, betas, ls, make, path):
    """torch's float64 run (the reference) and, per trained element, how far a float32 run
    may land from it: see check()."""
    ref = train(out, steps, lr, wd, betas, ls, True, make, path, torch.float64)
    losses, weights, grads, vhat = ref
    # float32's own gradient error per step and tensor: the largest of torch's float32 runs
    # from the same weights on x and on x moved by one part in 10^7 either way
    gerr = [{n: np.zeros(g[n].shape) for n in g} for g in grads]
    lerr = [0.0] * steps
    for scale in (1.0, 1.0 + 1e-7, 1.0 - 1e-7):
        l32, _, g32, _ = train(out, steps, lr, wd, betas, ls, True, make, path, torch.float32, scale)
        for t in range(steps):
            lerr[t] = max(lerr[t], abs(l32[t] - losses[t]))
            for n in grads[t]:
                gerr[t][n] = np.maximum(gerr[t][n], np.abs(g32[t][n] - grads[t][n]))
    tol = {}
    for n in weights:
        if n not in grads[0]:
            continue
        b = np.zeros(grads[0][n].shape)
        e = 0.0
        for t in range(steps):
            e = np.maximum(e, GRAD_FACTOR * gerr[t][n])  # what every moment up to step t has taken in
            b += np.minimum(2 * lr, lr * UPDATE_GAIN * e / (np.sqrt(vhat[t][n]) + 1e-8))
        tol[n] = np.maximum(WEIGHT_TOL, b)
    return losses, weights, tol, [max(LOSS_TOL * abs(v), GRAD_FACTOR * e) for v, e in zip(losses, lerr)]


def check(out, metrics, trained, steps, lr, wd, b1, b2, ls, make=AdamWNet, path=None, exempt=None):
    """exempt: {tensor: boolean mask} of elements whose gradient is 0 in exact arithmetic
    (the step then has the sign of rounding): held to 2 lr a step only.

    The reference is torch's float64 run. pacer's float32 gradients differ from it by
    rounding, and AdamW turns a gradient error dg into a step error of about
    lr * dg / sqrt(v_hat) (through m_hat, and through sqrt(v_hat) by as much again where
    |m_hat| ~ sqrt(v_hat): UPDATE_GAIN), never more than 2 lr a step (the step is lr times a
    ratio within [-1, 1] up to bias correction). dg is bounded per step and tensor by
    GRAD_FACTOR times torch's own float32 error on the same trajectory, carried into the
    later steps (the moments keep it). Each element's bound is the sum over the steps, at
    least WEIGHT_TOL; an element whose gradient is rounding (sqrt(v_hat) tiny) gets the
    2 lr cap: Adam's sign-sensitive elements, by construction."""
    losses, weights, tol, ltol = bounds(out, steps, lr, wd, (b1, b2), ls, make, path)
    _, plain, _, _ = train(out, steps, lr, wd, (b1, b2), ls, False, make, path, torch.float64)
    recs = [json.loads(line) for line in open(metrics) if line.strip()]
    pacer = [r["test_loss"] for r in recs if r.get("kind") == "epoch" and r.get("rank") == 0]
    ok = True
    if len(pacer) != steps:
        print("adamw_torch: pacer recorded %d epoch losses, want %d" % (len(pacer), steps))
        return False
    for i, (p, t) in enumerate(zip(pacer, losses)):
        bad = abs(p - t) > ltol[i]
        ok &= not bad
        print("after step %d: pacer loss %.6f torch %.6f |difference| %.1e (bound %.1e)%s" %
              (i + 1, p, t, abs(p - t), ltol[i], "  <- over" if bad else ""))
    got = initializers(trained)
    cap = 2 * lr * steps
    for k, t in weights.items():
        if k not in tol:
            continue
        d = np.abs(got[k] - t)
        bound = np.where(exempt[k], cap, tol[k]) if exempt and k in exempt else tol[k]
        over = int(np.sum(d > bound))
        loose = float(np.mean(bound > WEIGHT_TOL))
        bad = over > 0
        ok &= not bad
        print("%s: %d of %d over their bound, largest |pacer - torch| %.1e, largest share of its bound %.2f; "
              "%.4f held to %g, the rest to their sign-sensitivity bound (largest %.1e)%s" %
              (k, over, d.size, float(np.max(d)), float(np.max(d / bound)), 1 - loose, WEIGHT_TOL,
               float(np.max(bound)), "  <- DIFFERENT" if bad else ""))
    for k in weights:
        if not k.endswith("bias") or k not in tol:
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
        print("adamw_torch: %s (each loss and weight within its bound: check())" % ("same" if ok else "DIFFERENT"))
        return 0 if ok else 1
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
