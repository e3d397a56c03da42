"""tests/tools/heldout_cnn.py - a held-out modern CNN (none of the networks the operator-registry
work was tested on: its operators mixed in one small network), its PyTorch recipe on
CIFAR-10 (bench/heldout_accuracy.sh), and pacer's steps checked against torch's one at a
time (tests/integration/sync_batchnorm.sh).

The network (HeldOutCNN, 24,030 parameters, 3x32x32 inputs, 10 classes), every batch norm
at torch's momentum 0.01 (ONNX's 0.99) and eps 1e-3:
  stem      3x3 conv 3 -> 16, batch norm, hard-swish
  mbv2      an inverted residual with ReLU6 (expand 3, depthwise 3x3 stride 2, project): 16x16
  shuffle   a ShuffleNetV2 unit: the channels split in halves (Slice), one half through 1x1,
            depthwise 3x3, 1x1 with ReLU, the halves concatenated and shuffled in 2 groups
            (Reshape, Transpose, Reshape)
  mbv3      an inverted residual with hard-swish and squeeze-excitation (ReLU, hard sigmoid),
            stride 2: 8x8
  effnet    an inverted residual with SiLU and squeeze-excitation (SiLU, sigmoid), residual
  head      1x1 conv to 64, batch norm, hard-swish, global average pool, Linear(64, 10)

Usage: heldout_cnn.py --export OUT.onnx SEED
  The network initialised after torch.manual_seed(SEED), exported as the Python client does
  (pacer.client.export_module); pacer trains from the file's weights, --train from the same.

Usage: heldout_cnn.py --train ONNX SEED SUBSET TEST_SUBSET EPOCHS BATCH LR MOMENTUM WD AUGMENT [SHARES [SAVE]]
  The recipe in PyTorch, one process, as a PyTorch user writes it: torch.optim.SGD (lr,
  momentum, weight decay on every parameter, as pacer's optimizer.no_decay "none"), a
  constant rate, CIFAR-10 ($PACER_SHARED/datasets/cifar-10) read as pacer reads it (the
  first SUBSET training and TEST_SUBSET test images, pixels / 255 normalised with
  common/catalog.c's statistics), a new permutation each epoch, BATCH images a step (pacer's
  global batch), the last partial batch dropped; AUGMENT 1: pacer's dataset.augment (a
  random crop of the image zero-padded by 4, a mirror with probability 1/2). Starts from
  ONNX's initializers. SHARES ("32,32", adding up to BATCH): each batch split so, each share
  normalised by its own statistics and the first share's running statistics kept, which is
  what DDP ranks without SyncBatchNorm compute. SAVE: the trained state_dict (torch.save).
  Prints one JSON line: test_accuracy, test_loss, train_loss_running (the last epoch's
  mean batch loss, as pacer's), train_s.

Usage: heldout_cnn.py --recompute MODEL N_STATS TEST_SUBSET
  A trained model's (pacer's --export-onnx, or --train's SAVE) test accuracy on the first
  TEST_SUBSET test images with its running statistics, and with its batch-norm statistics
  recomputed for its final weights over the first N_STATS training images: one JSON line.

Usage: heldout_cnn.py --data OUT.npz N
  N training and 32 test images of uint8 noise (NCHW), labels i % 10, for a job with
  dataset.mean 0 and std 1 (pacer then feeds the network pixel / 255 exactly).

Usage: heldout_cnn.py --check W0.onnx DATA.npz ORDER PLAN LR MOMENTUM WD FACTOR AFTER_1.onnx ... AFTER_K.onnx
  pacer's first K steps, one at a time, against torch: AFTER_k is pacer's model after step
  k (--stop-after-steps k --export-onnx), SGD at LR with weight decay WD on every
  parameter. MOMENTUM 0: torch takes step k in float64 from pacer's own state before it
  (W0, the starting weights, for the first; AFTER_{k-1} after), so an error is never
  carried into the next comparison. MOMENTUM > 0 (torch.optim.SGD's rule): the momentum
  buffer is in no file, so torch takes steps 1 to k from W0, and step k's comparison
  carries the k - 1 steps before it, which torch's own float32 runs below carry alike.
  Step k is on the batch line k of ORDER (build/tools/epoch_order: one global
  batch per epoch) gives, split by PLAN: "16" one process; "8,8" or "5,11" ranks, each
  share normalised by its own statistics and its mean loss weighted by its part of the
  batch (ssgd's batch-weighted average), rank 0's running statistics kept (the ones pacer
  exports); "sync:8,8" the shares with the whole batch's statistics, which is one forward
  of the whole batch. Compared: each parameter's update (after - before) and each running
  statistic's value, max |pacer - torch| / max(max |torch|, floor), the floor lr x FLOOR
  for an update, FLOOR for a statistic (FLOOR below). Tolerance, per tensor: FACTOR x
  torch's own float32 error of the same quantity (torch's float32 step from the same
  weights on the batch and on it scaled by 1 +- 1e-7 and 1 +- 1e-6, PERTURB: how far a
  float32 evaluation of this network at these weights lands from the exact step, the
  sensitivity to a last-bit change of the input included), or MIN_TOL where that is
  larger. This is onnx_families.py's rule: float64 is the reference, and pacer, another
  float32 evaluation of the same operations in another order (its convolutions, its batch
  norms' double sums, the ranks' all-reduce), is held to float32's own accuracy within
  FACTOR (2 in sync_batchnorm.sh). Plus the kinks' term: ReLU, ReLU6, hard-swish and hard
  sigmoid have derivatives that jump at a point, and an input there within float32's reach
  (FACTOR x the largest distance of torch's float32 inputs of that activation from the
  float64 ones) takes either side's derivative in a float32 run: among some 10^6 inputs a
  step, a few lie that close (one of the SE's ReLU moved mbv3.expand.1.bias's update by
  3.5e-3 at a third step with momentum, where 2 ranks of 5 and 11 took its other side and
  8 and 8 did not). torch's float64 step again with every such input on its other side
  gives, per tensor, the change that choice can make (KINKS, Kinks), added to the tolerance
  (so the worst ratio of a step decided by a kink sits just under 1). Each batch norm's momentum is the file's (ONNX's float
  0.99 is 1 - 0.0099999905 in torch's convention, not the module's 0.01: a relative 1e-6
  in the running statistics, 10x torch's own float32 error). Exits 1 naming each tensor
  out of its tolerance.
Exits 77 when torch, torchvision or onnx cannot be imported.
"""
import json
import os
import sys
import time

