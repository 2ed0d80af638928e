#!/usr/bin/env python3
"""timm's side of scripts/bench_data.sh's augmented view: timm's own training transform
(timm.data.create_transform: RandomResizedCrop 224 scale 0.08-1, horizontal flip, RandAugment,
ToTensor, Normalize, RandomErasing in pixel mode, bilinear throughout) on an ImageFolder, through a
DataLoader of worker processes, as timm's train.py without its CUDA prefetcher runs it. The batches
are normalised and erased float tensors, as `cvtrain data bench --random-erasing` times them.
  timm_pipeline.py ROOT --workers N --auto-augment POLICY --random-erasing P [--batch 256] [--batches 20]
Prints one JSON object like `cvtrain data bench --json`.
"""
import argparse

import torch
from timm.data import create_transform
from torchvision import datasets

from loader_timing import print_loader_rate


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("root")
    ap.add_argument("--workers", type=int, required=True)
    ap.add_argument("--auto-augment", required=True)
    ap.add_argument("--random-erasing", type=float, required=True)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--image-size", type=int, default=224)
    ap.add_argument("--batches", type=int, default=20)
    args = ap.parse_args()
    torch.set_num_threads(1)
    transform = create_transform(args.image_size, is_training=True, scale=(0.08, 1.0), hflip=0.5, auto_augment=args.auto_augment,
                                 interpolation="bilinear", re_prob=args.random_erasing, re_mode="pixel", re_count=1)
    data = datasets.ImageFolder(args.root, transform=transform)
    print_loader_rate(data, args.batch, args.workers, args.batches)


if __name__ == "__main__":
    main()
