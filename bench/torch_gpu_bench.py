"""bench/torch_gpu_bench.py - PyTorch beside build/bench/gpu_bench on the same GPU.

The same networks as pacer's (model/model.c): lenet5 (conv-pool-relu twice, three fc layers)
and resnet20 (3x3 convolutions without bias, batch norm, option-A shortcuts: subsampled and
zero-padded on channels), a random fixed batch, SGD with momentum 0.9 and weight decay 5e-4,
fp32 with TF32 off on both cuDNN and cuBLAS (as pacer computes), cudnn.benchmark off (pacer
takes cuDNN's heuristic choice too), timed until the update has finished
(torch.cuda.synchronize). The language models gpt-char and gpt2 (gpt below) as gpu_bench
builds them, with the same optimizer. One line per model, in gpu_bench's format:
  torch_bench model=M batch=B params=N steps=S step_ms=... samples_per_s=... loss=... device="..." torch=V

  python3 bench/torch_gpu_bench.py [--batch 256] [--steps 50] [--warmup 5] [--device cpu]
                                   [--profile PREFIX] [--attention sdpa|manual] [model ...]

--profile PREFIX: after the timed steps, 10 more under torch.profiler, its table (kernel by
kernel, sorted by device time) written to PREFIX.M.txt, to set beside Nsight Systems' of
gpu_bench. params must equal gpu_bench's (the same network). --device cpu runs the same loop on the
CPU (to check the script where there is no GPU). Without torch or a CUDA device it prints
"skip: ..." and exits 0."""
import argparse
import sys
import time


