"""bench/torch_gpt.py - PyTorch's side of bench/gpt_speed.sh: the nanoGPT-style module of
tests/tools/gpt_torch.py (GPT-2's pre-norm blocks, causal mask, tied head) trained with
AdamW on random windows of a text file, one thread; prints {"tokens_per_s": ...} for the
training loop alone (the windows are cut before the clock starts).

Usage: /usr/bin/python3 bench/torch_gpt.py TEXT LAYERS HEADS EMBD BLOCK BATCH STEPS
"""
import json
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "tools"))
from gpt_torch import GPT  # noqa: E402  (the same module the tests compare against)


def main(argv):
    text, L, H, E, T, B, steps = argv[1], *(int(a) for a in argv[2:8])
    torch.set_num_threads(1)
    torch.manual_seed(0)
    data = np.frombuffer(open(text, "rb").read(), dtype=np.uint8).astype(np.int64)
    rng = np.random.default_rng(0)
    starts = rng.integers(0, len(data) - T - 1, size=(steps, B))
    xs = [torch.from_numpy(np.stack([data[s: s + T] for s in row])) for row in starts]
    ys = [torch.from_numpy(np.stack([data[s + 1: s + T + 1] for s in row])) for row in starts]
    net = GPT(L, H, E, T, 256, True, True)
    params = list(net.parameters())
    opt = torch.optim.AdamW([{"params": [p for p in params if p.dim() >= 2], "weight_decay": 0.1},
                             {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}], lr=1e-3)
    t0 = time.perf_counter()
    for x, y in zip(xs, ys):
        opt.zero_grad(set_to_none=True)
        logits = net(x)
        F.cross_entropy(logits.view(-1, 256), y.view(-1)).backward()
        opt.step()
    dt = time.perf_counter() - t0
    print(json.dumps({"tokens_per_s": steps * B * T / dt, "steps": steps, "seconds": dt, "torch": torch.__version__}))


if __name__ == "__main__":
    main(sys.argv)
