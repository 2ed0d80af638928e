#!/usr/bin/env python3
"""cvtrain's automatic augmentation against timm's (timm/data/auto_augment.py, random_erasing.py).

1. Every op at fixed arguments on real photos (scikit-image's, resized and JPEG-compressed, several
   sizes, RGB and grayscale): cvtrain's output (tests' augment_probe) against timm's op function on
   the same PIL image. The colour ops must be identical; the geometric ones (rotate, shear,
   translate) may differ where Pillow's rounding of the matrix differs, within TOLERANCE.
2. The random draws over many samples: which ops a policy applies, how many per image, and the
   distribution of their arguments, against timm's own policy objects with their ops replaced by
   recorders (Python's random and numpy's stand where cvtrain has its counter-based stream).
3. Random erasing's boxes: how often, how many, their areas and aspect ratios, against timm's.

Prints a table of every op with its measured difference (the README quotes it).

    check_auto_augment.py --probe build/tests/augment_probe
"""
import argparse
import collections
import io
import math
import os
import random
import subprocess
import sys
import tempfile

import numpy as np
import scipy.stats
import skimage.data
import torch
from PIL import Image
from timm.data import auto_augment as aa
from timm.data.random_erasing import RandomErasing
import timm.data.random_erasing as timm_erasing

from outcome import finish

MEAN = (0.485, 0.456, 0.406)
FILL = tuple(min(255, round(255 * m)) for m in MEAN)
IMAGES = [  # name, photo, (width, height), mode
    ("coffee_224", "coffee", (224, 224), "RGB"),
    ("astronaut_160x120", "astronaut", (160, 120), "RGB"),
    ("chelsea_97x61", "chelsea", (97, 61), "RGB"),
    ("camera_64_gray", "camera", (64, 64), "L"),
]
RESAMPLES = {"bilinear": Image.BILINEAR, "bicubic": Image.BICUBIC}
EXACT_ARGS = {
    "AutoContrast": [0], "Equalize": [0], "Invert": [0],
    # Pillow 13 refuses 0 bits (timm's PosterizeIncreasing at m10 raises there); cvtrain makes it black.
    "Posterize": [1, 2, 4, 7, 8], "Solarize": [0, 77, 128, 256], "SolarizeAdd": [0, 50, 110],
    "Color": [0.1, 0.55, 1.0, 1.45, 1.9], "Contrast": [0.1, 0.55, 1.0, 1.45, 1.9],
    "Brightness": [0.1, 0.55, 1.45, 1.9], "Sharpness": [0.1, 0.55, 1.45, 1.9],
    "Desaturate": [0.5, 0.75, 1.0], "GaussianBlurRand": [0.1, 0.7, 1.3, 2.0],
}
GEOMETRIC_ARGS = {
    "Rotate": [-30.0, -13.5, 7.2, 30.0], "ShearX": [-0.3, 0.135, 0.3], "ShearY": [-0.27, 0.3],
    "TranslateXRel": [-0.45, 0.2], "TranslateYRel": [-0.3, 0.45],
}
# Geometric ops: share of pixels allowed to differ, and by how much (Pillow rounds the rotation
# matrix with Python's decimal round(); a 1e-16 change can move a truncated sample by one level).
TOLERANCE = {"fraction": 0.002, "max": 2}
DRAWS = 20000
# Both sides draw from fixed seeds, so each test's outcome is fixed too; this bound keeps a true
# match from failing by chance over the ~70 comparisons (and a wrong distribution far below it).
P_VALUE = 1e-4


def photo(name, size, mode):
    image = Image.fromarray(getattr(skimage.data, name)()).convert("RGB").resize(size, Image.BICUBIC).convert(mode)
    encoded = io.BytesIO()
    image.save(encoded, "JPEG", quality=90)
    return Image.open(io.BytesIO(encoded.getvalue())).convert(mode)


