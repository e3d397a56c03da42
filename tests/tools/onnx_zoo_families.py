"""tests/tools/onnx_zoo_families.py - torchvision 0.14's convolutional zoo against pacer
trained on 2 ranks (issue 43's evidence), for tests/integration/onnx_zoo_families.sh.
The networks, the client's export and the comparison helpers are onnx_families.py's
(imported, not copied): this tool adds the data set, the 2-rank replay in torch and the
checks of the trained export.

Usage: /usr/bin/python3 tests/tools/onnx_zoo_families.py --data OUTDIR
  Writes OUTDIR/data.npz (N_TRAIN training and N_TEST test images 3x32x32, uint8, NCHW,
  labels i % 10) for a job with dataset.mean 0 and std 1, so that pacer feeds the networks
  pixel / 255 exactly, and OUTDIR/x_test.bin (those test inputs, float32 LE) and
  OUTDIR/labels.bin (uint8) for build/tools/onnx_logits and tests/onnxrt/logits.mjs.

Usage: /usr/bin/python3 tests/tools/onnx_zoo_families.py --export OUTDIR ORDER B LR NAME...
  Each NAME (TRAINED below, or one of CHECK_ONLY) from torchvision.models.get_model(NAME,
  weights=None, num_classes=10), dropout and stochastic depth at p = 0 (their masks are
  pacer's own, onnx_families.no_randomness), exported by the Python client's
  export_module (training form; ai.pacer:StochasticDepth for efficientnet_b0) as
  OUTDIR/NAME.onnx, on inputs of the network's smallest size (SIZE); an export that fails
  prints "NAME: export failed: WHY" and the others go on. For a TRAINED network
  also torch's losses of the job the shell runs: ssgd on 2 ranks of batch B, plain SGD at
  LR, one step per line of ORDER (build/tools/epoch_order: each epoch is one global batch
  of 2B, rank 0 taking the first B positions, rank 1 the next B). Each rank's batch norm
  normalises by its own batch's statistics, so torch runs the step as two half-batches
  whose mean losses are each scaled by 1/2 before backward (the average of the two ranks'
  gradients, which is what ssgd's allreduce of equal batches gives); the step's loss is
  the mean of the two. In float64 from the file's weights (as onnx_families.py: float32
  through 50 to 200 layers at 1x1 planes is ill-conditioned), and again in float32 from
  the same weights: OUTDIR/NAME.losses.npz holds both.

Usage: /usr/bin/python3 tests/tools/onnx_zoo_families.py --models OUTDIR NAME...
  Only the exports, of the modules as torchvision builds them (dropout and stochastic
  depth as they are: pacer applies both while training), for bench/zoo_vs_torch.sh to
  time against bench/torch_lenet.py's tv:NAME.

Usage: /usr/bin/python3 tests/tools/onnx_zoo_families.py --losses NAME.losses.npz METRICS.jsonl
  pacer's per-step losses (the mean of the 2 ranks' "step" lines of --metrics) against
  torch's float64 ones: max |pacer - torch| / max |torch| within LOSS_TOL, or within twice
  torch's own float32 error where that is larger (pacer held to be no worse than float32);
  the first step's (a forward from the file's weights) within FIRST_TOL, or twice torch's
  float32 error of it where that is larger.

Usage: /usr/bin/python3 tests/tools/onnx_zoo_families.py --load NAME TRAINED.onnx OUTDIR PACER_LOGITS.bin
  The trained export's initializers as the torchvision module's state_dict, loaded with
  load_state_dict(strict=True) (num_batches_tracked, a counter ONNX has no tensor for, is
  the module's own); in evaluation mode on OUTDIR/x_test.bin its logits are pacer's
  (build/tools/onnx_logits of TRAINED.onnx) within LOAD_TOL and every prediction agrees.
Exits 1 naming what failed, 77 when torch, onnx or torchvision cannot be imported.
"""
import copy
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import onnx_families as fam  # noqa: E402  (exits 77 when torch/onnx are missing)
from onnx_families import np, torch, nn, F, onnx, numpy_helper  # noqa: E402

