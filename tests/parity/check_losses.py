#!/usr/bin/env python3
"""cvtrain's train.loss against timm's: BinaryCrossEntropy (with smoothing and target threshold,
on hard and on Mixup-style soft targets) and cross-entropy with label smoothing
(timm.loss.LabelSmoothingCrossEntropy / SoftTargetCrossEntropy), on the same logits.

    check_losses.py --probe build/tests/loss_probe
"""
import argparse
import os
import subprocess
import sys
import tempfile

import torch
from safetensors.torch import load_file, save_file
from timm.loss import BinaryCrossEntropy, LabelSmoothingCrossEntropy, SoftTargetCrossEntropy

from outcome import finish

TOLERANCE = 1e-6


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--probe", required=True)
    args = parser.parse_args()
    generator = torch.Generator().manual_seed(0)
    logits = torch.randn(16, 10, generator=generator) * 3
    hard = torch.randint(0, 10, (16,), generator=generator)
    soft = torch.softmax(torch.randn(16, 10, generator=generator) * 2, dim=1)
    cases = [  # kind, targets, smoothing, threshold, timm's loss
        ("bce", hard, 0.0, 0.0, BinaryCrossEntropy(smoothing=0.0)),
        ("bce", hard, 0.1, 0.0, BinaryCrossEntropy(smoothing=0.1)),
        ("bce", hard, 0.1, 0.2, BinaryCrossEntropy(smoothing=0.1, target_threshold=0.2)),
        ("bce", soft, 0.0, 0.2, BinaryCrossEntropy(target_threshold=0.2)),
        ("bce", soft, 0.0, 0.0, BinaryCrossEntropy()),
        ("ce", hard, 0.1, 0.0, LabelSmoothingCrossEntropy(smoothing=0.1)),
        ("ce", soft, 0.0, 0.0, SoftTargetCrossEntropy()),
    ]
    failures = []
    with tempfile.TemporaryDirectory(prefix="cvtrain_loss_") as tmp:
        for kind, targets, smoothing, threshold, reference in cases:
            given, out = os.path.join(tmp, "in.safetensors"), os.path.join(tmp, "out.safetensors")
            save_file({"logits": logits, "targets": targets}, given)
            subprocess.run([args.probe, given, out, kind, repr(smoothing), repr(threshold)], check=True)
            mine = load_file(out)["loss"].item()
            theirs = reference(logits, targets).item()
            label = f"{kind} on {'hard' if targets.dtype == torch.int64 else 'soft'} targets, smoothing {smoothing}, threshold {threshold}"
            print(f"{label}: cvtrain {mine:.8f}, timm {theirs:.8f}")
            if abs(mine - theirs) > TOLERANCE * max(1.0, abs(theirs)):
                failures.append(f"{label}: {mine} against timm's {theirs}")
    return finish(failures)


if __name__ == "__main__":
    sys.exit(main())
