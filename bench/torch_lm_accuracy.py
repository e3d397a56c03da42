"""bench/torch_lm_accuracy.py - PyTorch's side of bench/lm_accuracy.sh: the nanoGPT-style
module of tests/tools/gpt_torch.py, started from the weights pacer-worker initialises its
built-in GPT with for SEED (tests/tools/gpt_tool writes them), trained on a text folder's
bytes by pacer's sampling rule, one thread, and evaluated as pacer evaluates it.

The rule is pacer's (docs/JOB_SPEC.md, "A GPT trained on text"): window k of a file covers
its bytes k x T to k x T + T, the next byte of each position its target, a tail too short
for a window left out; training uses the first WINDOWS windows of train.txt, shuffled every
epoch, steps of BATCH windows (the epoch's leftover windows unused); the learning rate is
pacer's lr_at (kernels/cpu/optim.c): linear warm-up lr x (step + 1) / WARMUP for WARMUP
steps, then cosine from lr to MIN_LR over the rest; AdamW with decay on the 2-D tensors
only (optimizer.no_decay auto); the gradient clipped to CLIP by global norm. The order of
the windows is torch's shuffle, not pacer's: the same rule, other draws.
Prints {"test_loss", "test_accuracy", "train_s", "steps", "torch"}: test_loss is the mean
cross-entropy (nats per token) over every position of the first VAL windows of val.txt
(0 = all of them), as pacer's test_subset counts them.

Usage: /usr/bin/python3 bench/torch_lm_accuracy.py GPT_TOOL OUTDIR TEXTDIR L H E T SEED
    WINDOWS EPOCHS BATCH LR MIN_LR WARMUP WEIGHT_DECAY BETA1 BETA2 CLIP VAL [LOG_EVERY]
LOG_EVERY > 0 prints the step's training loss and the seconds so far to stderr every
LOG_EVERY steps.
"""
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "tools"))
from gpt_torch import build, setup  # noqa: E402  (the module and init the tests compare against)


def windows_of(path, T):
    data = np.frombuffer(open(path, "rb").read(), dtype=np.uint8).astype(np.int64)
    n = (len(data) - 1) // T
    idx = np.arange(n)[:, None] * T + np.arange(T + 1)[None, :]
    return torch.from_numpy(data[idx])


def lr_at(step, lr, min_lr, warmup, total):
    if warmup > 0 and step < warmup:
        return lr * (step + 1) / warmup
    span = total - warmup
    if span <= 0:
        return min_lr
    frac = min(1.0, (step - warmup) / span)
    return min_lr + 0.5 * (lr - min_lr) * (1.0 + math.cos(math.pi * frac))


def evaluate(net, val, V):
    net.eval()
    loss = correct = 0.0
    with torch.no_grad():
        for i in range(0, len(val), 64):
            w = val[i: i + 64]
            logits = net(w[:, :-1]).reshape(-1, V)
            y = w[:, 1:].reshape(-1)
            loss += float(F.cross_entropy(logits, y, reduction="sum"))
            correct += float((logits.argmax(1) == y).sum())
    n = val[:, 1:].numel()
    return loss / n, correct / n


def main(argv):
    if len(argv) not in (20, 21):
        print(__doc__)
        return 2
    tool, out, textdir = argv[1:4]
    L, H, E, T, seed, nwin, epochs, B = (int(a) for a in argv[4:12])
    lr, min_lr = float(argv[12]), float(argv[13])
    warmup = int(argv[14])
    wd, b1, b2, clip = (float(a) for a in argv[15:19])
    nval = int(argv[19])
    log_every = int(argv[20]) if len(argv) == 21 else 0
    torch.set_num_threads(1)
    os.makedirs(out, exist_ok=True)
    train_path = os.path.join(textdir, "train.txt")
    _, names = setup(tool, out, train_path, L, H, E, T, 1, 1, seed, 6)
    net = build(out, names, L, H, E, T, 1, 1, torch.float32)
    train = windows_of(train_path, T)
    if nwin > 0:
        train = train[:nwin]
    val = windows_of(os.path.join(textdir, "val.txt"), T)
    if nval > 0:
        val = val[:nval]
    params = list(net.parameters())
    opt = torch.optim.AdamW([{"params": [p for p in params if p.dim() >= 2], "weight_decay": wd},
                             {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}],
                            lr=lr, betas=(b1, b2), eps=1e-8)
    per_epoch = len(train) // B
    total = per_epoch * epochs
    g = torch.Generator().manual_seed(seed)
    step = 0
    t0 = time.perf_counter()
    net.train()
    for _ in range(epochs):
        order = torch.randperm(len(train), generator=g)
        for s in range(per_epoch):
            for group in opt.param_groups:
                group["lr"] = lr_at(step, lr, min_lr, warmup, total)
            w = train[order[s * B: (s + 1) * B]]
            opt.zero_grad(set_to_none=True)
            logits = net(w[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, 256), w[:, 1:].reshape(-1))
            loss.backward()
            if clip > 0:
                torch.nn.utils.clip_grad_norm_(params, clip)
            opt.step()
            step += 1
            if log_every > 0 and step % log_every == 0:
                print(f"step {step}/{total} loss {float(loss):.4f} {time.perf_counter() - t0:.1f} s",
                      file=sys.stderr, flush=True)
    train_s = time.perf_counter() - t0
    test_loss, test_acc = evaluate(net, val, 256)
    print(json.dumps({"test_loss": test_loss, "test_accuracy": test_acc, "train_s": train_s,
                      "steps": step, "torch": torch.__version__}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