N_TRAIN = 16  # one global batch: each epoch is one ssgd step of 2 ranks x 8
N_TEST = 32
# post-2017 families (as onnx_torchvision.sh) and three that imported before issue 43
TRAINED = ["mobilenet_v2", "mobilenet_v3_small", "mnasnet0_5", "regnet_y_400mf", "efficientnet_b0",
           "resnet18", "densenet121", "googlenet"]
# the other eight that imported before: --check-onnx only
CHECK_ONLY = ["alexnet", "inception_v3", "regnet_x_400mf", "resnet50", "resnext50_32x4d", "squeezenet1_0",
              "vgg11_bn", "wide_resnet50_2"]
# the smallest square input each accepts: inception_v3's stem and 3x3 stride-2 reductions
# need 75; alexnet's features end in AdaptiveAvgPool2d((6, 6)), which torch 1.13 exports
# only where the plane is a multiple of 6 ("output size that are not factor of input
# size" below that), first at 223, and vgg11_bn's AdaptiveAvgPool2d((7, 7)) after five
# halvings likewise only at 224. The rest take 32 (squeezenet1_0: torch takes 21, but
# pacer refuses its last ceil-mode MaxPool on a 2x2 plane below 29: reported, not hidden).
SIZE = {"inception_v3": 75, "alexnet": 223, "vgg11_bn": 224}
# googlenet and inception_v3 without their auxiliary classifiers (a training forward would
# return a tuple, which neither the client nor pacer takes)
KWARGS = {"googlenet": {"aux_logits": False}, "inception_v3": {"aux_logits": False}}
# Named tolerances (max |pacer - torch| / max |torch|): the 2-rank losses, as
# onnx_families.py's single-process losses (1e-3), pacer's float32 sums over the ranks in
# another order being the only difference it adds; the reloaded module's evaluation
# logits against pacer's, as onnx_families.py's eval_logits (1e-4) but over trained
# weights: 1e-3.
LOSS_TOL = 1e-3
# The first step's loss is a forward from the file's weights on each rank's half-batch (no
# update before it): float32 sums in another order are the only difference, so within
# FIRST_TOL or twice torch's own float32 error of that loss where that is larger
# (mnasnet0_5's first loss is 12.5, from logits large enough that float32 moves it by
# 1.7e-5 relative under OpenBLAS's Prescott kernels).
FIRST_TOL = 1e-5
LOAD_TOL = 1e-3


def model(name):
    try:
        import torchvision
    except Exception as e:  # pragma: no cover - depends on the machine
        print("onnx_zoo_families: torchvision not importable: %s" % e)
        sys.exit(77)
    return torchvision.models.get_model(name, weights=None, num_classes=10, **KWARGS.get(name, {}))


def data(out):
    rng = np.random.RandomState(7)
    x = rng.randint(0, 256, (N_TRAIN + N_TEST, 3, 32, 32)).astype(np.uint8)
    y = (np.arange(N_TRAIN + N_TEST) % 10).astype(np.uint8)
    np.savez(out + "/data.npz", x_train=x[:N_TRAIN], y_train=y[:N_TRAIN], x_test=x[N_TRAIN:], y_test=y[N_TRAIN:])
    (x[N_TRAIN:].astype(np.float32) / np.float32(255)).astype("<f4").tofile(out + "/x_test.bin")
    y[N_TRAIN:].tofile(out + "/labels.bin")
    print("onnx_zoo_families: data.npz (%d training, %d test images), x_test.bin, labels.bin" % (N_TRAIN, N_TEST))


# How close to a kink the float64 replay's activation inputs come: a ReLU (or ReLU6,
# hard-swish, hard-sigmoid) input within KINK of it, relative to the largest input of its
# tensor, is one float32's rounding of a sum over hundreds of products can put on either
# side, and that flips its gradient in the step that reads it (resnet18 from seed 101: one
# ReLU input 3.3e-7 from 0 in 32768 moved one batch norm's bias gradient by 16% in pacer,
# not in torch's float32 runs). Losses after such a step are held to being finite only.
KINK = 1e-5
KINKED = (nn.ReLU, nn.ReLU6, nn.Hardswish, nn.Hardsigmoid)


