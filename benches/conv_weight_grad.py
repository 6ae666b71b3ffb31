#!/usr/bin/env python3
# Run on a machine with a CUDA GPU and torch: python3 benches/conv_weight_grad.py
# Is Burn's generic conv weight gradient (a conv with the batch as channels and the output
# gradient as a 28x28 kernel) what makes the burn-tch step grow with the batch? Time it against
# cuDNN's own weight-gradient kernel, per layer shape of the tutorial's CNN.
import time, torch
import torch.nn.functional as F
dev = torch.device("cuda")
def t(f, reps=50):
    for _ in range(5): f()
    torch.cuda.synchronize(); s = time.perf_counter()
    for _ in range(reps): f()
    torch.cuda.synchronize(); return (time.perf_counter() - s) / reps * 1e3
print(torch.cuda.get_device_name(0))
for n in (8, 64, 256):
    for cin in (1, 10):
        x = torch.randn(n, cin, 28, 28, device=dev); g = torch.randn(n, 10, 28, 28, device=dev)
        burn = lambda: F.conv2d(x.transpose(0, 1), g.transpose(0, 1), padding=1).transpose(0, 1)
        cudnn = lambda: torch.nn.grad.conv2d_weight(x, (10, cin, 3, 3), g, padding=1)
        a, b = burn(), cudnn()
        err = (a - b).abs().max().item() / b.abs().max().item()
        print(f"batch {n} c_in {cin}: swapped conv {t(burn):.3f} ms, cudnn weight grad {t(cudnn):.3f} ms, rel diff {err:.1e}")
