#!/usr/bin/env python3
"""`cvtrain eval` against torchvision's own evaluation loop, as timm's validate.py would run it.

A torchvision ResNet-18 for 6 classes is made to predict something (BatchNorm statistics from the
images, its head fitted by least squares on half of them, classes drawn at random) and saved by Python with torchvision's
key names. On a small ImageFolder of JPEGs and a PNG of assorted sizes, 47 images (not a multiple of
the ranks or the batch), torchvision's ImageFolder with Resize(floor(64 / 0.9)) + CenterCrop(64)
and model.eval() gives top-1, top-5 and loss; `cvtrain eval --weights` at data.eval_crop_fraction 0.9
must count exactly the same hits and the same loss, on one rank and on two (ddp over Gloo), and
with data.eval_interpolation bicubic the same as Resize(..., BICUBIC), as DeiT and ConvNeXt evaluate.

    check_eval.py --cvtrain build/apps/cvtrain
"""
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np
import skimage.data
import torch
import torchvision
import torchvision.transforms as T
from PIL import Image
from safetensors.torch import save_file

from outcome import cvtrain_path, finish

CLASSES, SIZE, CROP = 6, 64, 0.9
MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
PHOTOS = ["astronaut", "coffee", "chelsea", "rocket", "immunohistochemistry", "hubble_deep_field"]
LOSS_TOLERANCE = 1e-5  # relative: the same kernels, summed in another order across batches and ranks