def timm_op(name, image, argument, resample):
    fill = FILL if image.mode == "RGB" else FILL[0]
    if name == "GaussianBlurRand":  # cvtrain's argument is the radius timm draws inside the op
        return aa.gaussian_blur(image, argument)
    if name in GEOMETRIC_ARGS:
        return aa.NAME_TO_OP[name](image, argument, resample=RESAMPLES[resample], fillcolor=fill)
    if name in ("AutoContrast", "Equalize", "Invert"):
        return aa.NAME_TO_OP[name](image)
    if name in ("Posterize", "Solarize", "SolarizeAdd"):
        return aa.NAME_TO_OP[name](image, int(argument))
    return aa.NAME_TO_OP[name](image, argument)


def check_ops(probe, tmp):
    cases, expected, labels = [], [], []
    for label, name, size, mode in IMAGES:
        image = photo(name, size, mode)
        raw = os.path.join(tmp, f"{label}.raw")
        np.asarray(image).tofile(raw)
        channels = 3 if mode == "RGB" else 1
        for op, arguments in list(EXACT_ARGS.items()) + list(GEOMETRIC_ARGS.items()):
            for argument in arguments:
                for resample in (RESAMPLES if op in GEOMETRIC_ARGS else ["bilinear"]):
                    cases.append(f"{raw} {size[0]} {size[1]} {channels} {op} {argument!r} {resample}")
                    expected.append(np.asarray(timm_op(op, image.copy(), argument, resample)))
                    labels.append((op, argument, resample, label))
    per_op, failures = collections.defaultdict(lambda: [0, 0, 0]), []
    for want, got, (op, argument, resample, label) in zip(expected, probe_outputs(probe, tmp, cases, expected), labels):
        differing, worst = count_differences(per_op[op], want, got)
        exact = op not in GEOMETRIC_ARGS
        if (exact and worst > 0) or (not exact and (differing > TOLERANCE["fraction"] * want.size or worst > TOLERANCE["max"])):
            failures.append(f"{op}({argument}, {resample}) on {label}: {differing} of {want.size} values differ, by up to {worst}")
    print_op_table(per_op)
    return failures


def probe_outputs(probe, tmp, cases, expected):
    """The probe's result of each case line, shaped as the reference's image for it."""
    cases_file, out = os.path.join(tmp, "cases.txt"), os.path.join(tmp, "out.raw")
    with open(cases_file, "w") as f:
        f.write("\n".join(cases) + "\n")
    subprocess.run([probe, "ops", cases_file, out], check=True, stdout=subprocess.DEVNULL)
    produced = np.fromfile(out, dtype=np.uint8)
    assert produced.size == sum(want.size for want in expected), "the probe wrote a different amount of pixels"
    offsets = np.cumsum([0] + [want.size for want in expected])
    return [produced[offsets[i]: offsets[i + 1]].reshape(want.shape) for i, want in enumerate(expected)]


def count_differences(stats, want, got):
    """Adds one comparison to an op's [differing, compared, largest difference]; returns the first and last."""
    diff = np.abs(got.astype(np.int16) - want.astype(np.int16))
    differing, worst = int((diff > 0).sum()), int(diff.max())
    stats[0], stats[1], stats[2] = stats[0] + differing, stats[1] + want.size, max(stats[2], worst)
    return differing, worst


def print_op_table(per_op):
    print(f"{'op':<18} {'values compared':>15} {'differing':>10} {'max |diff|':>10}")
    for op, (differing, total, worst) in per_op.items():
        print(f"{op:<18} {total:>15} {differing / total:>10.5%} {worst:>10}")


# ---- the random draws ----

def cvtrain_draws(probe, policy):
    lines = subprocess.run([probe, "draws", policy, str(DRAWS)], check=True, capture_output=True, text=True).stdout.splitlines()
    return [[(item.split(":")[0], float(item.split(":")[1])) for item in line.split()] for line in lines]


