#!/usr/bin/env python3
"""cvtrain's evaluation view against torchvision's: an ImageFolder of JPEGs and PNGs of assorted
sizes (landscape, portrait, small, odd, grayscale, larger than twice the resize), read by cvtrain's
input pipeline (tests' transform_probe) and by torchvision's ImageFolder with
Resize(floor(size / 0.875)) + CenterCrop(size) on PIL images (timm's scale size), bilinear and
bicubic (data.eval_interpolation). Equal pixels for every image the pipeline decodes at full size;
JPEGs at least twice the resize are decoded at a reduced DCT scale first and must stay close.

    check_eval_transform.py --probe build/tests/transform_probe
"""
import argparse
import math
import os
import subprocess
import sys
import tempfile

import numpy as np
import skimage.data
import torchvision.datasets
import torchvision.transforms as T
from PIL import Image

SIZE = 224
# name, (width, height), format, mode; photos from scikit-image, resized by PIL bicubic first.
CASES = [
    ("landscape", (500, 375), "JPEG", "RGB"),
    ("portrait", (333, 500), "JPEG", "RGB"),
    ("odd", (457, 301), "JPEG", "RGB"),
    ("small", (160, 120), "JPEG", "RGB"),
    ("square", (256, 256), "PNG", "RGB"),
    ("gray", (400, 300), "JPEG", "L"),
    ("png_odd", (389, 271), "PNG", "RGB"),
    ("large", (1600, 1200), "JPEG", "RGB"),   # >= 2x the resize: decoded at 1/4 scale
]
REDUCED = {"large"}
REDUCED_MEAN_TOLERANCE = 2.0  # mean |difference| in 0..255 where a DCT scale was used


def make_folder(root):
    photo = Image.fromarray(skimage.data.coffee())
    os.makedirs(os.path.join(root, "c"))
    for name, size, fmt, mode in CASES:
        image = photo.resize(size, Image.BICUBIC).convert(mode)
        image.save(os.path.join(root, "c", f"{name}.{'jpg' if fmt == 'JPEG' else 'png'}"), fmt, quality=90)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--probe", required=True)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cvtrain_eval_view_") as tmp:
        root = os.path.join(tmp, "images")
        make_folder(root)
        failures = []
        for interpolation in ("bilinear", "bicubic"):
            out = os.path.join(tmp, f"cvtrain_{interpolation}.raw")
            subprocess.run([args.probe, "eval", root, str(SIZE), out, interpolation], check=True)
            mine = np.fromfile(out, dtype=np.uint8).reshape(-1, SIZE, SIZE, 3).astype(np.int16)
            mode = T.InterpolationMode(interpolation)
            view = T.Compose([T.Resize(math.floor(SIZE / 0.875), interpolation=mode), T.CenterCrop(SIZE)])
            reference = torchvision.datasets.ImageFolder(root, transform=view)
            for i, (image, _) in enumerate(reference):
                name = os.path.splitext(os.path.basename(reference.samples[i][0]))[0]
                diff = np.abs(mine[i] - np.asarray(image, dtype=np.int16))
                print(f"{interpolation:8s} {name:10s} mean |cvtrain - torchvision| {diff.mean():.3f}, max {diff.max()}")
                if name in REDUCED:
                    if diff.mean() > REDUCED_MEAN_TOLERANCE:
                        failures.append(f"{interpolation} {name}: mean difference {diff.mean():.2f} > {REDUCED_MEAN_TOLERANCE}")
                elif diff.max() != 0:
                    failures.append(f"{interpolation} {name}: pixels differ (max {diff.max()}, {np.count_nonzero(diff)} values)")
    for failure in failures:
        print("MISMATCH:", failure)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