def make_folder(root):
    """47 crops of the photos, each sized differently and put in one of 6 classes at random (so that
    a head fitted on half of them is right on about half, and top-1 and top-5 both count); under
    twice the resize, so both sides decode at full size and their pixels are equal."""
    rng = np.random.default_rng(0)
    photos = [Image.fromarray(getattr(skimage.data, name)()).convert("RGB") for name in PHOTOS]
    for c in range(CLASSES):
        os.makedirs(os.path.join(root, f"class_{c}"))
    for i in range(47):
        photo = photos[int(rng.integers(len(photos)))]
        w, h = photo.size
        left, top = int(rng.integers(0, w // 3)), int(rng.integers(0, h // 3))
        crop = photo.crop((left, top, left + w // 2, top + h // 2))
        image = crop.resize((int(rng.integers(72, 140)), int(rng.integers(72, 140))), Image.BICUBIC)
        path = os.path.join(root, f"class_{int(rng.integers(CLASSES))}", f"{i:02d}")
        if i == 0:
            image.save(path + ".png")
        else:
            image.save(path + ".jpg", quality=int(rng.integers(70, 96)))
    return 47


def fitted_model(dataset):
    torch.manual_seed(0)
    model = torchvision.models.resnet18(num_classes=CLASSES)
    images = torch.stack([image for image, _ in dataset])
    labels = torch.tensor([label for _, label in dataset])
    model.train()
    for module in model.modules():
        if isinstance(module, torch.nn.BatchNorm2d):
            module.momentum = None  # a cumulative average over the passes below
    with torch.no_grad():
        for chunk in images.split(16):
            model(chunk)
    model.eval()
    with torch.no_grad():
        features = torch.nn.Sequential(*list(model.children())[:-1])(images).flatten(1)
        half = torch.arange(len(images)) % 2 == 0
        x = torch.cat([features[half], torch.ones(int(half.sum()), 1)], 1)
        y = torch.nn.functional.one_hot(labels[half], CLASSES).float()
        solution = torch.linalg.lstsq(x.double(), y.double(), driver="gelsd").solution.float()  # [features + 1, classes]
        model.fc.weight.copy_(solution[:-1].t())
        model.fc.bias.copy_(solution[-1])
    return model


def torchvision_figures(model, dataset):
    loader = torch.utils.data.DataLoader(dataset, batch_size=16, shuffle=False)
    loss, top1, top5, margins = 0.0, 0, 0, []
    with torch.no_grad():
        for images, labels in loader:
            logits = model(images)
            loss += torch.nn.functional.cross_entropy(logits, labels, reduction="sum").item()
            predicted = logits.topk(5, 1).indices
            top1 += int((predicted[:, 0] == labels).sum())
            top5 += int((predicted == labels[:, None]).any(1).sum())
            best = logits.topk(2, 1).values
            margins += (best[:, 0] - best[:, 1]).tolist()
    n = len(dataset)
    return {"top1": top1 / n, "top5": top5 / n, "loss": loss / n}, min(margins)


def recipe(tmp, root, ranks, interpolation="bilinear"):
    path = os.path.join(tmp, f"eval_{ranks}_{interpolation}.yaml")
    with open(path, "w") as f:
        f.write(f"""model: {{arch: resnet18, num_classes: {CLASSES}, image_size: {SIZE}}}
data: {{format: imagefolder, train: {root}, val: {root}, workers: 2, eval_crop_fraction: {CROP}, eval_interpolation: {interpolation}}}
train: {{global_batch: {16 * ranks}, micro_batch: 16}}
precision: fp32
device: cpu
strategy: {'ddp' if ranks > 1 else 'single'}
distributed: {{nproc_per_node: {ranks}}}
output: {os.path.join(tmp, f'run_{ranks}_{interpolation}')}
""")
    return path


def main():
    cvtrain = cvtrain_path(__doc__)
    failures = []
    with tempfile.TemporaryDirectory(prefix="cvtrain_eval_") as tmp:
        root = os.path.join(tmp, "images")
        n = make_folder(root)
        model, weights, references = None, os.path.join(tmp, "resnet18.safetensors"), {}
        for interpolation in ("bilinear", "bicubic"):
            view = T.Compose([T.Resize(math.floor(SIZE / CROP), interpolation=T.InterpolationMode(interpolation)), T.CenterCrop(SIZE),
                              T.ToTensor(), T.Normalize(MEAN, STD)])
            dataset = torchvision.datasets.ImageFolder(root, transform=view)
            if model is None:  # fitted on the bilinear view, scored on both
                model = fitted_model(dataset)
                save_file({k: v.contiguous() for k, v in model.state_dict().items()}, weights)
            reference, margin = references[interpolation] = torchvision_figures(model, dataset)
            print(f"torchvision on {n} images, {interpolation}: top-1 {reference['top1']:.4f} top-5 {reference['top5']:.4f} "
                  f"loss {reference['loss']:.6f} (smallest top-1 margin {margin:.2e})")
        reference = references["bilinear"][0]
        if not (0.3 < reference["top1"] < 0.9 and reference["top5"] < 1):
            failures.append(f"the fitted model (top-1 {reference['top1']:.3f}, top-5 {reference['top5']:.3f}) is too close to chance "
                            "or to perfect to tell two views apart")
        if references["bicubic"][0] == reference:
            failures.append("the bicubic view scores exactly as the bilinear one: the comparison could not tell them apart")
        for ranks, interpolation in ((1, "bilinear"), (2, "bilinear"), (1, "bicubic")):
            reference, case = references[interpolation][0], f"{ranks} rank(s), {interpolation}"
            out = os.path.join(tmp, f"eval_{ranks}_{interpolation}.json")
            run = subprocess.run([cvtrain, "eval", "--recipe", recipe(tmp, root, ranks, interpolation), "--weights", weights, "--out", out],
                                 capture_output=True, text=True)
            if run.returncode != 0:
                failures.append(f"{case}: cvtrain eval exited {run.returncode}: {run.stderr[-2000:]}")
                continue
            mine = json.load(open(out))
            print(f"cvtrain, {case}: top-1 {mine['top1']:.4f} top-5 {mine['top5']:.4f} loss {mine['loss']:.6f} "
                  f"({mine['samples']} samples, resize {mine['resize']}, {mine['interpolation']})")
            if (mine["samples"] != n or mine["world_size"] != ranks or mine["resize"] != math.floor(SIZE / CROP)
                    or mine["kept_whole"] or mine["interpolation"] != interpolation):
                failures.append(f"{case}: samples {mine['samples']}, world size {mine['world_size']}, resize {mine['resize']}, "
                                f"kept whole {mine['kept_whole']}, "
                                f"interpolation {mine['interpolation']}")
            for key in ("top1", "top5"):
                if round(mine[key] * n) != round(reference[key] * n):
                    failures.append(f"{case}: {key} {mine[key] * n:.0f} hits, torchvision {reference[key] * n:.0f}")
            if abs(mine["loss"] - reference["loss"]) > LOSS_TOLERANCE * reference["loss"]:
                failures.append(f"{case}: loss {mine['loss']!r}, torchvision {reference['loss']!r}")
        # A head for another class count would evaluate noise: an error naming the file, not a result.
        other = subprocess.run([cvtrain, "eval", "--recipe", recipe(tmp, root, 1), "--weights", weights, f"model.num_classes={CLASSES + 1}"],
                               capture_output=True, text=True)
        if other.returncode != 1 or "its classifier head (fc.weight, fc.bias)" not in other.stderr:
            failures.append(f"model.num_classes={CLASSES + 1}: exit {other.returncode}, {other.stderr[-500:]!r}")
    return finish(failures)


if __name__ == "__main__":
    sys.exit(main())
