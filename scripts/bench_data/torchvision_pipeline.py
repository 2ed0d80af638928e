#!/usr/bin/env python3
"""torchvision's side of scripts/bench_data.sh: ImageFolder + PIL + DataLoader doing what
`cvtrain data bench` does (decode, RandomResizedCrop, horizontal flip, uint8 batch; with --eval
Resize(floor(size / 0.875)) + CenterCrop(size), as `cvtrain data bench --eval`), resizing with
--interpolation's PIL filter (bicubic: timm's RandomResizedCropAndInterpolation and DeiT's eval).

PILToTensor keeps the batch uint8 as cvtrain's loader does (normalisation happens on the device
in both), so neither side pays for float conversion on the CPU.
  torchvision_pipeline.py ROOT --workers N [--batch 256] [--image-size 224] [--batches 20] [--eval] [--interpolation bicubic]
Prints one JSON object like `cvtrain data bench --json`.
"""
import argparse
import math

import torch
from torchvision import datasets, transforms

from loader_timing import print_loader_rate


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("root")
    ap.add_argument("--workers", type=int, required=True)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--image-size", type=int, default=224)
    ap.add_argument("--batches", type=int, default=20)
    ap.add_argument("--eval", action="store_true")
    ap.add_argument("--interpolation", choices=["bilinear", "bicubic"], default="bilinear")
    args = ap.parse_args()
    torch.set_num_threads(1)
    mode = transforms.InterpolationMode(args.interpolation)
    if args.eval:
        view = [transforms.Resize(math.floor(args.image_size / 0.875), interpolation=mode), transforms.CenterCrop(args.image_size)]
    else:
        view = [transforms.RandomResizedCrop(args.image_size, scale=(0.08, 1.0), interpolation=mode), transforms.RandomHorizontalFlip()]
    transform = transforms.Compose([*view, transforms.PILToTensor()])
    data = datasets.ImageFolder(args.root, transform=transform)
    print_loader_rate(data, args.batch, args.workers, args.batches)


if __name__ == "__main__":
    main()