def kink_margins(net):
    """Hooks on net's kinked activations; returns (margins, remove): margins[-1] is the
    step's smallest relative distance of an input to a kink once a forward has run."""
    margins = []

    def hook(mod, inp):  # before the module runs: torchvision's activations are in place
        v = inp[0].detach()
        kinks = (0.0,) if isinstance(mod, nn.ReLU) else (0.0, 6.0) if isinstance(mod, nn.ReLU6) else (-3.0, 3.0)
        near = min(float((v - k).abs().min()) for k in kinks)
        if margins:
            margins[-1] = min(margins[-1], near / (float(v.abs().max()) or 1.0))
    hs = [m.register_forward_pre_hook(hook) for m in net.modules() if isinstance(m, KINKED)]
    return margins, lambda: [h.remove() for h in hs]


def replay(net, x, y, order, b, lr, margins=None):
    """ssgd's steps on 2 ranks of batch b (above), in net's precision: the losses. margins
    (kink_margins'): each step's smallest distance to a kink appended."""
    net.train()
    losses = []
    for perm in order:
        if margins is not None:
            margins.append(float("inf"))
        net.zero_grad()
        step = 0.0
        for r in range(2):
            idx = torch.from_numpy(perm[r * b:(r + 1) * b])
            loss = F.cross_entropy(net(x[idx]), y[idx])
            (0.5 * loss).backward()
            step += 0.5 * loss.item()
        losses.append(step)
        with torch.no_grad():
            for prm in net.parameters():
                prm -= lr * prm.grad
    return np.array(losses)


def export(out, order_file, b, lr, names):
    """order_file None: --models (the exports only, randomness kept)"""
    export_module = fam.client_export()
    if order_file:
        d = np.load(out + "/data.npz")
        x = torch.from_numpy(d["x_train"].astype(np.float32)) / 255.0
        y = torch.from_numpy(d["y_train"].astype(np.int64))
        order = [np.array(line.split(), dtype=np.int64) for line in open(order_file) if line.strip()]
    for i, name in enumerate(names):
        torch.manual_seed(100 + i)
        net = model(name)
        if order_file:
            fam.no_randomness(net)
        s = SIZE.get(name, 32)
        path = "%s/%s.onnx" % (out, name)
        try:
            onnx_bytes = export_module(net, torch.randn(2, 3, s, s))
        except Exception as e:  # the client's PacerError, naming torch's: the test reports it
            print("%s: export failed: %s" % (name, e))
            continue
        with open(path, "wb") as f:
            f.write(onnx_bytes)
        if name not in TRAINED or not order_file:
            print("%s: exported (%dx%d)" % (name, s, s))
            continue
        fam.load_from_file(net, path)
        net32 = copy.deepcopy(net)
        net = net.double()
        margins, unhook = kink_margins(net)
        want = replay(net, x.double(), y, order, b, lr, margins)
        unhook()
        # torch's own float32 runs from the same weights on x and on x moved slightly
        # (onnx_families.py's PERTURB): how far float32 itself lands from float64
        runs = [replay(copy.deepcopy(net32), x * scale, y, order, b, lr) for scale in fam.PERTURB]
        f32err = max(fam.rel(r, want) for r in runs)
        f32first = max(abs(r[0] - want[0]) / abs(want[0]) for r in runs)
        np.savez("%s/%s.losses.npz" % (out, name), losses=want, f32err=np.array(f32err), f32first=np.array(f32first),
                 margins=np.array(margins))
        print("%s: exported (%dx%d), torch's 2-rank losses %s" % (name, s, s, " ".join("%.4f" % v for v in want)))