try:
    import numpy as np
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    import onnx
    from onnx import numpy_helper
except Exception as e:  # pragma: no cover - depends on the machine
    print("heldout_cnn: torch/onnx not importable: %s" % e)
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
MEAN = torch.tensor([0.4914, 0.4822, 0.4465]).view(1, 3, 1, 1)
STD = torch.tensor([0.2470, 0.2435, 0.2616]).view(1, 3, 1, 1)
BN = {"momentum": 0.01, "eps": 1e-3}


def conv_bn(cin, cout, k=1, stride=1, groups=1, act=None):
    layers = [nn.Conv2d(cin, cout, k, stride, (k - 1) // 2, groups=groups, bias=False), nn.BatchNorm2d(cout, **BN)]
    if act is not None:
        layers.append(act())
    return nn.Sequential(*layers)


class SE(nn.Module):
    def __init__(self, c, squeeze, act, gate):
        super().__init__()
        self.fc1, self.fc2, self.act, self.gate = nn.Conv2d(c, squeeze, 1), nn.Conv2d(squeeze, c, 1), act(), gate()

    def forward(self, x):
        return self.gate(self.fc2(self.act(self.fc1(F.adaptive_avg_pool2d(x, 1))))) * x


class Inverted(nn.Module):
    def __init__(self, cin, cout, expand, stride, act, se=None):
        super().__init__()
        mid = cin * expand
        self.expand = conv_bn(cin, mid, 1, act=act)
        self.dw = conv_bn(mid, mid, 3, stride, groups=mid, act=act)
        self.se = se(mid) if se else nn.Identity()
        self.project = conv_bn(mid, cout, 1)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        y = self.project(self.se(self.dw(self.expand(x))))
        return x + y if self.residual else y


class Shuffle(nn.Module):
    """ShuffleNetV2's stride-1 unit"""

    def __init__(self, c):
        super().__init__()
        h = c // 2
        self.branch = nn.Sequential(conv_bn(h, h, 1, act=nn.ReLU), conv_bn(h, h, 3, groups=h), conv_bn(h, h, 1, act=nn.ReLU))

    def forward(self, x):
        a, b = x.chunk(2, dim=1)
        y = torch.cat((a, self.branch(b)), dim=1)
        n, c, hh, ww = y.shape
        return y.view(n, 2, c // 2, hh, ww).transpose(1, 2).reshape(n, c, hh, ww)


class HeldOutCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = conv_bn(3, 16, 3, act=nn.Hardswish)
        self.mbv2 = Inverted(16, 24, 3, 2, nn.ReLU6)
        self.shuffle = Shuffle(24)
        self.mbv3 = Inverted(24, 32, 3, 2, nn.Hardswish, lambda c: SE(c, 24, nn.ReLU, nn.Hardsigmoid))
        self.effnet = Inverted(32, 32, 3, 1, nn.SiLU, lambda c: SE(c, 8, nn.SiLU, nn.Sigmoid))
        self.head = conv_bn(32, 64, 1, act=nn.Hardswish)
        self.fc = nn.Linear(64, 10)

    def forward(self, x):
        x = self.head(self.effnet(self.mbv3(self.shuffle(self.mbv2(self.stem(x))))))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def export(out, seed):
    sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python"))
    from pacer.client import export_module
    torch.manual_seed(seed)
    net = HeldOutCNN()
    with open(out, "wb") as f:
        f.write(export_module(net, torch.zeros(1, 3, 32, 32)))
    print("heldout_cnn: exported %s (%d parameters)" % (out, sum(p.numel() for p in net.parameters())))


def from_onnx(path, dtype=torch.float32):
    """The network with the file's initializers (state_dict names), in dtype."""
    net = HeldOutCNN()
    inits = {t.name: numpy_helper.to_array(t) for t in onnx.load(path).graph.initializer}
    state = net.state_dict()
    for k in state:
        if k in inits:
            state[k] = torch.from_numpy(inits[k].copy())
        elif not k.endswith("num_batches_tracked"):
            raise SystemExit("heldout_cnn: %s has no initializer %s" % (path, k))
    net.load_state_dict(state)
    # each batch norm's momentum as the file states it: ONNX's float 0.99 is 1 - 0.0099999905
    # in torch's convention, not the module's 0.01 (a relative 1e-6 in the running statistics)
    mods = dict(net.named_modules())
    for node in onnx.load(path).graph.node:
        if node.op_type == "BatchNormalization":
            mom = [a.f for a in node.attribute if a.name == "momentum"]
            mod = mods.get(node.input[1][:-len(".weight")])
            if mom and isinstance(mod, nn.BatchNorm2d):
                mod.momentum = 1.0 - float(np.float32(mom[0]))
    return net.to(dtype)


def cifar(files):
    import gzip
    d = os.path.join(os.environ.get("PACER_SHARED", os.path.join(HERE, "..", "..", "..", "shared")), "datasets", "cifar-10")
    rec = np.concatenate([np.frombuffer(gzip.open("%s/%s.bin.gz" % (d, f)).read(), np.uint8).reshape(-1, 3073)
                          for f in files])
    return torch.from_numpy(rec[:, 1:].reshape(-1, 3, 32, 32).copy()), torch.from_numpy(rec[:, 0].astype(np.int64))


def augment(x, gen):
    n = x.shape[0]
    padded = F.pad(x, (4, 4, 4, 4))
    off = torch.randint(0, 9, (n, 2), generator=gen)
    flip = torch.rand(n, generator=gen) < 0.5
    out = torch.empty_like(x)
    for i in range(n):
        dy, dx = int(off[i, 0]), int(off[i, 1])
        img = padded[i, :, dy:dy + 32, dx:dx + 32]
        out[i] = img.flip(2) if flip[i] else img
    return out


def shares_backward(net, x, y, shares):
    """The gradient of the batch's mean loss, the batch split into shares (1 share: one
    forward) each normalised by its own statistics, as ranks without a synchronised batch
    norm (DDP without SyncBatchNorm): each share's mean loss weighted by its part of the
    batch; the running statistics of the first share's forward kept (rank 0's, which DDP
    broadcasts and pacer evaluates with). The batch's mean loss."""
    total = sum(shares)
    bufs = [b for k, b in net.named_buffers() if not k.endswith("num_batches_tracked")]
    at, kept, loss_sum = 0, None, 0.0
    for b in shares:
        loss = F.cross_entropy(net(x[at:at + b]), y[at:at + b])
        (loss * b / total).backward()
        loss_sum += loss.item() * b / total
        at += b
        if kept is None and len(shares) > 1:
            kept = [t.detach().clone() for t in bufs]
    if kept is not None:
        with torch.no_grad():
            for t, k in zip(bufs, kept):
                t.copy_(k)
    return loss_sum


def train(path, seed, subset, test_subset, epochs, batch, lr, momentum, wd, aug, shares=None, save=None):
    shares = shares or [batch]
    torch.set_num_threads(int(os.environ.get("TORCH_THREADS", "1")))
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    xtr, ytr = cifar(["data_batch_%d" % i for i in range(1, 6)])
    xte, yte = cifar(["test_batch"])
    if subset > 0:
        xtr, ytr = xtr[:subset], ytr[:subset]
    if test_subset > 0:
        xte, yte = xte[:test_subset], yte[:test_subset]
    net = from_onnx(path).train()
    opt = torch.optim.SGD(net.parameters(), lr=lr, momentum=momentum, weight_decay=wd)
    n = xtr.shape[0]
    t0 = time.perf_counter()
    for _ in range(epochs):
        perm = torch.randperm(n, generator=gen)
        loss_sum = 0.0
        for i in range(n // batch):
            idx = perm[i * batch:(i + 1) * batch]
            xb = augment(xtr[idx], gen) if aug else xtr[idx]
            opt.zero_grad(set_to_none=True)
            loss_sum += shares_backward(net, (xb.float() / 255.0 - MEAN) / STD, ytr[idx], shares)
            opt.step()
    wall = time.perf_counter() - t0
    if save:
        torch.save(net.state_dict(), save)
    net.eval()
    correct, tloss = 0, 0.0
    with torch.no_grad():
        for i in range(0, xte.shape[0], 500):
            out = net((xte[i:i + 500].float() / 255.0 - MEAN) / STD)
            correct += (out.argmax(1) == yte[i:i + 500]).sum().item()
            tloss += float(F.cross_entropy(out, yte[i:i + 500], reduction="sum"))
    print(json.dumps({"seed": seed, "train_subset": n, "test_subset": xte.shape[0], "epochs": epochs, "batch": batch,
                      "shares": shares, "test_accuracy": correct / xte.shape[0], "test_loss": tloss / xte.shape[0],
                      "train_loss_running": loss_sum / (n // batch), "train_s": wall,
                      "torch": torch.__version__}))


def recompute(model, n_stats, test_subset):
    """A trained model's test accuracy with its running statistics (what a run reports) and
    with its batch norms' statistics recomputed for its final weights: the cumulative
    average over the first n_stats CIFAR-10 training images (no augmentation, batches of
    500; PyTorch's momentum None), which a running average at momentum 0.01 trails by the
    last ~100 steps' change of the weights. model: pacer's --export-onnx or --train's SAVE."""
    net = HeldOutCNN()
    if model.endswith(".onnx"):
        net = from_onnx(model)
    else:
        net.load_state_dict(torch.load(model))
    xte, yte = cifar(["test_batch"])
    xte, yte = xte[:test_subset or None], yte[:test_subset or None]
    xtr, _ = cifar(["data_batch_1"])

    def accuracy():
        net.eval()
        with torch.no_grad():
            out = torch.cat([net((xte[i:i + 500].float() / 255.0 - MEAN) / STD) for i in range(0, xte.shape[0], 500)])
        return float((out.argmax(1) == yte).double().mean()), float(F.cross_entropy(out, yte))

    running = accuracy()
    for mod in net.modules():
        if isinstance(mod, nn.BatchNorm2d):
            mod.reset_running_stats()
            mod.momentum = None
    net.train()
    with torch.no_grad():
        for i in range(0, n_stats, 500):
            net((xtr[i:i + 500].float() / 255.0 - MEAN) / STD)
    recomputed = accuracy()
    print(json.dumps({"model": model, "test_accuracy": running[0], "test_loss": running[1],
                      "recomputed_test_accuracy": recomputed[0], "recomputed_test_loss": recomputed[1],
                      "recomputed_over": n_stats}))


def data(out, n):
    """OUT/data.npz: n training and 32 test images (uint8 noise, NCHW), labels i % 10"""
    rng = np.random.RandomState(7)
    x = rng.randint(0, 256, (n + 32, 3, 32, 32)).astype(np.uint8)
    y = (np.arange(n + 32) % 10).astype(np.uint8)
    np.savez(out, x_train=x[:n], y_train=y[:n], x_test=x[n:], y_test=y[n:])


def one_step(net, x, y, perm, plan, lr, wd, mom=0.0, velocity=None):
    """One step of plan from net's weights (in net's precision): the global batch's loss,
    and net moved by it. plan "B" one process; "B0,B1,..." ranks with their own batch
    statistics, rank 0's running statistics kept (the rank that exports); "sync:B0,B1,..."
    the ranks with the whole batch's statistics, which is one forward of the whole batch.
    With momentum, torch.optim.SGD's rule (buf = mom * buf + g + wd * w, the first buf g +
    wd * w; w -= lr * buf) over velocity, a dict of the bufs kept between steps."""
    sync = plan.startswith("sync:")
    shares = [int(s) for s in plan[5 if sync else 0:].split(",")]
    total = sum(shares)
    parts = [(0, total)] if sync else [(sum(shares[:r]), shares[r]) for r in range(len(shares))]
    bufs = [b for k, b in net.named_buffers() if not k.endswith("num_batches_tracked")]
    net.train()
    net.zero_grad()
    loss_sum, kept = 0.0, None
    for at, b in parts:
        idx = torch.from_numpy(perm[at:at + b])
        loss = F.cross_entropy(net(x[idx]), y[idx])
        (loss * b / total).backward()
        loss_sum += loss.item() * b / total
        if kept is None:
            kept = [t.detach().clone() for t in bufs]
    with torch.no_grad():
        for t, k in zip(bufs, kept):
            t.copy_(k)
        for name, prm in net.named_parameters():
            d = prm.grad + wd * prm
            if mom > 0:
                d = velocity[name] = mom * velocity[name] + d if name in velocity else d.clone()
            prm -= lr * d
    return loss_sum


def state(net):
    return {k: v.detach().double().numpy().copy() for k, v in net.state_dict().items()
            if not k.endswith("num_batches_tracked")}


# torch's own float32 runs of a step, from the same weights on x moved by these factors: how
# far float32 itself lands from float64 on this network and batch (the tolerance, compare())
PERTURB = (1.0, 1.0 + 1e-7, 1.0 - 1e-7, 1.0 + 1e-6, 1.0 - 1e-6)


# The activations whose derivative jumps at a point (a kink): an input that float32's
# rounding can move across one takes the other side's derivative, which no float32 run of
# torch's need happen to show (the branch run below measures it).
KINKS = {nn.ReLU: (0.0,), nn.ReLU6: (0.0, 6.0), nn.Hardswish: (-3.0, 3.0), nn.Hardsigmoid: (-3.0, 3.0)}


class Kinks:
    """Forward hooks on every kink activation of a network: mode "record" keeps each call's
    input (the float64 run), "measure" tracks per activation the largest distance of a
    call's input from the recorded one's (a float32 run: how far float32 moves the inputs),
    "flip" makes each activation take, at every input within reach[name] of a kink, the
    derivative of the kink's other side (mirrored across it)."""

    def __init__(self, net, mode, ref=None, reach=None):
        self.mode, self.calls, self.dist = mode, {}, {}
        self.ref = ref if ref is not None else {}
        self.reach = reach if reach is not None else {}
        for name, mod in net.named_modules():
            kinks = KINKS.get(type(mod))
            if kinks is None:
                continue
            if mode == "flip":
                mod.forward = self.flipped(mod.forward, kinks, self.reach.get(name, 0.0))
            else:
                mod.register_forward_hook(self.hook(name))

    def hook(self, name):
        def f(mod, inp, out):
            k = self.calls.get(name, 0)
            self.calls[name] = k + 1
            t = inp[0].detach()
            if self.mode == "record":
                self.ref.setdefault(name, []).append(t.clone())
            else:
                d = float((t.double() - self.ref[name][k]).abs().max())
                self.dist[name] = max(self.dist.get(name, 0.0), d)
        return f

    @staticmethod
    def flipped(forward, kinks, reach):
        class Branch(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return forward(x)

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                alt = x.clone()
                for k in kinks:
                    near = (x - k).abs() <= reach
                    side = torch.where(x >= k, -1.0, 1.0).to(x.dtype)
                    alt = torch.where(near, k + side * torch.clamp((x - k).abs(), min=reach / 2), alt)
                with torch.enable_grad():
                    xa = alt.detach().requires_grad_()
                    (gx,) = torch.autograd.grad(forward(xa), xa, g)
                return gx

        return Branch.apply


def steps(start, data_file, order_file, first, last, plan, lr, mom, wd, factor):
    """Steps first to last (1-based: lines of order_file) of plan from start's weights, in
    float64 and in float32 (PERTURB): "want:" the float64 state after the last, "before:"
    the float64 state before it, "f32err:" per tensor the largest relative error of torch's
    float32 runs against float64 (the last step's update for a parameter, the value for a
    running statistic), "branch:" per tensor the relative change of the float64 result when
    every kink activation's input within factor x float32's reach of a kink (the largest
    distance of a float32 run's input from float64's, per activation) takes the other
    side's derivative, and the last step's loss."""
    d = np.load(data_file)
    x = torch.from_numpy(d["x_train"].astype(np.float64)) / 255.0
    y = torch.from_numpy(d["y_train"].astype(np.int64))
    lines = open(order_file).read().splitlines()
    perms = [np.array(lines[k - 1].split(), dtype=np.int64) for k in range(first, last + 1)]

    def run(dtype, scale, probe=None):
        net, velocity, loss, s0 = from_onnx(start, dtype), {}, 0.0, None
        if probe:
            probe(net)
        for perm in perms:
            s0 = state(net)
            loss = one_step(net, (x * scale).to(dtype), y, perm, plan, lr, wd, mom, velocity)
        return s0, state(net), loss, {n for n, _ in net.named_parameters()}

    ref, reach = {}, {}
    s0, want, loss, params = run(torch.float64, 1.0, lambda net: Kinks(net, "record", ref))
    res = {"loss": np.array(loss), "lr": np.array(lr)}
    for n in want:
        res["want:" + n] = want[n]
        res["before:" + n] = s0[n]
        res["param:" + n] = np.array(n in params)
    for scale in PERTURB:
        probes = []
        _, got, _, _ = run(torch.float32, scale, lambda net: probes.append(Kinks(net, "measure", ref)))
        for name, dist in probes[0].dist.items():
            reach[name] = max(reach.get(name, 0.0), factor * dist)
        for n in want:
            e = rel_err(got[n], want[n], s0[n], n in params, lr)
            res["f32err:" + n] = np.array(max(e, float(res.get("f32err:" + n, 0.0))))
    ref.clear()
    _, alt, _, _ = run(torch.float64, 1.0, lambda net: Kinks(net, "flip", reach=reach))
    for n in want:
        res["branch:" + n] = np.array(rel_err(alt[n], want[n], s0[n], n in params, lr))
    print("heldout_cnn: torch's step%s %s of %s from %s: loss %.6f" %
          ("s" if first < last else "", str(last) if first == last else "%d-%d" % (first, last), plan, start, loss))
    return res


# Under a tensor's scale: a convolution's bias before a batch norm has a zero gradient in
# exact arithmetic (its update is lr x weight decay x itself), and a batch norm reading
# batch-normalised channels a zero batch mean. A parameter's update is lr x its gradient
# (plus decay): its floor is lr x FLOOR, the gradient's.
FLOOR = 1e-3


def rel_err(got, want, before, param, lr):
    """A parameter's update (got - before) against want's, a running statistic's value:
    max |difference| / max(max |want's|, floor)"""
    a = np.asarray(got, np.float64) - (before if param else 0.0)
    b = np.asarray(want, np.float64) - (before if param else 0.0)
    floor = lr * FLOOR if param else FLOOR
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), floor)) if b.size else 0.0


def compare(t, after, factor):
    """pacer's state after the step (after's initializers) against torch's (step's result):
    each tensor within factor x torch's own float32 error of it (or MIN_TOL where that is
    larger) plus the kinks' branch term. 0, or 1 naming each tensor out of its tolerance."""
    inits = {i.name: numpy_helper.to_array(i) for i in onnx.load(after).graph.initializer}
    fails, worst = [], (0.0, "", 0.0, 0.0)
    for key in t:
        if not key.startswith("want:"):
            continue
        n = key[5:]
        if n not in inits:
            fails.append("%s: not in %s" % (n, after))
            continue
        e = rel_err(inits[n], t[key], t["before:" + n], bool(t["param:" + n]), float(t["lr"]))
        tol = max(factor * float(t["f32err:" + n]), MIN_TOL) + float(t["branch:" + n])
        if e / tol > worst[0]:
            worst = (e / tol, n, e, float(t["branch:" + n]))
        if not e <= tol:
            fails.append("%s: %.3e > %.3e (torch float32's own %.3e, the kinks' %.3e)" %
                         (n, e, tol, float(t["f32err:" + n]), float(t["branch:" + n])))
    print("heldout_cnn: %s against torch: worst %s at %.2f of its tolerance (%.3e%s)" %
          (after, worst[1], worst[0], worst[2], ", a kink's other side %.3e of it" % worst[3] if worst[3] > MIN_TOL else ""))
    for f in fails:
        print("FAIL " + f)
    return 1 if fails else 0


MIN_TOL = 1e-6


def check(w0, data_file, order_file, plan, lr, mom, wd, factor, afters):
    """pacer's state after each step k (afters[k - 1]) against torch's: without momentum
    torch's step k from pacer's state before it (w0 for the first), with momentum (which no
    file holds) torch's steps 1 to k from w0. 0, or 1 when any step is out of tolerance."""
    rc = 0
    for k, after in enumerate(afters, 1):
        if mom > 0:
            t = steps(w0, data_file, order_file, 1, k, plan, lr, mom, wd, factor)
        else:
            t = steps(afters[k - 2] if k > 1 else w0, data_file, order_file, k, k, plan, lr, 0.0, wd, factor)
        rc |= compare(t, after, factor)
    return rc


def main():
    a = sys.argv[1:]
    if len(a) == 3 and a[0] == "--export":
        export(a[1], int(a[2]))
        return 0
    if len(a) in (11, 12, 13) and a[0] == "--train":
        shares = [int(v) for v in a[11].split(",")] if len(a) >= 12 else None
        if shares and sum(shares) != int(a[6]):
            print("heldout_cnn: the shares %s do not add up to the batch %s" % (a[11], a[6]))
            return 2
        train(a[1], int(a[2]), int(a[3]), int(a[4]), int(a[5]), int(a[6]), float(a[7]), float(a[8]), float(a[9]),
              a[10] == "1", shares, a[12] if len(a) == 13 else None)
        return 0
    if len(a) == 4 and a[0] == "--recompute":
        recompute(a[1], int(a[2]), int(a[3]))
        return 0
    if len(a) == 3 and a[0] == "--data":
        data(a[1], int(a[2]))
        return 0
    if len(a) >= 10 and a[0] == "--check":
        return check(a[1], a[2], a[3], a[4], float(a[5]), float(a[6]), float(a[7]), float(a[8]), a[9:])
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
