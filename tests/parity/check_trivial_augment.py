#!/usr/bin/env python3
"""cvtrain's augment.auto_augment: ta_wide against torchvision's TrivialAugmentWide on PIL images.

1. Every op of its space at magnitudes from its own tables (both signs, the ends and the middle)
   on real photos of several sizes, RGB and grayscale, square and not: cvtrain's op (tests'
   augment_probe) against torchvision's _apply_op with nearest resampling and black fill, as
   TrivialAugmentWide calls it. All must be identical.
2. The draws over many samples: each op's share and its magnitudes, against torchvision's own
   forward with _apply_op replaced by a recorder; and every (op, magnitude) cvtrain draws is one of
   torchvision's table entries, every entry drawn.

    check_trivial_augment.py --probe build/tests/augment_probe
"""
import argparse
import collections
import math
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torchvision.transforms.autoaugment as tva
from torchvision.transforms import InterpolationMode

from check_auto_augment import IMAGES, count_differences, distribution_failures, photo, print_op_table, probe_outputs
from outcome import finish

DRAWS = 20000
# torchvision's op names, and cvtrain's name of the same op.
CVTRAIN_NAME = {
    "Identity": "Identity", "ShearX": "TorchvisionShearX", "ShearY": "TorchvisionShearY",
    "TranslateX": "TorchvisionTranslateX", "TranslateY": "TorchvisionTranslateY", "Rotate": "Rotate",
    "Brightness": "Brightness", "Color": "Color", "Contrast": "Contrast", "Sharpness": "Sharpness",
    "Posterize": "Posterize", "Solarize": "Solarize", "AutoContrast": "AutoContrast", "Equalize": "Equalize",
}
ORIGINAL_APPLY = tva._apply_op


def cvtrain_op(name, magnitude):
    """torchvision's (op, magnitude) as the op and argument cvtrain runs, as _apply_op turns it into a call."""
    if name in ("Brightness", "Color", "Contrast", "Sharpness"):
        argument = 1.0 + magnitude
    elif name in ("TranslateX", "TranslateY", "Posterize"):
        argument = float(int(magnitude))
    elif name == "Solarize":
        argument = float(math.ceil(magnitude))  # i < t for a whole i is i < ceil(t)
    else:
        argument = magnitude
    return CVTRAIN_NAME[name], argument


def table():
    """Every (op, magnitude) TrivialAugmentWide can draw."""
    entries = set()
    for name, (magnitudes, signed) in tva.TrivialAugmentWide()._augmentation_space(31).items():
        values = [float(m) for m in magnitudes.tolist()] if magnitudes.ndim > 0 else [0.0]
        for m in values:
            entries.add((name, m))
            if signed:
                entries.add((name, -m))
    return entries


def check_ops(probe, tmp):
    space = tva.TrivialAugmentWide()._augmentation_space(31)
    cases, expected, labels = [], [], []
    images = IMAGES + [("coffee_97_square", "coffee", (97, 97), "RGB")]
    for label, name, size, mode in images:
        image = photo(name, size, mode)
        raw = os.path.join(tmp, f"{label}.raw")
        np.asarray(image).tofile(raw)
        channels = 3 if mode == "RGB" else 1
        for op, (magnitudes, signed) in space.items():
            values = [float(magnitudes[b]) for b in (1, 7, 15, 20, 30)] if magnitudes.ndim > 0 else [0.0]
            for m in values + ([-v for v in values] if signed else []):
                cv_name, argument = cvtrain_op(op, m)
                cases.append(f"{raw} {size[0]} {size[1]} {channels} {cv_name} {argument!r} nearest black")
                expected.append(np.asarray(ORIGINAL_APPLY(image.copy(), op, m, interpolation=InterpolationMode.NEAREST, fill=None)))
                labels.append((op, m, label))
    per_op, failures = collections.defaultdict(lambda: [0, 0, 0]), []
    for want, got, (op, m, label) in zip(expected, probe_outputs(probe, tmp, cases, expected), labels):
        differing, worst = count_differences(per_op[op], want, got)
        if worst > 0:
            failures.append(f"{op}({m!r}) on {label}: {differing} of {want.size} values differ, by up to {worst}")
    print_op_table(per_op)
    return failures


def torchvision_draws():
    record = []

    def recorder(img, op_name, magnitude, interpolation, fill):
        record.append(cvtrain_op(op_name, float(magnitude)))
        return img

    tva._apply_op = recorder
    try:
        torch.manual_seed(0)
        transform, image, samples = tva.TrivialAugmentWide(), torch.zeros(3, 4, 4, dtype=torch.uint8), []
        for _ in range(DRAWS):
            record.clear()
            transform(image)
            samples.append(list(record))
    finally:
        tva._apply_op = ORIGINAL_APPLY
    return samples


def cvtrain_draws(probe):
    lines = subprocess.run([probe, "draws", "ta_wide", str(DRAWS)], check=True, capture_output=True, text=True).stdout.splitlines()
    return [[(item.split(":")[0], float(item.split(":")[1])) for item in line.split()] for line in lines]


def draw_failures(probe):
    mine, theirs = cvtrain_draws(probe), torchvision_draws()
    failures = distribution_failures("ta_wide", mine, theirs, reference="torchvision")
    possible = {cvtrain_op(name, m) for name, m in table()}
    drawn = {op for sample in mine for op in sample}
    strange = sorted(drawn - possible)
    never = sorted(possible - drawn)
    if strange:
        failures.append(f"ta_wide: {len(strange)} drawn (op, argument) pairs are not in torchvision's tables, e.g. {strange[:3]}")
    if never:
        failures.append(f"ta_wide: {len(never)} of torchvision's (op, argument) pairs never drawn in {DRAWS}, e.g. {never[:3]}")
    print(f"ta_wide: {len(drawn)} distinct (op, argument) pairs drawn of {len(possible)} in torchvision's tables")
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--probe", required=True)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cvtrain_trivial_") as tmp:
        failures = check_ops(args.probe, tmp)
    failures += draw_failures(args.probe)
    return finish(failures)


if __name__ == "__main__":
    sys.exit(main())