def build(name, nn, F, torch):
    class LeNet5(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
            self.conv2 = nn.Conv2d(6, 16, 5)
            self.fc1 = nn.Linear(400, 120)
            self.fc2 = nn.Linear(120, 84)
            self.fc3 = nn.Linear(84, 10)

        def forward(self, x):
            x = F.relu(F.max_pool2d(self.conv1(x), 2))
            x = F.relu(F.max_pool2d(self.conv2(x), 2))
            x = x.flatten(1)
            return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.stride, self.pad = stride, (cout - cin) // 2

        def forward(self, x):
            y = F.relu(self.bn1(self.conv1(x)))
            y = self.bn2(self.conv2(y))
            s = x[:, :, ::self.stride, ::self.stride] if self.stride > 1 else x
            if self.pad:
                s = F.pad(s, (0, 0, 0, 0, self.pad, self.pad))
            return F.relu(y + s)

    class ResNet20(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 16, 3, 1, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(16)
            layers, cin = [], 16
            for s, w in enumerate((16, 32, 64)):
                for k in range(3):
                    layers.append(Block(cin, w, 2 if s > 0 and k == 0 else 1))
                    cin = w
            self.layers = nn.Sequential(*layers)
            self.fc = nn.Linear(64, 10)

        def forward(self, x):
            x = self.layers(F.relu(self.bn1(self.conv1(x))))
            return self.fc(x.mean((2, 3)))

    if name == "lenet5":
        return LeNet5(), (1, 28, 28)
    if name == "resnet20":
        return ResNet20(), (3, 32, 32)
    if name in GPTS:
        return gpt(GPTS[name], nn, F, torch), None
    raise SystemExit(f"torch_gpu_bench: unknown model {name} (lenet5, resnet20, {', '.join(GPTS)})")


# gpu_bench's language models (bench/gpu_bench.c's create_model): layers, heads, width,
# block, vocabulary; biases, tied embeddings, no dropout.
GPTS = {"gpt-char": (6, 6, 384, 256, 65), "gpt2": (12, 12, 768, 1024, 50257)}
ATTENTION = {"mode": "sdpa"}


def gpt(shape, nn, F, torch):
    """nanoGPT's model.py at pacer's GPT shape: pre-norm blocks, causal self-attention
    (F.scaled_dot_product_attention, nanoGPT's own default, or with --attention manual its
    other path: the masked_fill of a lower-triangular mask, softmax, the product), a GELU
    MLP 4x wide (tanh-free, as nn.GELU()), learned positions, the head tied to wte."""
    L, H, E, T, V = shape

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.ln_2 = nn.LayerNorm(E), nn.LayerNorm(E)
            self.c_attn, self.c_proj = nn.Linear(E, 3 * E), nn.Linear(E, E)
            self.c_fc, self.mlp_proj = nn.Linear(E, 4 * E), nn.Linear(4 * E, E)
            self.register_buffer("mask", torch.tril(torch.ones(T, T, dtype=torch.bool)))

        def attn(self, x):
            B, n, _ = x.shape
            q, k, v = self.c_attn(x).split(E, dim=2)
            q, k, v = (t.view(B, n, H, E // H).transpose(1, 2) for t in (q, k, v))
            if ATTENTION["mode"] == "sdpa":
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:
                a = (q @ k.transpose(-2, -1)) * (1.0 / (E // H) ** 0.5)
                a = a.masked_fill(~self.mask[:n, :n], float("-inf"))
                y = F.softmax(a, dim=-1) @ v
            return self.c_proj(y.transpose(1, 2).contiguous().view(B, n, E))

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x))))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(V, E), nn.Embedding(T, E)
            self.h = nn.ModuleList(Block() for _ in range(L))
            self.ln_f = nn.LayerNorm(E)
            self.lm_head = nn.Linear(E, V, bias=False)
            self.lm_head.weight = self.wte.weight
            self.vocab, self.block = V, T
            # GPT-2's initialisation (nanoGPT's, as pacer's model_gpt_init)
            for n, p in self.named_parameters():
                if n.endswith("bias"):
                    nn.init.zeros_(p)
                elif "ln_" not in n:
                    std = 0.02 / (2 * L) ** 0.5 if n.endswith(("c_proj.weight", "mlp_proj.weight")) else 0.02
                    nn.init.normal_(p, 0.0, std)

        def forward(self, idx):
            x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
            for b in self.h:
                x = b(x)
            return self.lm_head(self.ln_f(x))

    return GPT()


def profile(torch, step, sync, gpu, path):
    from torch.profiler import ProfilerActivity
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if gpu else [])
    with torch.profiler.profile(activities=acts) as prof:
        for _ in range(10):
            step()
        sync()
    key = "cuda_time_total" if gpu else "cpu_time_total"
    with open(path, "w") as f:
        f.write(prof.key_averages().table(sort_by=key, row_limit=40))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--profile", default="")
    ap.add_argument("--attention", default="sdpa", choices=["sdpa", "manual"])
    ap.add_argument("models", nargs="*", default=["lenet5", "resnet20"])
    a = ap.parse_args()
    try:
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
    except ImportError:
        print("skip: PyTorch is not installed (python3-torch, or pip install torch with CUDA)")
        return 0
    ATTENTION["mode"] = a.attention
    if not hasattr(F, "scaled_dot_product_attention"):  # before torch 2.0: nanoGPT's other path
        ATTENTION["mode"] = "manual"
    gpu = a.device == "cuda"
    if gpu and not torch.cuda.is_available():
        print(f"skip: this PyTorch ({torch.__version__}) sees no CUDA device")
        return 0
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = False
    dev = torch.device(a.device)
    sync = torch.cuda.synchronize if gpu else (lambda: None)
    torch.manual_seed(42)
    for name in a.models:
        model, shape = build(name, nn, F, torch)
        model = model.to(dev).train()
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
        if shape is None:  # a language model: token ids in, a label per position
            x = torch.randint(0, model.vocab, (a.batch, model.block), device=dev)
            y = torch.randint(0, model.vocab, (a.batch * model.block,), device=dev)
        else:
            x = torch.rand((a.batch,) + shape, device=dev) * 2 - 1
            y = torch.randint(0, 10, (a.batch,), device=dev)

        def step():
            opt.zero_grad(set_to_none=True)
            out = model(x)
            loss = F.cross_entropy(out.view(-1, out.shape[-1]), y)
            loss.backward()
            opt.step()
            return loss

        for _ in range(a.warmup):
            step()
        sync()
        t0 = time.perf_counter()
        for _ in range(a.steps):
            loss = step()
        sync()
        dt = (time.perf_counter() - t0) / a.steps
        params = sum(p.numel() for p in model.parameters())
        name_dev = torch.cuda.get_device_name(0) if gpu else "cpu"
        print(f"torch_bench model={name} batch={a.batch} params={params} steps={a.steps} step_ms={1e3 * dt:.3f} "
              f"samples_per_s={a.batch / dt:.0f} loss={loss.item():.4f} "
              f'device="{name_dev}" torch={torch.__version__}')
        if shape is None:
            print(f"torch_bench model={name} attention={ATTENTION['mode']} tokens_per_s={a.batch * model.block / dt:.0f}")
        if a.profile:
            profile(torch, step, sync, gpu, f"{a.profile}.{name}.txt")
    return 0


if __name__ == "__main__":
    sys.exit(main())
