#!/usr/bin/env python3
"""The PyTorch reference for bench-train's JPEG loader: torchvision's ImageFolder
(PIL decode) with RandomResizedCrop, RandomHorizontalFlip and PILToTensor (uint8,
as bench-train's loader hands over), in one process, as one DataLoader worker
runs it. Prints one JSON line: images per second over --images samples drawn
in a random order, after --warmup."""
import argparse
import json
import time

import torch
import torchvision
import torchvision.transforms as T


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--root", required=True)
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--images", type=int, default=640)
    p.add_argument("--warmup", type=int, default=64)
    a = p.parse_args()
    torch.set_num_threads(1)
    transform = T.Compose([T.RandomResizedCrop(a.image_size), T.RandomHorizontalFlip(),
                           T.PILToTensor()])
    dataset = torchvision.datasets.ImageFolder(a.root, transform=transform)
    order = torch.randperm(len(dataset), generator=torch.Generator().manual_seed(1)).tolist()
    start = time.perf_counter()
    for i in range(a.warmup + a.images):
        if i == a.warmup:
            start = time.perf_counter()
        image, _ = dataset[order[i % len(order)]]
    seconds = time.perf_counter() - start
    print(json.dumps({"processes": 1, "image_size": a.image_size, "files": len(dataset),
                      "measured_images": a.images, "seconds": round(seconds, 3),
                      "images_per_second": round(a.images / seconds, 1),
                      "torchvision": torchvision.__version__}), flush=True)


if __name__ == "__main__":
    main()
