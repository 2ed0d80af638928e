#!/usr/bin/env python3
"""cvtrain's LAMB and LARS against timm's (timm.optim.Lamb, timm.optim.Lars) on the same tensors.

Parameters of the shapes a vision model has (conv and linear weights, which decay and take the
trust ratio; biases and norm weights, which do neither, as timm's and MLPerf's exclusion) and ten
steps of random gradients go through tests' optimizer_probe and through timm's optimizer with the
same two parameter groups; the parameters after the last step are compared.

    check_optimizers.py --probe build/tests/optimizer_probe
"""
import argparse
import os
import subprocess
import sys
import tempfile

import torch
from safetensors.torch import load_file, save_file
from timm.optim import Lamb, Lars

from outcome import finish

SHAPES = [(16, 3, 3, 3), (16,), (16,), (32, 16), (32,), (10, 32), (10,)]
STEPS = 10
TOLERANCE = 2e-6  # relative to the largest parameter change
CASES = [  # name, lr, weight decay, probe options, timm keyword arguments
    ("lamb", 5e-3, 0.02, [], {}),
    ("lamb", 5e-3, 0.02, ["trust_clip=true", "max_grad_norm=0.5"], dict(trust_clip=True, max_grad_norm=0.5)),
    ("lamb", 1e-2, 0.0, ["max_grad_norm=0"], dict(max_grad_norm=None)),
    ("lars", 0.5, 1e-4, ["momentum=0.9"], dict(momentum=0.9)),
    ("lars", 0.5, 1e-4, ["momentum=0.9", "nesterov=true", "trust_clip=true"], dict(momentum=0.9, nesterov=True, trust_clip=True)),
    ("lars", 0.2, 5e-5, ["momentum=0", "trust_coeff=0.02"], dict(trust_coeff=0.02)),
]


def tensors():
    generator = torch.Generator().manual_seed(0)
    params = [torch.randn(shape, generator=generator) * 0.1 for shape in SHAPES]
    grads = [[torch.randn(shape, generator=generator) * (0.05 + 0.1 * s) for shape in SHAPES] for s in range(STEPS)]
    return params, grads


def timm_result(name, lr, wd, kwargs, params, grads):
    live = [p.clone().requires_grad_(True) for p in params]
    decay = [p for p in live if p.dim() >= 2]
    no_decay = [p for p in live if p.dim() < 2]
    groups = [dict(params=decay, weight_decay=wd), dict(params=no_decay, weight_decay=0.0)]
    if name == "lamb":
        optimizer = Lamb(groups, lr=lr, eps=1e-8, foreach=False, **kwargs)
    else:
        optimizer = Lars(groups, lr=lr, eps=1e-8, foreach=False, **kwargs)
    for step in grads:
        for p, g in zip(live, step):
            p.grad = g.clone()
        optimizer.step()
    return [p.detach() for p in live]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--probe", required=True)
    args = parser.parse_args()
    params, grads = tensors()
    failures = []
    with tempfile.TemporaryDirectory(prefix="cvtrain_optim_") as tmp:
        given = os.path.join(tmp, "in.safetensors")
        contents = {f"p.{i}": p for i, p in enumerate(params)}
        contents.update({f"g.{s}.{i}": g for s, step in enumerate(grads) for i, g in enumerate(step)})
        save_file(contents, given)
        for name, lr, wd, options, kwargs in CASES:
            out = os.path.join(tmp, "out.safetensors")
            subprocess.run([args.probe, given, out, name, repr(lr), repr(wd), "eps=1e-08", *options], check=True)
            mine = load_file(out)
            theirs = timm_result(name, lr, wd, kwargs, params, grads)
            moved = max((t - p).abs().max().item() for t, p in zip(theirs, params))
            worst = max((mine[f"p.{i}"] - t).abs().max().item() for i, t in enumerate(theirs))
            label = f"{name} lr {lr} wd {wd} {' '.join(options) or '(defaults)'}"
            print(f"{label}: parameters moved up to {moved:.3g}, max |cvtrain - timm| = {worst:.3g}")
            if worst > TOLERANCE * moved:
                failures.append(f"{label}: differs from timm by {worst:.3g}")
    return finish(failures)


if __name__ == "__main__":
    sys.exit(main())
