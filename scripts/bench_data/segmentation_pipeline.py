#!/usr/bin/env python3
"""The Python side of scripts/bench_data.sh's segmentation view: a torchvision-style Dataset of
Pascal VOC image and mask pairs (PIL) with mmsegmentation's standard training transforms written
out in PIL and numpy, in a DataLoader with N worker processes, doing what `cvtrain data bench` does
with pairs: decode both files, RandomResize (scale (2048, 512), ratio 0.5-2, aspect kept; bilinear
image, nearest mask), RandomCrop of --image-size with cat_max_ratio 0.75 (up to 10 draws), a
horizontal flip with chance 1/2, PhotoMetricDistortion on the image (mmseg's order and ranges; HSV
through PIL) and padding to the crop (0, and 255 in the mask), batched as uint8 tensors.
  segmentation_pipeline.py VOC_SPLIT_FILE --workers N [--batch 16] [--image-size 512] [--batches 20]
Prints one JSON object like `cvtrain data bench --json`.
"""
import argparse
import os
import random

import numpy as np
import torch
from PIL import Image

from loader_timing import print_loader_rate

SCALE = (2048, 512)
RATIO = (0.5, 2.0)
CAT_MAX_RATIO = 0.75
IGNORE = 255


def random_resize(image, mask):
    ratio = random.uniform(*RATIO)
    long_side, short_side = SCALE[0] * ratio, SCALE[1] * ratio
    w, h = image.size
    factor = min(long_side / max(h, w), short_side / min(h, w))  # mmcv's rescale_size
    size = (int(w * factor + 0.5), int(h * factor + 0.5))
    return image.resize(size, Image.BILINEAR), mask.resize(size, Image.NEAREST)


def random_crop(image, mask, crop):
    w, h = image.size
    box = None
    for _ in range(10):
        x, y = random.randint(0, max(w - crop, 0)), random.randint(0, max(h - crop, 0))
        box = (x, y, min(x + crop, w), min(y + crop, h))
        ids, counts = np.unique(np.asarray(mask.crop(box)), return_counts=True)
        counts = counts[ids != IGNORE]
        if len(counts) > 1 and counts.max() / counts.sum() < CAT_MAX_RATIO:
            break
    return image.crop(box), mask.crop(box)


def convert(values, alpha=1.0, beta=0.0):
    return np.clip(values.astype(np.float32) * alpha + beta, 0, 255).astype(np.uint8)


def photometric(image):
    img = np.asarray(image)
    if random.randint(0, 1):
        img = convert(img, beta=random.uniform(-32, 32))
    mode = random.randint(0, 1)
    if mode == 1 and random.randint(0, 1):
        img = convert(img, alpha=random.uniform(0.5, 1.5))
    saturate, shift = random.randint(0, 1), random.randint(0, 1)
    if saturate or shift:
        hsv = np.array(Image.fromarray(img).convert("HSV"))
        if saturate:
            hsv[:, :, 1] = convert(hsv[:, :, 1], alpha=random.uniform(0.5, 1.5))
        if shift:
            hsv[:, :, 0] = (hsv[:, :, 0].astype(int) + random.randint(-18, 18) * 256 // 180) % 256
        img = np.array(Image.fromarray(hsv, "HSV").convert("RGB"))
    if mode == 0 and random.randint(0, 1):
        img = convert(img, alpha=random.uniform(0.5, 1.5))
    return img


class VocPairs(torch.utils.data.Dataset):
    def __init__(self, split_file, crop):
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(split_file))))
        names = [line.strip() for line in open(split_file) if line.strip()]
        self.pairs = [(os.path.join(root, "JPEGImages", n + ".jpg"), os.path.join(root, "SegmentationClass", n + ".png")) for n in names]
        self.crop = crop

    def __len__(self):
        return len(self.pairs)

    def __getitem__(self, index):
        image_path, mask_path = self.pairs[index]
        image, mask = Image.open(image_path).convert("RGB"), Image.open(mask_path)
        image, mask = random_crop(*random_resize(image, mask), self.crop)
        if random.random() < 0.5:
            image, mask = image.transpose(Image.FLIP_LEFT_RIGHT), mask.transpose(Image.FLIP_LEFT_RIGHT)
        pixels, ids = photometric(image), np.asarray(mask)
        out_image = np.zeros((self.crop, self.crop, 3), np.uint8)
        out_mask = np.full((self.crop, self.crop), IGNORE, np.uint8)
        out_image[:pixels.shape[0], :pixels.shape[1]] = pixels
        out_mask[:ids.shape[0], :ids.shape[1]] = ids
        return torch.from_numpy(out_image).permute(2, 0, 1), torch.from_numpy(out_mask)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("split_file")
    ap.add_argument("--workers", type=int, required=True)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--image-size", type=int, default=512)
    ap.add_argument("--batches", type=int, default=20)
    args = ap.parse_args()
    torch.set_num_threads(1)
    print_loader_rate(VocPairs(args.split_file, args.image_size), args.batch, args.workers, args.batches)


if __name__ == "__main__":
    main()