def timm_draws(policy):
    hparams = dict(translate_const=100, img_mean=FILL)
    transform = aa.rand_augment_transform(policy, hparams) if policy.startswith("rand") else aa.auto_augment_transform(policy, hparams)
    ops = transform.ops if policy.startswith("rand") else [op for sub in transform.policy for op in sub]
    record = []

    def recorder(name):
        def op(img, *args, **kwargs):
            argument = args[0] if args else 0.0
            if name == "GaussianBlurRand":
                argument = random.uniform(0.1, 2.0 * argument)
            record.append((name, float(argument)))
            return img
        return op

    for op in ops:
        op.aug_fn = recorder(op.name)
    random.seed(0)
    np.random.seed(0)
    image = Image.new("RGB", (4, 4))
    samples = []
    for _ in range(DRAWS):
        record.clear()
        transform(image)
        samples.append(list(record))
    return samples


def distribution_failures(policy, mine, theirs, reference="timm"):
    failures = []
    n = len(mine)
    count_mine = collections.Counter(len(s) for s in mine)
    count_theirs = collections.Counter(len(s) for s in theirs)
    tv = 0.5 * sum(abs(count_mine[k] - count_theirs[k]) / n for k in set(count_mine) | set(count_theirs))
    if tv > 0.02:
        failures.append(f"{policy}: ops per image differ from {reference}'s (total variation {tv:.3f})")
    by_op_mine, by_op_theirs = collections.defaultdict(list), collections.defaultdict(list)
    for s in mine:
        for name, argument in s:
            by_op_mine[name].append(argument)
    for s in theirs:
        for name, argument in s:
            by_op_theirs[name].append(argument)
    for name in sorted(set(by_op_mine) | set(by_op_theirs)):
        a, b = np.array(by_op_mine[name]), np.array(by_op_theirs[name])
        p = max(len(b) / n, 1e-3)
        if abs(len(a) - len(b)) / n > 5 * math.sqrt(2 * p * (1 - p) / n) + 1e-3:
            failures.append(f"{policy}: {name} applied to {len(a) / n:.4f} of images, {reference} {len(b) / n:.4f}")
            continue
        if len(a) < 20 or len(b) < 20:
            continue
        a, b = np.round(a, 6), np.round(b, 6)  # the probe prints 6 significant digits
        values = np.union1d(a, b)
        if len(values) <= 12:  # a discrete argument: a chi-square test on the two histograms
            table = np.array([[(a == v).sum() for v in values], [(b == v).sum() for v in values]])
            p_value = scipy.stats.chi2_contingency(table[:, table.sum(0) > 0])[1] if len(values) > 1 else 1.0
        else:  # a continuous one: Kolmogorov-Smirnov
            p_value = scipy.stats.ks_2samp(a, b).pvalue
        if p_value < P_VALUE:
            failures.append(f"{policy}: {name}'s arguments differ from {reference}'s (p = {p_value:.2g}; mean {a.mean():.4f} vs {b.mean():.4f})")
    print(f"{policy}: {n} samples, ops per image {dict(sorted(count_mine.items()))} ({reference} {dict(sorted(count_theirs.items()))})")
    return failures


# ---- colour jitter ----

def jitter_failures(probe, strength=0.4):
    """The order and factors of torchvision's ColorJitter(s, s, s), as timm's --color-jitter."""
    import torchvision.transforms as T
    lines = subprocess.run([probe, "jitter", str(strength), str(DRAWS)], check=True, capture_output=True, text=True).stdout.splitlines()
    mine = [[(item.split(":")[0], float(item.split(":")[1])) for item in line.split()] for line in lines]
    names = {0: "Brightness", 1: "Contrast", 2: "Color"}
    jitter = T.ColorJitter(strength, strength, strength)
    torch.manual_seed(0)
    theirs = []
    for _ in range(DRAWS):
        order, b, c, s, _ = jitter.get_params(jitter.brightness, jitter.contrast, jitter.saturation, jitter.hue)
        factors = {0: b, 1: c, 2: s}
        theirs.append([(names[i], factors[i]) for i in order.tolist() if i in names])
    failures = []
    for name in names.values():
        position_mine = np.array([[n for n, _ in s].index(name) for s in mine])
        position_theirs = np.array([[n for n, _ in s].index(name) for s in theirs])
        table = np.array([[(position_mine == k).sum() for k in range(3)], [(position_theirs == k).sum() for k in range(3)]])
        if scipy.stats.chi2_contingency(table)[1] < P_VALUE:
            failures.append(f"colour jitter: where {name} runs differs from torchvision's")
        a = np.array([f for s in mine for n, f in s if n == name])
        b = np.array([f for s in theirs for n, f in s if n == name])
        if scipy.stats.ks_2samp(a, b).pvalue < P_VALUE:
            failures.append(f"colour jitter: {name}'s factors differ from torchvision's (mean {a.mean():.4f} vs {b.mean():.4f})")
    print(f"colour jitter {strength}: {DRAWS} samples, order and factors of brightness, contrast, saturation against torchvision's")
    return failures


