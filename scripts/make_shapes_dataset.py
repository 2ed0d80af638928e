#!/usr/bin/env python3
"""A segmentation dataset that trains in CPU minutes: coloured discs, squares and triangles on
textured backgrounds, each shape's pixels labelled with its class (0 background, 1 disc, 2 square,
3 triangle), the shapes' hues overlapping between classes so that the shape, not the colour alone,
tells them apart. Written as Pascal VOC lays a dataset out (JPEGImages/, SegmentationClass/ as
palette PNGs, ImageSets/Segmentation/{train,val}.txt) and as train.csv / val.csv lists of
image,mask rows, so both layouts read the same files.

    scripts/make_shapes_dataset.py OUT [--train 512] [--val 128] [--size 64] [--seed 0]

Needs numpy and Pillow (the test venv has both). The same seed gives the same files."""
import argparse
import os

import numpy as np
from PIL import Image

CLASSES = ["background", "disc", "square", "triangle"]


def voc_palette(n=256):
    palette = []
    for i in range(n):
        c = [0, 0, 0]
        bits, shift = i, 7
        while bits:
            for ch in range(3):
                c[ch] |= ((bits >> ch) & 1) << shift
            bits >>= 3
            shift -= 1
        palette.extend(c)
    return palette


def background(rng, size):
    """Smooth noise at two scales, plus stripes at a random angle: texture that is no class."""
    y, x = np.mgrid[0:size, 0:size].astype(np.float32)
    img = np.zeros((size, size, 3), np.float32)
    for cells in (4, 16):
        coarse = rng.uniform(0, 1, (cells + 1, cells + 1, 3)).astype(np.float32)
        small = Image.fromarray((coarse * 255).astype(np.uint8)).resize((size, size), Image.BILINEAR)
        img += np.asarray(small, np.float32) * (0.6 if cells == 4 else 0.25)
    angle, period = rng.uniform(0, np.pi), rng.uniform(5, 14)
    stripes = np.sin((x * np.cos(angle) + y * np.sin(angle)) * 2 * np.pi / period)
    img += (stripes * rng.uniform(10, 30))[..., None]
    return np.clip(img * 0.8 + 20, 0, 255)


def shape_mask(kind, rng, size):
    y, x = np.mgrid[0:size, 0:size].astype(np.float32) + 0.5
    cx, cy = rng.uniform(0.15, 0.85, 2) * size
    r = rng.uniform(0.14, 0.28) * size
    if kind == 1:
        return (x - cx) ** 2 + (y - cy) ** 2 <= r * r
    if kind == 2:
        return (abs(x - cx) <= r * 0.9) & (abs(y - cy) <= r * 0.9)
    # triangle: inside three half-planes around (cx, cy), pointing up
    top, left, right = (cx, cy - r), (cx - r, cy + r * 0.8), (cx + r, cy + r * 0.8)
    def side(a, b):
        return (b[0] - a[0]) * (y - a[1]) - (b[1] - a[1]) * (x - a[0]) >= 0
    return side(top, right) & side(right, left) & side(left, top)


def sample(rng, size):
    img = background(rng, size)
    mask = np.zeros((size, size), np.uint8)
    for _ in range(rng.integers(1, 4)):
        kind = int(rng.integers(1, 4))
        inside = shape_mask(kind, rng, size)
        base = np.array([[220, 60, 50], [60, 200, 70], [60, 90, 220]][kind - 1], np.float32)
        colour = np.clip(base + rng.uniform(-60, 60, 3), 0, 255)
        img[inside] = colour + rng.normal(0, 6, (int(inside.sum()), 3))
        mask[inside] = kind
    return np.clip(img, 0, 255).astype(np.uint8), mask


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out")
    parser.add_argument("--train", type=int, default=512)
    parser.add_argument("--val", type=int, default=128)
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    for sub in ("JPEGImages", "SegmentationClass", "ImageSets/Segmentation"):
        os.makedirs(os.path.join(args.out, sub), exist_ok=True)
    palette = voc_palette()
    for split, count in (("train", args.train), ("val", args.val)):
        ids = []
        for i in range(count):
            name = f"{split}_{i:05d}"
            img, mask = sample(rng, args.size)
            Image.fromarray(img).save(os.path.join(args.out, "JPEGImages", name + ".jpg"), quality=95)
            label = Image.fromarray(mask, mode="P")
            label.putpalette(palette)
            label.save(os.path.join(args.out, "SegmentationClass", name + ".png"))
            ids.append(name)
        with open(os.path.join(args.out, "ImageSets/Segmentation", split + ".txt"), "w") as f:
            f.write("\n".join(ids) + "\n")
        with open(os.path.join(args.out, split + ".csv"), "w") as f:
            f.write("image,mask\n" + "".join(f"JPEGImages/{n}.jpg,SegmentationClass/{n}.png\n" for n in ids))
    with open(os.path.join(args.out, "classes.txt"), "w") as f:
        f.write("\n".join(CLASSES) + "\n")
    print(f"{args.out}: {args.train} training and {args.val} validation pairs of {args.size}x{args.size}, classes {', '.join(CLASSES)}")


if __name__ == "__main__":
    main()
