#!/usr/bin/env python3
"""cvtrain's random resized crop against timm's RandomResizedCropAndInterpolation, as
augment.random_resized_crop, augment.random_resized_crop_ratio and augment.interpolation set it.

1. Boxes: 20,000 plans per setting (ImageNet's defaults on 500x375, a wide aspect range on a
   portrait, a 1000x60 strip where most tries fail) against timm's get_params on a PIL image of
   the same size: KS tests on the area fraction, the log aspect and both offsets, the share of
   fallback boxes, and every fallback box equal to timm's.
2. Filters: with interpolation random, the share of bicubic samples against timm's coin (a half).
3. Pixels: an ImageFolder of PNGs (decoded the same on both sides) through the input pipeline's
   training view and through timm's __call__ with the same box and filter (F.resized_crop on the
   PIL image): bicubic equal pixel for pixel (Pillow 13's pass order included); bilinear (OpenCV's,
   not Pillow's) within a measured mean; JPEGs, which training decodes at the smallest of libjpeg's
   M/8 DCT scales that covers the output and with blocky chroma, within a measured mean.

    check_train_crop.py --probe build/tests/transform_probe
"""
import argparse
import math
import os
import random
import subprocess
import sys
import tempfile

import numpy as np
import scipy.stats
import skimage.data
from PIL import Image
from timm.data.transforms import RandomResizedCropAndInterpolation

from outcome import finish

DRAWS = 20000
P_VALUE = 1e-4
SIZE = 64
# (width, height, scale, ratio)
SETTINGS = [
    (500, 375, (0.08, 1.0), (3 / 4, 4 / 3)),
    (333, 500, (0.25, 1.0), (0.5, 2.0)),
    (1000, 60, (0.08, 1.0), (3 / 4, 4 / 3)),
]
BILINEAR_MEAN_TOLERANCE = 2.0  # OpenCV's bilinear (area from a 2x shrink on) against Pillow's antialiased one (measured 1.1)
JPEG_MEAN_TOLERANCE = 6.0      # JPEGs: the DCT-scaled decode and its chroma besides the filter (measured 4.3)


def probe_lines(probe, *args):
    run = subprocess.run([probe, *map(str, args)], capture_output=True, text=True, check=True)
    return [line.split() for line in run.stdout.splitlines()]


