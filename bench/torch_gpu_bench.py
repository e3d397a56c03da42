"""bench/torch_gpu_bench.py - PyTorch beside build/bench/gpu_bench on the same GPU.

The same networks as pacer's (model/model.c): lenet5 (conv-pool-relu twice, three fc layers)
and resnet20 (3x3 convolutions without bias, batch norm, option-A shortcuts: subsampled and
zero-padded on channels), a random fixed batch, SGD with momentum 0.9 and weight decay 5e-4,
fp32 with TF32 off on both cuDNN and cuBLAS (as pacer computes), cudnn.benchmark off (pacer
takes cuDNN's heuristic choice too), timed until the update has finished
(torch.cuda.synchronize). One line per model, in gpu_bench's format:
  torch_bench model=M batch=B params=N steps=S step_ms=... samples_per_s=... loss=... device="..." torch=V

  python3 bench/torch_gpu_bench.py [--batch 256] [--steps 50] [--warmup 5] [--device cpu]
                                   [--profile PREFIX] [model ...]

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
    raise SystemExit(f"torch_gpu_bench: unknown model {name} (lenet5, resnet20)")


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
    ap.add_argument("models", nargs="*", default=["lenet5", "resnet20"])
    a = ap.parse_args()
    try:
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
    except ImportError:
        print("skip: PyTorch is not installed (python3-torch, or pip install torch with CUDA)")
        return 0
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
        x = torch.rand((a.batch,) + shape, device=dev) * 2 - 1
        y = torch.randint(0, 10, (a.batch,), device=dev)

        def step():
            opt.zero_grad(set_to_none=True)
            loss = F.cross_entropy(model(x), y)
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
        if a.profile:
            profile(torch, step, sync, gpu, f"{a.profile}.{name}.txt")
    return 0


if __name__ == "__main__":
    sys.exit(main())
