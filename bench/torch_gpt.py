"""bench/torch_gpt.py - PyTorch's side of bench/gpt_speed.sh: the nanoGPT-style module of
tests/tools/gpt_torch.py (GPT-2's pre-norm blocks, causal mask, tied head) trained with
AdamW on random windows of a text file, one thread; prints {"tokens_per_s": ...} for the
training loop alone (the windows are cut before the clock starts), "cpu_tokens_per_s" for
the loop's process CPU time, "step_s_median", the median of its steps' times after the
first, and "step1_s", the first step's time.

Usage: /usr/bin/python3 bench/torch_gpt.py TEXT LAYERS HEADS EMBD BLOCK BATCH STEPS [VOCAB]
TEXT is bytes (vocabulary 256, the default), or an llm.c token shard (magic 20240520, as
bench/llmc_gpt2_data.py writes) whose ids are below VOCAB (50257 for GPT-2's shape).
With TORCH_GPT_AUTOCAST=bf16 the forward and the loss run under
torch.autocast("cpu", dtype=torch.bfloat16), mixed precision as a PyTorch user switches it on
(its matrix products on oneDNN's bf16 kernels: AMX where the CPU has it).
With TORCH_GPT_MARKS=1 it prints "step N" to stderr, flushed, as each step ends (for a
watcher outside the process that reads its CPU time between steps).
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
    V = int(argv[8]) if len(argv) > 8 else 256
    torch.set_num_threads(1)
    torch.manual_seed(0)
    raw = open(text, "rb").read()
    if np.frombuffer(raw[:4], dtype=np.int32)[0] == 20240520:  # an llm.c shard: 256 int32, then uint16 ids
        n = int(np.frombuffer(raw[8:12], dtype=np.int32)[0])
        data = np.frombuffer(raw[1024: 1024 + 2 * n], dtype=np.uint16).astype(np.int64)
    else:
        data = np.frombuffer(raw, dtype=np.uint8).astype(np.int64)
    if data.max() >= V:
        sys.exit("torch_gpt: %s has id %d, outside the vocabulary of %d" % (text, data.max(), V))
    rng = np.random.default_rng(0)
    starts = rng.integers(0, len(data) - T - 1, size=(steps, B))
    xs = [torch.from_numpy(np.stack([data[s: s + T] for s in row])) for row in starts]
    ys = [torch.from_numpy(np.stack([data[s + 1: s + T + 1] for s in row])) for row in starts]
    net = GPT(L, H, E, T, V, True, True)
    params = list(net.parameters())
    opt = torch.optim.AdamW([{"params": [p for p in params if p.dim() >= 2], "weight_decay": 0.1},
                             {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}], lr=1e-3)
    times, marks = [], os.environ.get("TORCH_GPT_MARKS") == "1"
    autocast = os.environ.get("TORCH_GPT_AUTOCAST", "") == "bf16"
    t0, c0 = time.perf_counter(), time.process_time()
    for x, y in zip(xs, ys):
        ts = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            logits = net(x)
            loss = F.cross_entropy(logits.view(-1, V), y.view(-1))
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - ts)
        if marks:
            print("step %d" % len(times), file=sys.stderr, flush=True)
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    later = sorted(times[1:] or times)
    median = (later[(len(later) - 1) // 2] + later[len(later) // 2]) / 2
    print(json.dumps({"tokens_per_s": steps * B * T / dt, "steps": steps, "seconds": dt, "cpu_tokens_per_s": steps * B * T / cpu,
                      "step_s_median": median, "step1_s": times[0],
                      "autocast": "bf16" if autocast else None, "torch": torch.__version__}))


if __name__ == "__main__":
    main(sys.argv)
