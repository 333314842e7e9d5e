"""PyTorch's scaled_dot_product_attention, forward + backward, on bench/attention_bench.cpp's
shapes (q, k, v [1, 4, seq, 64] float32, gradients of sum(out * w)). Run with the peer venv:
~/.cache/eagerflow/peers/bin/python bench/peers/attention_torch.py [threads]"""
import sys, time
import torch
import torch.nn.functional as F

threads = int(sys.argv[1]) if len(sys.argv) > 1 else 1
torch.set_num_threads(threads)
torch.manual_seed(0)
for seq, causal, backward in [(256, False, True), (1024, False, True), (4096, False, True), (1024, True, True),
                              (4096, True, True), (1024, False, False), (4096, False, False)]:
    q, k, v, w = (torch.randn(1, 4, seq, 64) for _ in range(4))
    for t in (q, k, v):
        t.requires_grad_(True)
    def step():
        if not backward:
            with torch.no_grad():
                return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        return torch.autograd.grad((y * w).sum(), (q, k, v))
    for _ in range(2):
        step()
    n, start = 0, time.perf_counter()
    while n < 3 or time.perf_counter() - start < 2.0:
        step()
        n += 1
    ms = (time.perf_counter() - start) / n * 1e3
    print(f"torch sdpa seq={seq} causal={int(causal)} backward={int(backward)} threads={threads}: {ms:.2f} ms")
