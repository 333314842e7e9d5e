"""PyTorch DDP (gloo) on the MLP of bench/allreduce_bench.cpp's fit, for bench/RESULTS.md:
784-512-512-10, Adam(1e-3), 8,192 random 28x28 images, global batch 128 (64 steps per epoch),
one warm-up epoch then the median of --epochs timed epochs.

    torchrun --nproc_per_node 2 bench/peers/ddp_mlp.py --threads 1      # 2 ranks x 1 thread
    python bench/peers/ddp_mlp.py --threads 2                            # 1 process x 2 threads (no DDP)
"""
import argparse
import os
import statistics
import time

import torch
import torch.distributed as dist
import torch.nn as nn

p = argparse.ArgumentParser()
p.add_argument("--threads", type=int, default=1)
p.add_argument("--epochs", type=int, default=3)
a = p.parse_args()
torch.set_num_threads(a.threads)
world = int(os.environ.get("WORLD_SIZE", "1"))
rank = int(os.environ.get("RANK", "0"))
if world > 1:
    dist.init_process_group("gloo")
torch.manual_seed(1)
model = nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
if world > 1:
    model = nn.parallel.DistributedDataParallel(model)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
g = torch.Generator().manual_seed(7)
x = torch.rand(8192, 28, 28, generator=g)
y = torch.randint(0, 10, (8192,), generator=g)
loss_fn = nn.CrossEntropyLoss()
local = 128 // world


def epoch():
    perm = torch.randperm(8192, generator=g)
    for b in range(64):
        idx = perm[b * 128:(b + 1) * 128][rank * local:(rank + 1) * local]
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x[idx]), y[idx])
        loss.backward()
        opt.step()
    return loss.item()


epoch()
times = []
for _ in range(a.epochs):
    t0 = time.perf_counter()
    epoch()
    times.append(time.perf_counter() - t0)
s = statistics.median(times)
if rank == 0:
    print(f"torch {'DDP gloo' if world > 1 else 'alone'}: {world} rank(s) x {a.threads} thread(s): {s:.3f} s/epoch, "
          f"{s / 64 * 1e3:.2f} ms/step")
if world > 1:
    dist.destroy_process_group()
