#!/usr/bin/env python3
"""Segmentation's evaluation and `cvtrain predict` against torchvision + PIL + numpy: a model exported
by cvtrain and run by torchvision on the validation JPEGs as Pillow decodes them gives cvtrain's
per-pixel predictions and its mIoU.

A small shapes set (scripts/make_shapes_dataset.py: 4:2:0 JPEGs of coloured shapes, whose chroma
edges are where a decoder's chroma upsampling shows) trains FCN-ResNet-50 for a few steps; then
`cvtrain export` writes torchvision's names, `cvtrain eval` scores the validation set and `cvtrain
predict` writes its masks. torchvision's `fcn_resnet50(num_classes=4, aux_loss=True)` loads the
file; each validation image is opened with PIL, normalised as cvtrain's feeder does ((x - 255 mean)
* 1 / (255 std) in float32, so that the inputs are the same floats) and put through the model one at
a time. cvtrain batches its images, so a logit may differ in its last bits: a pixel whose two best
logits are closer than 1e-4 of the largest logit may go either way and is counted, not failed. Every
other pixel must be cvtrain's class, and with no such pixel the mIoU must be eval.json's exactly.
Before segmentation decoded JPEGs as Pillow does, 0.9 % of the pixels differed (issue 64).

    check_segmentation_eval.py --cvtrain build/apps/cvtrain --recipe recipes/shapes_segmentation.yaml
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torchvision
from PIL import Image
from safetensors.torch import load_file

from outcome import finish

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]  # the recipe's (ImageNet's, the default)
CLASSES = 4
NEAR_TIE = 1e-4  # of the largest logit: far above the float rounding of two batchings, far below a decode's effect


def run(command, what):
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{what} exited {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    return done


def torchvision_logits(model, path):
    pixels = torch.from_numpy(np.asarray(Image.open(path).convert("RGB")).copy()).permute(2, 0, 1)[None].float()
    mean = torch.tensor(MEAN, dtype=torch.float64).mul(255).float().view(1, 3, 1, 1)
    inv_std = torch.tensor(STD, dtype=torch.float64).mul(255).reciprocal().float().view(1, 3, 1, 1)
    with torch.no_grad():
        return model(pixels.sub_(mean).mul_(inv_std))["out"][0]


def miou_of(confusion):
    truth, predicted, hits = confusion.sum(1), confusion.sum(0), np.diag(confusion)
    united = truth + predicted - hits
    iou = np.where(united > 0, hits / np.maximum(united, 1), np.nan)
    return float(np.nanmean(iou))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cvtrain", required=True)
    parser.add_argument("--recipe", required=True, help="recipes/shapes_segmentation.yaml")
    parser.add_argument("--shapes-script", default=os.path.join(os.path.dirname(__file__), "../../scripts/make_shapes_dataset.py"))
    args = parser.parse_args()
    failures = []
    with tempfile.TemporaryDirectory() as work:
        shapes = os.path.join(work, "shapes")
        run([sys.executable, args.shapes_script, shapes, "--train", "16", "--val", "6", "--size", "48"], "make_shapes_dataset.py")
        splits = os.path.join(shapes, "ImageSets/Segmentation")
        recipe = ["--recipe", args.recipe, f"data.train={splits}/train.txt", f"data.val={splits}/val.txt", "model.arch=fcn_resnet50",
                  "model.image_size=48", "augment.crop_size=[48,48]", "augment.scale=[72,48]", "train.epochs=1", "train.global_batch=8",
                  "data.workers=1"]
        folder = os.path.join(work, "run")
        run([args.cvtrain, *recipe, f"output={folder}"], "cvtrain training")
        checkpoint = sorted(glob.glob(os.path.join(folder, "checkpoints/step-*")))[-1]
        run([args.cvtrain, "eval", *recipe, f"output={folder}", "--checkpoint", checkpoint, "-o", os.path.join(work, "eval.json")],
            "cvtrain eval")
        reported = json.load(open(os.path.join(work, "eval.json")))
        exported = os.path.join(work, "fcn.safetensors")
        run([args.cvtrain, "export", checkpoint, "--out", exported], "cvtrain export")
        images = sorted(glob.glob(os.path.join(shapes, "JPEGImages/val_*.jpg")))
        run([args.cvtrain, "predict", "--checkpoint", checkpoint, *images, "--out", os.path.join(work, "masks")], "cvtrain predict")

        model = torchvision.models.segmentation.fcn_resnet50(weights=None, weights_backbone=None, num_classes=CLASSES, aux_loss=True)
        model.load_state_dict(load_file(exported))
        model.eval()
        confusion = np.zeros((CLASSES, CLASSES), dtype=np.int64)
        pixels = near_ties = differing = 0
        classes_predicted = set()
        for path in images:
            name = os.path.splitext(os.path.basename(path))[0]
            logits = torchvision_logits(model, path)
            ours = logits.argmax(0).numpy()
            theirs = np.asarray(Image.open(os.path.join(work, "masks", name + ".png")))
            top2 = logits.topk(2, dim=0).values
            tie = ((top2[0] - top2[1]) <= NEAR_TIE * logits.abs().max()).numpy()
            mismatch = ours != theirs
            near_ties += int((mismatch & tie).sum())
            differing += int((mismatch & ~tie).sum())
            pixels += ours.size
            classes_predicted |= set(np.unique(ours).tolist())
            truth = np.asarray(Image.open(os.path.join(shapes, "SegmentationClass", name + ".png")))
            labelled = truth != 255
            np.add.at(confusion, (truth[labelled], ours[labelled]), 1)
        reference_miou = miou_of(confusion)
        print(f"{len(images)} validation JPEGs, {pixels} pixels: {differing} predicted otherwise than torchvision's, "
              f"{near_ties} more at near ties; classes predicted {sorted(classes_predicted)}")
        print(f"mIoU: cvtrain eval {reported['miou']:.6f}, torchvision on PIL's pixels {reference_miou:.6f}")
        if differing:
            failures.append(f"cvtrain predict's masks differ from torchvision's on PIL's pixels at {differing} of {pixels} pixels")
        if len(classes_predicted) < 2:
            failures.append(f"the model predicts {sorted(classes_predicted)} only: the comparison shows nothing")
        if near_ties == 0 and abs(reported["miou"] - reference_miou) > 1e-6:  # eval.json prints 6 or more places
            failures.append(f"cvtrain eval's mIoU {reported['miou']} is not torchvision's {reference_miou}")
    return finish(failures)


if __name__ == "__main__":
    sys.exit(main())