def losses(npz, metrics):
    import json
    t = np.load(npz)
    # each rank's "step" line holds its own batch's mean loss; the step's is their mean
    # (equal batches)
    per = {}
    for line in open(metrics):
        r = json.loads(line)
        if r.get("kind") == "step" and r.get("role") == "worker":
            per.setdefault(r["step"], []).append(r["loss"])
    got = np.array([np.mean(per[k]) if len(per[k]) == 2 else np.nan for k in sorted(per)], dtype=np.float64)
    want = t["losses"]
    tol = max(LOSS_TOL, 2 * float(t["f32err"]))
    e = fam.rel(got, want)
    print("  losses: pacer %s, torch %s: max_rel %.2e (tol %.1e; torch float32's own %.1e)"
          % (" ".join("%.4f" % v for v in got), " ".join("%.4f" % v for v in want), e, tol, float(t["f32err"])))
    if got.shape != want.shape:
        print("FAIL %d loss lines in %s, torch ran %d steps" % (got.size, metrics, want.size))
        return 1
    e1 = abs(got[0] - want[0]) / abs(want[0])
    tol1 = max(FIRST_TOL, 2 * float(t["f32first"]))
    if e1 > tol1:
        print("FAIL the first step's loss: %.3e > %.1e" % (e1, tol1))
        return 1
    # the losses up to and including the first step whose gradient a kink may flip
    margins = t["margins"] if "margins" in t.files else np.full(want.size, np.inf)
    kinked = [i for i in range(want.size) if margins[i] < KINK]
    n = kinked[0] + 1 if kinked else want.size
    if kinked:
        print("  step %d's float64 forward has an activation input %.1e of its tensor's largest from a kink: "
              "the losses after it are held to being finite" % (kinked[0] + 1, margins[kinked[0]]))
        e = fam.rel(got[:n], want[:n])
    if not np.all(np.isfinite(got)) or e > tol:
        print("FAIL losses: %.3e > %.0e" % (e, tol))
        return 1
    return 0


def load(name, trained, out, pacer_logits):
    return load_into(model(name), name, trained, out, pacer_logits, "num_batches_tracked", LOAD_TOL)


def load_into(net, name, trained, out, pacer_logits, own, tol):
    """load's check of module net (also onnx_swin.py's); own: the ending of the keys that
    may keep the module's value (a counter or constant the file has no tensor for)"""
    inits = {t.name: numpy_helper.to_array(t) for t in onnx.load(trained).graph.initializer}
    # the module's own state_dict, values replaced: it keeps the _metadata (versions) a
    # module's _load_from_state_dict may read (MNASNet's does); a key the file lacks keeps
    # the module's value only for own, else strict loading names it
    state = net.state_dict()
    for k in list(state):
        if k in inits:
            state[k] = torch.from_numpy(inits[k].copy())
        elif not k.endswith(own):
            del state[k]
    try:
        net.load_state_dict(state, strict=True)
    except RuntimeError as e:
        print("FAIL %s: load_state_dict(strict=True) of %s: %s" % (name, trained, e))
        return 1
    net.eval()
    x = torch.from_numpy(np.fromfile(out + "/x_test.bin", dtype="<f4").reshape(N_TEST, 3, 32, 32))
    with torch.no_grad():
        want = net(x).numpy()
    got = np.fromfile(pacer_logits, dtype="<f4").reshape(want.shape)
    e = fam.rel(got, want)
    differ = int((got.argmax(1) != want.argmax(1)).sum())
    print("  load_state_dict(strict=True): %d tensors; torch's logits vs pacer's max_rel %.2e (tol %.0e), "
          "%d of %d predictions differ" % (len(state), e, tol, differ, N_TEST))
    if e > tol or differ:
        print("FAIL %s: the reloaded module's logits are not pacer's" % name)
        return 1
    return 0


def main():
    a = sys.argv[1:]
    if len(a) == 2 and a[0] == "--data":
        data(a[1])
        return 0
    if len(a) >= 6 and a[0] == "--export":
        export(a[1], a[2], int(a[3]), float(a[4]), a[5:])
        return 0
    if len(a) >= 3 and a[0] == "--models":
        export(a[1], None, 0, 0.0, a[2:])
        return 0
    if len(a) == 3 and a[0] == "--losses":
        return losses(a[1], a[2])
    if len(a) == 5 and a[0] == "--load":
        return load(a[1], a[2], a[3], a[4])
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