def fallback_box(width, height, ratio):
    """timm's fallback (torchvision's too), computed as get_params does: (left, top, w, h)."""
    in_ratio = width / height
    w, h = width, height
    if in_ratio < min(ratio):
        h = int(round(w / min(ratio)))
    elif in_ratio > max(ratio):
        w = int(round(h * max(ratio)))
    return ((width - w) // 2, (height - h) // 2, w, h)


def box_statistics(boxes, width, height):
    boxes = np.asarray(boxes, dtype=np.float64)
    x, y, w, h = boxes.T
    room_x, room_y = width - w, height - h
    return {
        "area fraction": w * h / (width * height),
        "log aspect": np.log(w / h),
        "left offset": x[room_x > 0] / room_x[room_x > 0],
        "top offset": y[room_y > 0] / room_y[room_y > 0],
    }


def box_failures(probe):
    failures = []
    for width, height, scale, ratio in SETTINGS:
        name = f"{width}x{height} scale {scale} ratio ({ratio[0]:.3g}, {ratio[1]:.3g})"
        mine = [tuple(map(int, line[:4])) for line in probe_lines(probe, "plans", width, height, SIZE, DRAWS, *scale, *ratio, "bilinear")]
        random.seed(0)
        image = Image.new("RGB", (width, height))
        theirs = []
        for _ in range(DRAWS):
            top, left, h, w = RandomResizedCropAndInterpolation.get_params(image, scale, ratio)
            theirs.append((left, top, w, h))
        fallback = fallback_box(width, height, ratio)
        share_mine, share_theirs = mine.count(fallback) / DRAWS, theirs.count(fallback) / DRAWS
        print(f"{name}: fallback box {fallback} in {share_mine:.4f} of cvtrain's plans, {share_theirs:.4f} of timm's")
        table = [[mine.count(fallback), DRAWS - mine.count(fallback)], [theirs.count(fallback), DRAWS - theirs.count(fallback)]]
        if share_mine + share_theirs > 0 and scipy.stats.chi2_contingency(table)[1] < P_VALUE:
            failures.append(f"{name}: fallback share {share_mine:.4f} against timm's {share_theirs:.4f}")
        outside = [b for b in mine if b[0] < 0 or b[1] < 0 or b[0] + b[2] > width or b[1] + b[3] > height or min(b[2:]) < 1]
        if outside:
            failures.append(f"{name}: {len(outside)} boxes leave the image, e.g. {outside[0]}")
        ours, timms = box_statistics(mine, width, height), box_statistics(theirs, width, height)
        for statistic in ours:
            a, b = ours[statistic], timms[statistic]
            if len(a) < 100 or len(b) < 100:
                continue
            p_value = scipy.stats.ks_2samp(a, b).pvalue
            print(f"  {statistic:14s} mean {a.mean():.4f} (timm {b.mean():.4f}), KS p = {p_value:.3g}")
            if p_value < P_VALUE:
                failures.append(f"{name}: {statistic} differs from timm's (KS p = {p_value:.2g})")
    return failures


def filter_failures(probe):
    filters = [line[4] for line in probe_lines(probe, "plans", 500, 375, SIZE, DRAWS, 0.08, 1.0, 3 / 4, 4 / 3, "random")]
    bicubic = filters.count("bicubic")
    p_value = scipy.stats.binomtest(bicubic, DRAWS, 0.5).pvalue
    print(f"interpolation random: {bicubic} of {DRAWS} samples bicubic (timm: random.choice of two), binomial p = {p_value:.3g}")
    fixed = {line[4] for line in probe_lines(probe, "plans", 500, 375, SIZE, 200, 0.08, 1.0, 3 / 4, 4 / 3, "bicubic")}
    failures = [] if p_value >= P_VALUE else [f"interpolation random: {bicubic} of {DRAWS} bicubic"]
    if fixed != {"bicubic"}:
        failures.append(f"interpolation bicubic drew {sorted(fixed)}")
    return failures


def make_folder(root, fmt):
    """Crops of three photos at sizes under twice the output (no DCT scale) and above it."""
    photos = [Image.fromarray(getattr(skimage.data, name)()).convert("RGB") for name in ("astronaut", "coffee", "chelsea")]
    rng = np.random.default_rng(1)
    os.makedirs(os.path.join(root, "c"))
    for i in range(24):
        image = photos[i % 3].resize((int(rng.integers(70, 300)), int(rng.integers(70, 300))), Image.BICUBIC)
        if i % 8 == 7:
            image = image.convert("L")
        image.save(os.path.join(root, "c", f"{i:02d}.{fmt.lower()}"), fmt, **({"quality": 90} if fmt == "JPEG" else {}))


def pixel_failures(probe, tmp, fmt, interpolation, tolerance):
    """tolerance: None for equal pixels, else the largest mean |difference| allowed."""
    root = os.path.join(tmp, f"{fmt}_{interpolation}")
    make_folder(root, fmt)
    out = os.path.join(root + ".raw")
    plans = probe_lines(probe, "train", root, SIZE, out, 0.08, 1.0, 3 / 4, 4 / 3, interpolation)
    raw = np.fromfile(out, dtype=np.uint8)
    files = sorted(os.listdir(os.path.join(root, "c")))
    offset, failures, means, filters = 0, [], [], set()
    for name, (x, y, w, h, filter_name) in zip(files, plans):
        image = Image.open(os.path.join(root, "c", name)).convert("RGB")  # as ImageFolder loads it; cvtrain decodes gray to RGB
        channels = 3
        mine = raw[offset : offset + SIZE * SIZE * channels].reshape(SIZE, SIZE, channels).astype(np.int16)
        offset += SIZE * SIZE * channels
        crop = RandomResizedCropAndInterpolation(SIZE, interpolation=filter_name)
        crop.get_params = lambda img, scale, ratio, box=(int(y), int(x), int(h), int(w)): box  # cvtrain's box, timm's __call__
        theirs = np.asarray(crop(image), dtype=np.int16).reshape(SIZE, SIZE, channels)
        diff = np.abs(mine - theirs)
        means.append(diff.mean())
        filters.add(filter_name)
        if tolerance is None and diff.max() != 0:
            failures.append(f"{fmt} {interpolation} {name} ({w}x{h} of {image.size}, {filter_name}): pixels differ "
                            f"(max {diff.max()}, {np.count_nonzero(diff)} values)")
    if offset != raw.size or len(plans) != len(files):
        failures.append(f"{fmt} {interpolation}: {len(plans)} plans and {raw.size} bytes for {len(files)} images")
    print(f"{fmt} {interpolation:8s} ({'/'.join(sorted(filters))}): mean |cvtrain - timm| {np.mean(means):.3f}, "
          f"worst image {np.max(means):.3f}")
    if tolerance is not None and np.mean(means) > tolerance:
        failures.append(f"{fmt} {interpolation}: mean difference {np.mean(means):.2f} > {tolerance}")
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--probe", required=True)
    args = parser.parse_args()
    failures = box_failures(args.probe) + filter_failures(args.probe)
    with tempfile.TemporaryDirectory(prefix="cvtrain_train_crop_") as tmp:
        failures += pixel_failures(args.probe, tmp, "PNG", "bicubic", None)
        failures += pixel_failures(args.probe, tmp, "PNG", "bilinear", BILINEAR_MEAN_TOLERANCE)
        failures += pixel_failures(args.probe, tmp, "JPEG", "bicubic", JPEG_MEAN_TOLERANCE)
        failures += pixel_failures(args.probe, tmp, "JPEG", "random", JPEG_MEAN_TOLERANCE)
    return finish(failures)


if __name__ == "__main__":
    sys.exit(main())
