"""bench/torch_transformer.py - issue 44's small transformer-era networks and their PyTorch
recipe, for bench/vit_accuracy.sh (accuracy against pacer) and bench/transformer_vs_torch.sh
(training speed against pacer, through bench/torch_lenet.py's bench:NAME modules).

The networks (torchvision 0.14's own classes, small enough for one CPU thread):
  vit       VisionTransformer(image_size=32, patch_size=4, num_layers=3, num_heads=3,
            hidden_dim=48, mlp_dim=96, num_classes=10): 64 patches of 4x4 and the class
            token, no dropout.
  convnext  ConvNeXt(block_setting=[CNBlockConfig(32, 64, 2), CNBlockConfig(64, None, 2)],
            num_classes=10, stochastic_depth_prob=0): the 4x4 stride-4 stem (8x8), two
            CNBlocks, the downsampling (4x4), two CNBlocks, the pooled layer norm and Linear.

Usage: torch_transformer.py --export OUTDIR SEED NAME...
  Writes OUTDIR/NAME.onnx, initialised after torch.manual_seed(SEED) (so --train with the
  same SEED starts from the same weights) and exported as the Python client does
  (pacer.client.export_module: training mode, opset 13, no constant folding, the batch axis
  dynamic); pacer trains from the file's weights.

Usage: torch_transformer.py --train NAME SEED SUBSET TEST_SUBSET EPOCHS BATCH LR WD WARMUP AUGMENT
  Trains NAME on CIFAR-10 ($PACER_SHARED/datasets/cifar-10) with pacer's transformer recipe as
  a PyTorch user writes it: torch.optim.AdamW (betas 0.9, 0.999, eps 1e-8) with two
  parameter groups as pacer's optimizer.no_decay "auto" (every 1-D parameter - biases,
  layer-norm weights and biases, the class token's and positional embedding's are not 1-D
  and decay, as timm's "no weight decay on biases and norms" leaves them to the module),
  a per-step schedule as pacer's lr_at (kernels/cpu/optim.c): linear warm-up from lr /
  warmup_steps to lr over WARMUP epochs, then cosine to 0 over the remaining steps;
  nn.CrossEntropyLoss(label_smoothing=0.1). The data as pacer reads it: the first SUBSET
  training images (0 = all 50,000), the first TEST_SUBSET test images (0 = all 10,000),
  pixels / 255 normalised per channel with common/catalog.c's CIFAR-10 statistics, a new
  permutation each epoch, BATCH images a step (pacer's global batch: workers x batch_size),
  the last partial batch dropped (pacer's steps_per_epoch = n / global_batch); AUGMENT 1:
  pacer's dataset.augment (a random 32x32 crop of the image zero-padded by 4, a horizontal
  flip with probability 1/2). Prints one JSON line: test_accuracy, test_loss (smoothed),
  final train loss, wall and CPU seconds of training.
Exits 77 when torch or torchvision cannot be imported.
"""
import json
import math
import os
import sys
import time

try:
    import numpy as np
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    import torchvision
except Exception as e:  # pragma: no cover - depends on the machine
    print("torch_transformer: torch/torchvision not importable: %s" % e)
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
MEAN = torch.tensor([0.4914, 0.4822, 0.4465]).view(1, 3, 1, 1)
STD = torch.tensor([0.2470, 0.2435, 0.2616]).view(1, 3, 1, 1)
LABEL_SMOOTHING = 0.1


def build(name):
    """The named small network, freshly initialised by torchvision's own init."""
    if name == "vit":
        from torchvision.models.vision_transformer import VisionTransformer
        return VisionTransformer(image_size=32, patch_size=4, num_layers=3, num_heads=3, hidden_dim=48, mlp_dim=96,
                                 num_classes=10)
    if name == "convnext":
        from torchvision.models.convnext import CNBlockConfig, ConvNeXt
        return ConvNeXt([CNBlockConfig(32, 64, 2), CNBlockConfig(64, None, 2)], stochastic_depth_prob=0.0,
                        num_classes=10)
    raise SystemExit("torch_transformer: unknown network %r (vit, convnext)" % name)


def export(out, seed, names):
    sys.path.insert(0, os.path.join(HERE, "..", "clients", "python"))
    from pacer.client import export_module
    for name in names:
        torch.manual_seed(seed)
        with open(os.path.join(out, name + ".onnx"), "wb") as f:
            f.write(export_module(build(name), torch.zeros(1, 3, 32, 32)))
        print("torch_transformer: exported %s/%s.onnx" % (out, name))


