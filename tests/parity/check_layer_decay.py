#!/usr/bin/env python3
"""cvtrain's optim.layer_decay against timm's param_groups_layer_decay: the learning-rate scale
of every parameter of ViT-B/16, ConvNeXt-T and ResNet-50 (timm's models built without weights,
cvtrain's through tests' layer_decay_probe; the two name their parameters alike).

    check_layer_decay.py --probe build/tests/layer_decay_probe
"""
import argparse
import subprocess
import sys

import timm
from timm.optim._param_groups import param_groups_layer_decay

from outcome import finish

MODELS = [("vit_base_patch16", "vit_base_patch16_224", 0.65), ("convnext_tiny", "convnext_tiny", 0.7), ("resnet50", "resnet50", 0.8)]


def timm_scales(name, decay):
    model = timm.create_model(name, pretrained=False, num_classes=1000)
    groups = param_groups_layer_decay(model, weight_decay=0.05, no_weight_decay_list=getattr(model, "no_weight_decay", set)(), layer_decay=decay)
    scale_of = {id(p): g["lr_scale"] for g in groups for p in g["params"]}
    return {n: scale_of[id(p)] for n, p in model.named_parameters()}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--probe", required=True)
    args = parser.parse_args()
    failures = []
    for arch, timm_name, decay in MODELS:
        lines = subprocess.run([args.probe, arch, repr(decay)], check=True, capture_output=True, text=True).stdout.split("\n")
        mine = {n: float(s) for n, s in (line.split() for line in lines if line)}
        theirs = timm_scales(timm_name, decay)
        if set(mine) != set(theirs):
            failures.append(f"{arch}: parameter names differ: {sorted(set(mine) ^ set(theirs))[:6]}")
            continue
        wrong = [n for n in theirs if abs(mine[n] - theirs[n]) > 1e-12 * theirs[n]]
        distinct = sorted(set(round(v, 12) for v in theirs.values()))
        print(f"{arch}: {len(theirs)} parameters in {len(distinct)} layers, scales {distinct[0]:.3g} ... {distinct[-1]:.3g}; "
              f"{len(wrong)} differ from timm")
        failures += [f"{arch}: {n} scale {mine[n]} against timm's {theirs[n]}" for n in wrong[:5]]
    return finish(failures)


if __name__ == "__main__":
    sys.exit(main())
