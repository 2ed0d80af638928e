#!/usr/bin/env python3
"""cvtrain's Mixup/CutMix draws (data/mix_plan.h) against timm's Mixup (timm/data/mixup.py, mode
'batch', correct_lam), over many batches for the settings the published recipes use and two
single-mode ones, on a square and an odd-sized image:

- how often a batch is left alone, mixed up or cut (augment.mix_prob, augment.switch_prob),
- Mixup's factor and CutMix's corrected factor (the share of the area left), by KS test,
- CutMix's box: its height, width, top and left, by chi-squared test on their whole-pixel counts
  (KS misses a box one row short half the time: timm before 1.0 drew those),
- and, for every cvtrain box, that it lies inside the image and its factor is exactly 1 - area.

timm's cutmix_bbox_and_lam is wrapped to record the box it draws (numpy's generator stands where
cvtrain has its counter-based stream, so distributions are compared, not single draws).

    check_mix.py --probe build/tests/augment_probe
"""
import subprocess
import sys

import numpy as np
import scipy.stats
import torch
import timm.data.mixup as timm_mixup

from outcome import finish, probe_path

BATCHES = 20000
P_VALUE = 1e-4  # fixed seeds on both sides; keeps a true match from failing by chance over ~50 tests
# mixup alpha, cutmix alpha, mix_prob, switch_prob, height, width
CASES = [
    (0.8, 1.0, 1.0, 0.5, 224, 224),  # DeiT, ConvNeXt (vit_b16, convnext_t)
    (0.1, 1.0, 1.0, 0.5, 224, 224),  # ResNet strikes back A2 (resnet50_rsb_a2)
    (0.8, 1.0, 0.6, 0.3, 61, 97),    # some batches left alone, CutMix less often, an odd size
    (0.4, 0.0, 0.8, 0.5, 32, 32),    # Mixup alone
    (0.0, 1.0, 1.0, 0.5, 61, 97),    # CutMix alone
]


def cvtrain_draws(probe, case):
    out = subprocess.run([probe, "mix", *map(str, case), str(BATCHES)], check=True, capture_output=True, text=True).stdout
    draws = []
    for line in out.splitlines():
        kind, *values = line.split()
        draws.append((kind, [float(v) for v in values]))
    return draws


class ShapeOnly:
    """Stands for the batch timm's _mix_batch mixes: its shape is all the draws read, and mixing real
    pixels (20,000 batches of 224x224 a case) would be most of this check's time."""

    def __init__(self, shape):
        self.shape = shape

    def flip(self, *_):
        return self

    def mul_(self, *_):
        return self

    def add_(self, *_):
        return self

    def __getitem__(self, _):
        return self

    def __setitem__(self, *_):
        pass


def timm_draws(case):
    mixup_alpha, cutmix_alpha, prob, switch, height, width = case
    recorded = []
    original = timm_mixup.cutmix_bbox_and_lam

    def recording(img_shape, lam, **kwargs):
        box, corrected = original(img_shape, lam, **kwargs)
        recorded.append((box, corrected))
        return box, corrected

    timm_mixup.cutmix_bbox_and_lam = recording
    try:
        np.random.seed(0)
        mixer = timm_mixup.Mixup(mixup_alpha=mixup_alpha, cutmix_alpha=cutmix_alpha, prob=prob, switch_prob=switch, mode="batch",
                                 correct_lam=True, label_smoothing=0.0, num_classes=10)
        batch = ShapeOnly(torch.Size([2, 1, height, width]))
        draws = []
        for _ in range(BATCHES):
            recorded.clear()
            lam = mixer._mix_batch(batch)
            if recorded:
                (top, bottom, left, right), corrected = recorded[0]
                draws.append(("cutmix", [int(top), int(bottom), int(left), int(right), float(corrected)]))
            elif lam == 1.0:
                draws.append(("none", []))
            else:
                draws.append(("mixup", [float(lam)]))
        return draws
    finally:
        timm_mixup.cutmix_bbox_and_lam = original


def compare(case, mine, theirs):
    failures = []
    name = "mixup {} cutmix {} prob {} switch {} at {}x{}".format(*case[:4], case[5], case[4])
    kinds = ("none", "mixup", "cutmix")
    table = np.array([[sum(k == kind for k, _ in draws) for kind in kinds] for draws in (mine, theirs)])
    present = table.sum(0) > 0
    p_kinds = scipy.stats.chi2_contingency(table[:, present])[1] if present.sum() > 1 else 1.0
    if p_kinds < P_VALUE:
        failures.append(f"{name}: batches left alone / mixed up / cut {table[0].tolist()}, timm {table[1].tolist()} (p {p_kinds:.1e})")
    columns = {"mixup factor": ("mixup", 0), "cutmix factor": ("cutmix", 4), "cutmix box top": ("cutmix", 0),
               "cutmix box left": ("cutmix", 2)}
    values = {label: [np.array([v[i] for k, v in draws if k == kind]) for draws in (mine, theirs)]
              for label, (kind, i) in columns.items()}
    for label, box_of in (("cutmix box height", lambda v: v[1] - v[0]), ("cutmix box width", lambda v: v[3] - v[2])):
        values[label] = [np.array([box_of(v) for k, v in draws if k == "cutmix"]) for draws in (mine, theirs)]
    worst, worst_label = 1.0, "none"
    for label, (a, b) in values.items():
        if len(a) == 0 and len(b) == 0:
            continue
        if len(a) < 100 or len(b) < 100:
            failures.append(f"{name}: {label}: {len(a)} draws, timm {len(b)}")
            continue
        if label.startswith("cutmix box"):  # whole pixels: a chi-squared test of the counts of each value
            counts = np.array([np.bincount(x.astype(int), minlength=int(max(a.max(), b.max())) + 1) for x in (a, b)])
            p = scipy.stats.chi2_contingency(counts[:, counts.sum(0) > 0])[1]
        else:
            p = scipy.stats.ks_2samp(a, b).pvalue
        if p < worst:
            worst, worst_label = p, label
        if p < P_VALUE:
            failures.append(f"{name}: {label} mean {a.mean():.4f}, timm {b.mean():.4f} (p {p:.1e})")
    height, width = case[4], case[5]
    for kind, v in mine:
        if kind != "cutmix":
            continue
        top, bottom, left, right, lam = v
        if not (0 <= top <= bottom <= height and 0 <= left <= right <= width):
            failures.append(f"{name}: box rows {top}-{bottom}, columns {left}-{right} outside the image")
            break
        if lam != 1 - (bottom - top) * (right - left) / (height * width):
            failures.append(f"{name}: factor {lam!r} is not 1 - the box's area")
            break
    print(f"{name}: left alone / mixed up / cut {table[0].tolist()} (timm {table[1].tolist()}, p {p_kinds:.2f}); "
          f"factors and boxes: smallest p {worst:.2g} ({worst_label})")
    return failures


def main():
    probe = probe_path(__doc__)
    failures = []
    for case in CASES:
        failures += compare(case, cvtrain_draws(probe, case), timm_draws(case))
    return finish(failures)


if __name__ == "__main__":
    sys.exit(main())