def cifar(files):
    """CIFAR-10's binary batches (records of a label byte and 3x32x32 uint8 pixels)."""
    import gzip
    d = os.path.join(os.environ.get("PACER_SHARED", os.path.join(HERE, "..", "..", "shared")), "datasets", "cifar-10")
    rec = np.concatenate([np.frombuffer(gzip.open("%s/%s.bin.gz" % (d, f)).read(), np.uint8).reshape(-1, 3073)
                          for f in files])
    return torch.from_numpy(rec[:, 1:].reshape(-1, 3, 32, 32).copy()), torch.from_numpy(rec[:, 0].astype(np.int64))


def augment(x, gen):
    """pacer's dataset.augment on a uint8 batch: a crop of the image zero-padded by 4 at a
    random offset, then a mirror with probability 1/2 (each image its own draws)."""
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


def groups(net, wd):
    """pacer's optimizer.no_decay "auto": every 1-D parameter is exempt."""
    decay = [p for p in net.parameters() if p.dim() != 1]
    exempt = [p for p in net.parameters() if p.dim() == 1]
    return [{"params": decay, "weight_decay": wd}, {"params": exempt, "weight_decay": 0.0}]


def lr_at(base, step, warmup, total):
    """kernels/cpu/optim.c's lr_at with kind cosine and min_lr 0."""
    if warmup > 0 and step < warmup:
        return base * (step + 1) / warmup
    span = total - warmup
    if span <= 0:
        return 0.0
    return 0.5 * base * (1.0 + math.cos(math.pi * min(1.0, (step - warmup) / span)))


def train(name, seed, subset, test_subset, epochs, batch, lr, wd, warmup_epochs, aug):
    torch.set_num_threads(int(os.environ.get("TORCH_THREADS", "1")))
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    xtr, ytr = cifar(["data_batch_%d" % i for i in range(1, 6)])
    xte, yte = cifar(["test_batch"])
    if subset > 0:
        xtr, ytr = xtr[:subset], ytr[:subset]
    if test_subset > 0:
        xte, yte = xte[:test_subset], yte[:test_subset]
    net = build(name).train()
    opt = torch.optim.AdamW(groups(net, wd), lr=lr, betas=(0.9, 0.999), eps=1e-8)
    crit = nn.CrossEntropyLoss(label_smoothing=LABEL_SMOOTHING)
    n = xtr.shape[0]
    per_epoch = n // batch
    total, warmup = per_epoch * epochs, int(round(warmup_epochs * per_epoch))
    step, loss_sum, loss_n = 0, 0.0, 0
    t0, c0 = time.perf_counter(), time.process_time()
    for epoch in range(epochs):
        perm = torch.randperm(n, generator=gen)
        loss_sum, loss_n = 0.0, 0
        for i in range(per_epoch):
            idx = perm[i * batch:(i + 1) * batch]
            xb = augment(xtr[idx], gen) if aug else xtr[idx]
            x = (xb.float() / 255.0 - MEAN) / STD
            for g in opt.param_groups:
                g["lr"] = lr_at(lr, step, warmup, total)
            opt.zero_grad(set_to_none=True)
            loss = crit(net(x), ytr[idx])
            loss.backward()
            opt.step()
            step += 1
            loss_sum += float(loss) * batch
            loss_n += batch
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    net.eval()
    correct, tloss = 0, 0.0
    with torch.no_grad():
        for i in range(0, xte.shape[0], 500):
            x = (xte[i:i + 500].float() / 255.0 - MEAN) / STD
            out = net(x)
            correct += (out.argmax(1) == yte[i:i + 500]).sum().item()
            tloss += float(crit(out, yte[i:i + 500])) * x.shape[0]
    print(json.dumps({"network": name, "seed": seed, "train_subset": n, "test_subset": xte.shape[0], "epochs": epochs,
                      "batch": batch, "steps": step, "test_accuracy": correct / xte.shape[0],
                      "test_loss": tloss / xte.shape[0], "train_loss_last_epoch": loss_sum / max(loss_n, 1),
                      "train_s": wall, "train_cpu_s": cpu, "torch": torch.__version__,
                      "torchvision": torchvision.__version__}))


def main():
    a = sys.argv[1:]
    if len(a) >= 4 and a[0] == "--export":
        export(a[1], int(a[2]), a[3:])
        return 0
    if len(a) == 11 and a[0] == "--train":
        train(a[1], int(a[2]), int(a[3]), int(a[4]), int(a[5]), int(a[6]), float(a[7]), float(a[8]), float(a[9]),
              a[10] == "1")
        return 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
