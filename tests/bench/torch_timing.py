"""The timing of the PyTorch eager references (pytorch_eager_resnet.py,
pytorch_eager_ssd.py), as bench-train times itself: `warmup` steps, a synchronize, then
the measured steps and a synchronize closing the window."""
import time

import torch


def time_steps(step, warmup, iters, device):
    """Runs `step()` `iters` times, the first `warmup` unmeasured. Returns (window in
    seconds, the last step's loss, each measured step's time on the CPU (there every
    step completes before step() returns; empty on CUDA))."""
    cuda = device.type == "cuda"

    def sync():
        if cuda:
            torch.cuda.synchronize(device)

    for _ in range(warmup):
        step()
    sync()
    start = time.perf_counter()
    step_times = []
    loss = None
    for _ in range(iters - warmup):
        t0 = time.perf_counter()
        loss = step()
        if not cuda:
            step_times.append(time.perf_counter() - t0)
    sync()
    return time.perf_counter() - start, loss, step_times
