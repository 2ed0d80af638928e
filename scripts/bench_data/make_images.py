#!/usr/bin/env python3
"""Builds an ImageNet-like ImageFolder of JPEGs from the real photographs scikit-image ships.

Every image is a random crop of a photo (30-100 % of its area), randomly flipped and resized to
about 500x375 (a quarter portrait 375x500), saved at JPEG quality 90, so no two files are equal.
  make_images.py OUT [--count 2560] [--classes 10] [--seed 0]
Idempotent: an OUT already holding that many images is left alone.
"""
import argparse
import os
import random

import numpy as np
from PIL import Image
import skimage.data

PHOTOS = ["astronaut", "chelsea", "coffee", "rocket", "hubble_deep_field", "retina", "immunohistochemistry",
          "motorcycle_left", "brick", "grass", "gravel", "camera", "coins", "moon"]


def load_photos():
    photos = []
    for name in PHOTOS:
        loader = getattr(skimage.data, name, None)
        if loader is None:
            continue
        try:
            array = loader()
        except Exception:  # a photo that needs a download (no network here) is simply not used
            continue
        photos.append(Image.fromarray(np.asarray(array)).convert("RGB"))
    if len(photos) < 5:
        raise SystemExit("make_images.py: scikit-image ships fewer than 5 usable sample photos")
    return photos


def variant(photo, rng):
    w, h = photo.size
    area = rng.uniform(0.3, 1.0) * w * h
    aspect = rng.uniform(0.75, 1.333)
    cw, ch = min(w, int((area * aspect) ** 0.5)), min(h, int((area / aspect) ** 0.5))
    x, y = rng.randint(0, w - cw), rng.randint(0, h - ch)
    img = photo.crop((x, y, x + cw, y + ch))
    if rng.random() < 0.5:
        img = img.transpose(Image.FLIP_LEFT_RIGHT)
    jitter = rng.uniform(0.9, 1.1)
    size = (int(500 * jitter), int(375 * jitter)) if rng.random() < 0.75 else (int(375 * jitter), int(500 * jitter))
    return img.resize(size, Image.BILINEAR)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--count", type=int, default=2560)
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    existing = sum(len(files) for _, _, files in os.walk(args.out)) if os.path.isdir(args.out) else 0
    if existing == args.count:
        return
    rng = random.Random(args.seed)
    photos = load_photos()
    for i in range(args.count):
        folder = os.path.join(args.out, f"class_{i % args.classes:02d}")
        os.makedirs(folder, exist_ok=True)
        variant(photos[rng.randrange(len(photos))], rng).save(os.path.join(folder, f"img_{i:05d}.jpg"), quality=90)


if __name__ == "__main__":
    main()
