"""bench/torch_powersgd.py - an independent baseline for issue 47's accuracy at equal epochs:
PyTorch's own PowerSGD (DDP's communication hook, torch/distributed/algorithms/
ddp_comm_hooks/powerSGD_hook.py, default state: error feedback, warm start,
min_compression_rate 2) against the uncompressed all-reduce, in the scale-down of
bench/compress_tta.sh: pacer's ResNet-20 (bench/torch_gpu_bench.py's definition), the first
TRAIN CIFAR-10 training images (no augmentation, normalised per channel as pacer does),
WORKERS processes (gloo, one thread each) of batch BATCH, EPOCHS epochs, SGD lr 0.1,
momentum 0.9, weight decay 1e-4, cosine to 0 by step; the test accuracy on the first TEST
test images at each epoch's end (rank 0). Does PyTorch lose points at 4 epochs too?

  python3 bench/torch_powersgd.py KIND SEED   KIND: none, or powersgd[-wN] (rank RANK, 2;
      warm-up: N steps of plain all-reduce, the hook's start_powerSGD_iter, which it needs
      to be at least 2, so plain powersgd means 2)

Prints one JSON line per evaluation (epoch, step, test_accuracy) and a last one with the
final accuracy, the kind, the seed and the torch version. Environment: TRAIN (20480), TEST
(5000), EPOCHS (4), WORKERS (4), BATCH (32 a worker), RANK (2)."""
import json, os, sys

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as psgd

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import torch_gpu_bench  # noqa: E402  the one PyTorch ResNet-20 of the benchmarks
import torch_transformer  # noqa: E402  its CIFAR-10 reader

ENV = {k: int(os.environ.get(k, d)) for k, d in
       (("TRAIN", 20480), ("TEST", 5000), ("EPOCHS", 4), ("WORKERS", 4), ("BATCH", 32), ("RANK", 2))}


def cifar(files, n):
    """The first n images of torch_transformer.cifar's, as floats normalised per channel
    (common/catalog.c's statistics, as pacer does)."""
    x, y = torch_transformer.cifar(files)
    return (x[:n].float() / 255.0 - torch_transformer.MEAN) / torch_transformer.STD, y[:n]


def serial_hook(state, bucket):
    """The hook, each bucket's chain of collectives finished before the next bucket's
    starts: with gloo, ResNet-20's two DDP buckets otherwise interleave their chained
    all-reduces in different orders on different ranks, and gloo aborts on the mismatch
    ("op.preamble.length <= op.nbytes"). It changes when the collectives run, not what
    they compute."""
    fut = psgd.powerSGD_hook(state, bucket)
    fut.wait()
    return fut


def worker(rank, kind, seed, port):
    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=ENV["WORKERS"])
    torch.manual_seed(seed)  # the same initial weights on every rank (DDP broadcasts rank 0's anyway)
    xtr, ytr = cifar([f"data_batch_{i}" for i in range(1, 6)], ENV["TRAIN"])
    model = nn.parallel.DistributedDataParallel(torch_gpu_bench.build("resnet20", nn, F, torch)[0])
    if kind != "none":
        warm = int(kind.split("-w")[1]) if "-w" in kind else 2
        state = psgd.PowerSGDState(process_group=None, matrix_approximation_rank=ENV["RANK"],
                                   start_powerSGD_iter=max(warm, 2), random_seed=seed)
        model.register_comm_hook(state, serial_hook)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    gb = ENV["BATCH"] * ENV["WORKERS"]
    per_epoch = ENV["TRAIN"] // gb
    total = per_epoch * ENV["EPOCHS"]
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda t: 0.5 * (1 + np.cos(np.pi * t / total)))
    gen = torch.Generator().manual_seed(seed)  # the same order on every rank; each takes its slice
    if rank == 0:
        xte, yte = cifar(["test_batch"], ENV["TEST"])
    acc = None
    for epoch in range(ENV["EPOCHS"]):
        model.train()
        perm = torch.randperm(ENV["TRAIN"], generator=gen)
        for s in range(per_epoch):
            idx = perm[s * gb + rank * ENV["BATCH"]:s * gb + (rank + 1) * ENV["BATCH"]]
            opt.zero_grad(set_to_none=True)
            F.cross_entropy(model(xtr[idx]), ytr[idx]).backward()
            opt.step()
            sched.step()
        if rank == 0:
            model.eval()
            with torch.no_grad():
                correct = sum((model.module(xte[i:i + 500]).argmax(1) == yte[i:i + 500]).sum().item()
                              for i in range(0, xte.shape[0], 500))
            acc = correct / xte.shape[0]
            print(json.dumps({"epoch": epoch + 1, "step": (epoch + 1) * per_epoch, "test_accuracy": acc}), flush=True)
        dist.barrier()
    if rank == 0:
        print(json.dumps({"kind": kind, "seed": seed, "final_accuracy": acc, "torch": torch.__version__, **ENV}),
              flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    kind, seed = sys.argv[1], int(sys.argv[2])
    if kind != "none" and not kind.startswith("powersgd"):
        raise SystemExit(f"torch_powersgd: unknown kind {kind} (none, powersgd, powersgd-wN)")
    mp.spawn(worker, args=(kind, seed, 29500 + os.getpid() % 1000), nprocs=ENV["WORKERS"])
