#!/usr/bin/env python3
"""PyTorch eager baseline for bench-train: torchvision ResNet, synthetic data made
once on the device, the same recipe as bench-train (SGD momentum 0.875, weight
decay 3.0517578125e-05 not on BatchNorm/bias, label smoothing 0.1), the same
precisions (fp32 = TF32 off; tf32; amp = fp16 autocast + GradScaler on CUDA, bf16
autocast on CPU; bf16 = bf16 autocast), channels_last and cudnn.benchmark on CUDA.

Throughput as bench-train defines it: images in the measured window (after
warm-up) / the window's wall time, the window closed by a device synchronize.
Prints one JSON line.
"""
import argparse
import json

import torch
import torchvision

from torch_timing import time_steps


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="resnet50")
    p.add_argument("--precision", default="fp32", choices=["fp32", "tf32", "amp", "bf16"])
    p.add_argument("--bs", type=int, default=64)
    p.add_argument("--iters", type=int, default=60)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--device", default="cuda")
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--channels-last", choices=["auto", "on", "off"], default="auto")
    a = p.parse_args()

    if a.threads > 0:
        torch.set_num_threads(a.threads)
    device = torch.device(a.device)
    cuda = device.type == "cuda"
    channels_last = cuda if a.channels_last == "auto" else a.channels_last == "on"
    if cuda:
        torch.backends.cudnn.benchmark = True
        if a.precision in ("fp32", "tf32"):
            tf32 = a.precision == "tf32"
            torch.backends.cuda.matmul.allow_tf32 = tf32
            torch.backends.cudnn.allow_tf32 = tf32
    elif a.precision == "tf32":
        raise SystemExit("tf32 needs a CUDA device")

    torch.manual_seed(1)
    model = getattr(torchvision.models, a.model)(num_classes=1000).to(device)
    memory_format = torch.channels_last if channels_last else torch.contiguous_format
    model = model.to(memory_format=memory_format)
    model.train()
    decay, no_decay = [], []
    for name, param in model.named_parameters():
        (no_decay if param.ndim <= 1 or name.endswith("bias") else decay).append(param)
    lr = 0.256 * a.bs / 256
    kwargs = {}
    if cuda and "foreach" in torch.optim.SGD.__init__.__code__.co_varnames:
        kwargs["foreach"] = True
    optimizer = torch.optim.SGD(
        [{"params": decay, "weight_decay": 3.0517578125e-05}, {"params": no_decay, "weight_decay": 0.0}],
        lr=lr, momentum=0.875, **kwargs)
    criterion = torch.nn.CrossEntropyLoss(label_smoothing=0.1)

    images = torch.randn(a.bs, 3, a.image_size, a.image_size, device=device).contiguous(
        memory_format=memory_format)
    labels = torch.randint(0, 1000, (a.bs,), device=device)

    autocast_dtype = None
    if a.precision == "amp":
        autocast_dtype = torch.float16 if cuda else torch.bfloat16
    elif a.precision == "bf16":
        autocast_dtype = torch.bfloat16
    scaler = None
    if cuda and autocast_dtype == torch.float16:
        # torch.amp.GradScaler("cuda") since 2.3; torch.cuda.amp.GradScaler is deprecated.
        if hasattr(torch, "amp") and hasattr(torch.amp, "GradScaler"):
            scaler = torch.amp.GradScaler("cuda")
        else:
            scaler = torch.cuda.amp.GradScaler()

    def step():
        optimizer.zero_grad(set_to_none=True)
        if autocast_dtype is not None:
            with torch.autocast(device_type=device.type, dtype=autocast_dtype):
                logits = model(images)
        else:
            logits = model(images)
        loss = criterion(logits.float(), labels)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        else:
            loss.backward()
            optimizer.step()
        return loss

    window, loss, step_times = time_steps(step, a.warmup, a.iters, device)
    measured = (a.iters - a.warmup) * a.bs
    out = {"images_per_second": measured / window, "window_s": window, "measured_images": measured,
           "loss": float(loss), "torch": torch.__version__, "torchvision": torchvision.__version__,
           "threads": torch.get_num_threads(), "channels_last": channels_last}
    if step_times:
        out["step_time_min_s"] = min(step_times)
    if cuda:
        out["peak_memory_bytes"] = torch.cuda.max_memory_allocated(device)
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
