"""bench/torch_lenet.py - the PyTorch baseline for `make bench`: LeNet-5 on Fashion-MNIST
with the same shapes, data order size, batch and optimizer as pacer's lenet5 spec, on one
CPU thread. Prints one JSON line: samples_per_s (training samples / time in the training
loop, data loading and evaluation excluded, as pacer's summary counts it),
samples_per_cpu_s (the same over the process's CPU time in the loop: what a loaded
machine's other processes do not move), steady_step_cpu_s (the mean CPU time of a step
after the first two, null with fewer than three: what build/bench/layer_profile's step_ms
measures, after its two warm-up steps; the first steps allocate and set up oneDNN's
primitives, ResNet-20's first at autocast 1.3x a later one), peak_rss_mb, test_accuracy.

Usage: torch_lenet.py [EPOCHS [MODULE [TRAIN_SUBSET [BATCH]]]] - MODULE: another network, a
class of tests/tools/onnx_export.py (bench/onnx_import.sh trains VggBN, the module whose
ONNX export pacer imports), in training mode (its dropout and batch norm as exported), or
resnet20: pacer's resnet20 as bench/torch_gpu_bench.py defines it, on CIFAR-10 from
$PACER_SHARED/datasets/cifar-10 (bench/resnet_vs_pytorch.sh); ResNet18: onnx_export.py's
CIFAR-10 ResNet-18 on the same data (bench/resnet18_onnx.sh); tv:NAME: torchvision's
NAME (get_model(NAME, weights=None, num_classes=10)) on that data (bench/zoo_vs_torch.sh);
bench:NAME: bench/torch_transformer.py's NAME (vit, convnext) on that data
(bench/transformer_vs_torch.sh); TRAIN_SUBSET: the first N
training images only (pacer's dataset.train_subset); BATCH: 64 unless given. One thread
unless TORCH_THREADS says otherwise (bench/threads_scaling.sh). TORCH_AUTOCAST=bf16 runs the
forward and the loss under torch.autocast("cpu", dtype=torch.bfloat16) (bench/bf16_speed.sh)."""
import gzip, json, os, resource, sys, time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(int(os.environ.get("TORCH_THREADS", "1")))
torch.manual_seed(42)
DIR = "/usr/share/datasets/fashion-mnist"
AUTOCAST = os.environ.get("TORCH_AUTOCAST", "") == "bf16"


def idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


class LeNet5(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(400, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = x.flatten(1)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


def cifar(files):
    """CIFAR-10's binary batches: records of a label byte and 3x32x32 uint8 pixels."""
    d = os.path.join(os.environ.get("PACER_SHARED", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                                                 "..", "shared")), "datasets", "cifar-10")
    rec = np.concatenate([np.frombuffer(gzip.open(f"{d}/{f}.bin.gz").read(), np.uint8).reshape(-1, 3073)
                          for f in files])
    return torch.from_numpy(rec[:, 1:].reshape(-1, 3, 32, 32).copy()), torch.from_numpy(rec[:, 0].astype(np.int64))


def main():
    epochs = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    module = sys.argv[2] if len(sys.argv) > 2 else "LeNet5"
    subset = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    batch = int(sys.argv[4]) if len(sys.argv) > 4 else 64
    # Same storage as pacer: uint8 pixels, normalised per batch (per channel on CIFAR-10,
    # with common/catalog.c's statistics).
    if module in ("resnet20", "ResNet18") or module.startswith(("tv:", "bench:")):
        xtr, ytr = cifar([f"data_batch_{i}" for i in range(1, 6)] if subset <= 0 or subset > 10000 else ["data_batch_1"])
        xte, yte = cifar(["test_batch"])
        xte, yte = xte[:1000], yte[:1000]
        mean = torch.tensor([0.4914, 0.4822, 0.4465]).view(1, 3, 1, 1)
        std = torch.tensor([0.2470, 0.2435, 0.2616]).view(1, 3, 1, 1)
        unsq = lambda x: x
    else:
        xtr = torch.from_numpy(idx(f"{DIR}/train-images-idx3-ubyte.gz").copy())
        ytr = torch.from_numpy(idx(f"{DIR}/train-labels-idx1-ubyte.gz").astype(np.int64))
        xte = torch.from_numpy(idx(f"{DIR}/t10k-images-idx3-ubyte.gz").copy())
        yte = torch.from_numpy(idx(f"{DIR}/t10k-labels-idx1-ubyte.gz").astype(np.int64))
        mean, std = 0.2860, 0.3530
        unsq = lambda x: x.unsqueeze(1)
    if subset > 0:
        xtr, ytr = xtr[:subset], ytr[:subset]
    if module == "LeNet5":
        model = LeNet5()
    elif module == "resnet20":
        # the one PyTorch ResNet-20 of the benchmarks (pacer's network, model/model.c)
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import torch_gpu_bench
        model = torch_gpu_bench.build("resnet20", nn, F, torch)[0]
    elif module.startswith("tv:"):
        import torchvision
        model = torchvision.models.get_model(module[3:], weights=None, num_classes=10)
    elif module.startswith("bench:"):
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import torch_transformer
        model = torch_transformer.build(module[6:])
    else:
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "tools"))
        import onnx_export
        model = getattr(onnx_export, module)()
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
    n = xtr.shape[0]
    samples, loop, cpu = 0, 0.0, 0.0
    marks = []  # the process's CPU time after each step
    for epoch in range(epochs):
        perm = torch.randperm(n)
        c0 = time.process_time()
        t0 = time.perf_counter()
        for i in range(0, n - batch + 1, batch):
            idxs = perm[i:i + batch]
            x = (unsq(xtr[idxs].float()) / 255.0 - mean) / std
            y = ytr[idxs]
            opt.zero_grad(set_to_none=True)
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=AUTOCAST):
                loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            samples += batch
            marks.append(time.process_time())
        loop += time.perf_counter() - t0
        cpu += time.process_time() - c0
    correct = 0
    model.eval()
    with torch.no_grad():
        for i in range(0, xte.shape[0], 1000):
            x = (unsq(xte[i:i + 1000].float()) / 255.0 - mean) / std
            correct += (model(x).argmax(1) == yte[i:i + 1000]).sum().item()
    print(json.dumps({
        "samples_per_s": samples / loop,
        "samples_per_cpu_s": samples / cpu,
        "steady_step_cpu_s": (marks[-1] - marks[1]) / (len(marks) - 2) if len(marks) > 2 else None,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
        "test_accuracy": correct / xte.shape[0],
        "torch": torch.__version__,
        # the cap on oneDNN's instruction set (bench/lib.sh's torch_isa); ALL = its own choice
        "onednn_isa": os.environ.get("ONEDNN_MAX_CPU_ISA", "ALL"),
        "autocast": "bf16" if AUTOCAST else None,
    }))


main()
