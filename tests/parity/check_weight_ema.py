#!/usr/bin/env python3
"""cvtrain's train.ema against timm's ModelEmaV3, step for step.

cvtrain trains a small CNN (BatchNorm buffers included) for a few steps with a checkpoint after
every step; the raw weights of each checkpoint are fed, in order, to timm.utils.ModelEmaV3 with
the same decay and warm-up, and timm's average after each update is compared with the
ema.safetensors cvtrain saved at that step. Runs with warm-up and with a constant decay.

    check_weight_ema.py --cvtrain build/apps/cvtrain --recipe recipes/quickstart.yaml
"""
import argparse
import os
import subprocess
import sys
import tempfile

import torch
from safetensors.torch import load_file
from timm.utils import ModelEmaV3

from outcome import finish

STEPS = 6
TOLERANCE = 1e-6
BUFFERS = ("running_mean", "running_var", "num_batches_tracked")


def module_of(state):
    """A module tree with these tensors under these names (parameters, and BatchNorm's buffers)."""
    root = torch.nn.Module()
    for name, tensor in state.items():
        *path, leaf = name.split(".")
        module = root
        for part in path:
            if part not in module._modules:
                module.add_module(part, torch.nn.Module())
            module = module._modules[part]
        if leaf in BUFFERS:
            module.register_buffer(leaf, tensor.clone())
        else:
            module.register_parameter(leaf, torch.nn.Parameter(tensor.clone()))
    return root


def check(cvtrain, recipe, tmp, decay, warmup):
    out = os.path.join(tmp, f"run_{decay}_{warmup}")
    subprocess.run([cvtrain, "--recipe", recipe, "data.max_samples=512", "data.val=", "train.global_batch=64",
                    f"train.max_steps={STEPS}", "checkpoint.every_steps=1", f"checkpoint.keep={STEPS + 1}",
                    f"train.ema.decay={decay}", f"train.ema.warmup={'true' if warmup else 'false'}", f"output={out}"],
                   check=True, capture_output=True)
    folder = lambda step: os.path.join(out, "checkpoints", f"step-{step:08d}")
    model = module_of(load_file(os.path.join(folder(1), "model.safetensors")))
    ema = ModelEmaV3(model, decay=decay, use_warmup=warmup)
    worst = 0.0
    for step in range(1, STEPS + 1):
        raw = load_file(os.path.join(folder(step), "model.safetensors"))
        model.load_state_dict(raw)
        ema.update(model, step=step)
        mine = load_file(os.path.join(folder(step), "ema.safetensors"))
        theirs = ema.module.state_dict()
        assert set(mine) == set(theirs), f"step {step}: tensors differ: {sorted(set(mine) ^ set(theirs))}"
        for name, tensor in theirs.items():
            worst = max(worst, (mine[name].double() - tensor.double()).abs().max().item())
        moved = max((load_file(os.path.join(folder(step), "ema.safetensors"))[n].double() - raw[n].double()).abs().max().item()
                    for n in raw if raw[n].is_floating_point())
        if step > 1 and moved == 0:
            return [f"decay {decay} warm-up {warmup}: at step {step} the average equals the raw weights"]
    print(f"decay {decay}, warm-up {warmup}: {STEPS} steps, max |cvtrain - timm| = {worst:.3g}")
    return [] if worst <= TOLERANCE else [f"decay {decay} warm-up {warmup}: differs from ModelEmaV3 by {worst:.3g}"]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cvtrain", required=True)
    parser.add_argument("--recipe", required=True)
    args = parser.parse_args()
    failures = []
    with tempfile.TemporaryDirectory(prefix="cvtrain_ema_") as tmp:
        failures += check(args.cvtrain, args.recipe, tmp, 0.99, True)
        failures += check(args.cvtrain, args.recipe, tmp, 0.7, False)
    return finish(failures)


if __name__ == "__main__":
    sys.exit(main())
