"""bench/torch_generate.py - PyTorch's own generation loop with a key/value cache, one
thread, for bench/generate_speed.sh: the module of tests/tools/gpt_torch.py (float32,
initialised by torch; the speed does not depend on the weights), a prompt of P tokens fed
at once (the cache filled), then N tokens greedily, one position each against the cache.

Usage: /usr/bin/python3 bench/torch_generate.py L H E T P N
Prints {"tokens_per_s", "first_token_s", "torch"} (tokens_per_s over the N tokens after the
first, first_token_s the prompt's pass and the first token).

Usage: /usr/bin/python3 bench/torch_generate.py --export OUT.onnx L H E T
Writes the same module as torch.onnx writes it at opset 17 (do_constant_folding off: the
weights keep their state_dict names), int64 ids (N, T) in, logits (N, T, 256) out: the
imported language model the bench generates from.
"""
import json
import math
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "tools"))
from gpt_torch import GPT  # noqa: E402


def forward(net, ids, pos0, cache):
    """logits of the last of ids (1, n) at positions pos0.., the cache (per block [K, V] of
    (1, H, t, D)) extended"""
    tr = net.transformer
    n = ids.size(1)
    x = tr.wte(ids) + tr.wpe(torch.arange(pos0, pos0 + n))
    for i, b in enumerate(tr.h):
        h = b.ln_1(x)
        E = h.size(-1)
        H = b.attn.H
        q, k, v = (a.view(1, n, H, E // H).transpose(1, 2) for a in b.attn.c_attn(h).split(E, dim=2))
        if cache[i]:
            k = torch.cat([cache[i][0], k], dim=2)
            v = torch.cat([cache[i][1], v], dim=2)
        cache[i] = [k, v]
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        if n > 1:
            att = att.masked_fill(torch.tril(torch.ones(n, n)) == 0, float("-inf"))
        y = (F.softmax(att, dim=-1) @ v).transpose(1, 2).contiguous().view(1, n, E)
        x = x + b.attn.c_proj(y)
        x = x + b.mlp(b.ln_2(x))
    return net.lm_head(tr.ln_f(x[:, -1]))


def export(path, L, H, E, T):
    torch.manual_seed(0)
    net = GPT(L, H, E, T, 256, True, True).eval()
    torch.onnx.export(net, (torch.zeros(1, T, dtype=torch.long),), path, opset_version=17,
                      do_constant_folding=False, input_names=["idx"], output_names=["logits"],
                      dynamic_axes={"idx": {0: "N"}, "logits": {0: "N"}})
    return 0


def main(argv):
    if argv[1] == "--export":
        return export(argv[2], *map(int, argv[3:7]))
    L, H, E, T, P, N = map(int, argv[1:7])
    torch.set_num_threads(1)
    torch.manual_seed(0)
    net = GPT(L, H, E, T, 256, True, True).eval()
    prompt = torch.randint(0, 256, (1, P))
    with torch.no_grad():
        t0 = time.perf_counter()
        cache = [None] * L
        tok = forward(net, prompt, 0, cache).argmax(-1, keepdim=True)
        t1 = time.perf_counter()
        for i in range(N):
            tok = forward(net, tok, P + 1 + i - 1, cache).argmax(-1, keepdim=True)
        t2 = time.perf_counter()
    print(json.dumps({"tokens_per_s": N / (t2 - t1), "first_token_s": t1 - t0, "torch": torch.__version__}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