# ---- random erasing ----

def erasing_failures(probe, prob=0.25, count=3, size=64):
    lines = subprocess.run([probe, "erase", str(prob), "pixel", str(count), str(size), str(DRAWS)], check=True,
                           capture_output=True, text=True).stdout.splitlines()
    mine = [[tuple(int(v) for v in box.split(",")) for box in line.split()] for line in lines]
    recorded = []
    original = timm_erasing._get_pixels

    def recording(per_pixel, rand_color, patch_size, dtype=torch.float32, device="cpu"):
        recorded.append(patch_size[1:])
        return original(per_pixel, rand_color, patch_size, dtype=dtype, device=device)

    timm_erasing._get_pixels = recording
    random.seed(0)
    erasing = RandomErasing(probability=prob, mode="pixel", max_count=count, device="cpu")
    theirs = []
    for _ in range(DRAWS):
        recorded.clear()
        erasing(torch.zeros(3, size, size))
        theirs.append(list(recorded))
    timm_erasing._get_pixels = original
    failures = []
    n = DRAWS
    for label, f in (("erased", lambda s: len(s) > 0), ("boxes", len)):
        a, b = np.mean([f(s) for s in mine]), np.mean([f(s) for s in theirs])
        if abs(a - b) > 0.02 * max(b, 0.1):
            failures.append(f"random erasing: {label} per image {a:.4f}, timm {b:.4f}")
    area_mine = np.array([h * w for s in mine for (_, _, h, w) in s])
    area_theirs = np.array([h * w for s in theirs for (h, w) in s])
    aspect_mine = np.log([h / w for s in mine for (_, _, h, w) in s])
    aspect_theirs = np.log([h / w for s in theirs for (h, w) in s])
    for label, a, b in (("area", area_mine, area_theirs), ("log aspect", aspect_mine, aspect_theirs)):
        if abs(a.mean() - b.mean()) > 6 * b.std() / math.sqrt(len(b)) or abs(a.std() - b.std()) > 0.05 * b.std():
            failures.append(f"random erasing: box {label} mean {a.mean():.3f} std {a.std():.3f}, timm {b.mean():.3f} {b.std():.3f}")
    inside = all(0 <= t and 0 <= l and t + h <= size and l + w <= size for s in mine for (t, l, h, w) in s)
    if not inside:
        failures.append("random erasing: a box leaves the image")
    print(f"random erasing p={prob} count={count}: {np.mean([len(s) > 0 for s in mine]):.4f} erased "
          f"(timm {np.mean([len(s) > 0 for s in theirs]):.4f}), mean area {area_mine.mean():.1f} (timm {area_theirs.mean():.1f})")
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--probe", required=True)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cvtrain_augment_") as tmp:
        failures = check_ops(args.probe, tmp)
    for policy in ("rand-m9-mstd0.5-inc1", "rand-m7-n3-p0.8", "rand-m9-mstd101-tweights", "original", "3a"):
        failures += distribution_failures(policy, cvtrain_draws(args.probe, policy), timm_draws(policy))
    failures += jitter_failures(args.probe)
    failures += erasing_failures(args.probe)
    return finish(failures)


if __name__ == "__main__":
    sys.exit(main())
