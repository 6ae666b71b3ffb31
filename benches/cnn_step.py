"""The reference tutorial's CNN, one training step in PyTorch eager (forward, NLL, backward,
Adadelta step, loss.item()), the same network, batch and thread count as benches/cnn_step.rs.

    python benches/cnn_step.py CONV_LAYERS BATCH THREADS STEPS

DEVICE=cuda runs it on the first GPU (scripts/gpu-check.sh), as benches/cnn_step.rs does.
"""
import os
import sys
import time

import torch
from torch import nn


class Net(nn.Module):
    def __init__(self, conv_layers):
        super().__init__()
        layers = [nn.Conv2d(1, 10, 3, padding=1), nn.ReLU()]
        for _ in range(conv_layers - 1):
            layers += [nn.Conv2d(10, 10, 3, padding=1), nn.ReLU()]
        self.convs = nn.Sequential(*layers)
        self.fc = nn.Linear(10 * 28 * 28, 10)

    def forward(self, x):
        return nn.functional.log_softmax(self.fc(self.convs(x).flatten(1)), dim=1)


def main():
    conv_layers, batch, threads, steps = (int(a) for a in (sys.argv[1:] + ["3", "8", "1", "200"][len(sys.argv) - 1:])[:4])
    torch.set_num_threads(threads)
    torch.manual_seed(1)
    device = torch.device(os.environ.get("DEVICE", "cpu"))
    model = Net(conv_layers).to(device)
    optim = torch.optim.Adadelta(model.parameters(), lr=1.0)
    loss_fn = nn.NLLLoss()
    batches = [((torch.rand(batch, 1, 28, 28) - 0.5).to(device), torch.randint(0, 10, (batch,)).to(device))
               for _ in range(8)]
    times = []
    for s in range(steps + 5):
        x, y = batches[s % len(batches)]
        t0 = time.perf_counter()
        optim.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optim.step()
        loss.item()
        if s >= 5:
            times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    print(f"backend pytorch conv_layers {conv_layers} batch {batch} threads {threads} median_ms {times[len(times) // 2]:.3f}")


main()
