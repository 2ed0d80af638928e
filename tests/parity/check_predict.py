#!/usr/bin/env python3
"""`cvtrain predict` against torchvision: the same weights, files and view give the same classes
and probabilities.

check_eval.py's fitted ResNet-18 (6 classes, saved with torchvision's key names) and its 47 JPEGs
and PNG in class folders, plus a gray PNG, an RGBA PNG, a palette PNG and a JPEG two folders deeper,
an empty file and a text file named .jpg. Each readable file is opened by PIL, converted to RGB,
put through Resize(floor(64 / 0.9)) + CenterCrop(64) + Normalize and the model: `cvtrain predict
--weights` must list every file in the order given (folders in torchvision's ImageFolder order),
name the folders' classes (data.train's), give the same top-5 labels (where two probabilities are
too close to order, either order) and probabilities within 1e-5, write the same in CSV and JSON
lines, give each unusable file a row with its reason, and exit 1 for them.

    check_predict.py --cvtrain build/apps/cvtrain
"""
import csv
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torchvision
import torchvision.transforms as T
from PIL import Image
from safetensors.torch import save_file

from check_eval import CROP, MEAN, SIZE, STD, fitted_model, make_folder, recipe
from outcome import cvtrain_path, finish

TOP = 5
PROBABILITY_TOLERANCE = 1e-5  # absolute: the same kernels, batched differently


def add_odd_files(tmp, root):
    """Images in modes the RGB path must convert, one nested deeper, and two unusable files.
    Returns (readable inputs, unusable inputs), as given on the command line."""
    rng = np.random.default_rng(1)
    odd = os.path.join(tmp, "odd")
    os.makedirs(os.path.join(odd, "a", "b"))
    photo = Image.open(sorted(os.path.join(dp, f) for dp, _, fs in os.walk(root) for f in fs)[3]).convert("RGB")
    photo.convert("L").save(os.path.join(odd, "gray.png"))
    rgba = photo.convert("RGBA")
    rgba.putalpha(Image.fromarray(rng.integers(0, 256, (photo.height, photo.width), dtype=np.uint8)))
    rgba.save(os.path.join(odd, "rgba.png"))
    photo.convert("P", palette=Image.ADAPTIVE, colors=32).save(os.path.join(odd, "palette.png"))
    photo.transpose(Image.FLIP_LEFT_RIGHT).save(os.path.join(odd, "a", "b", "deep.jpg"), quality=90)
    open(os.path.join(tmp, "empty.jpg"), "wb").close()
    with open(os.path.join(tmp, "text.jpg"), "w") as f:
        f.write("not an image\n")
    return [odd], [os.path.join(tmp, "empty.jpg"), os.path.join(tmp, "text.jpg")]


def evaluation_view():
    return T.Compose([T.Resize(math.floor(SIZE / CROP)), T.CenterCrop(SIZE), T.ToTensor(), T.Normalize(MEAN, STD)])


def torchvision_top(model, paths):
    view = evaluation_view()
    images = torch.stack([view(Image.open(p).convert("RGB")) for p in paths])
    with torch.no_grad():
        probabilities = model(images).softmax(1)
    return probabilities


def read_csv(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    return rows


def compare(case, rows, paths, names, reference, failures):
    by_path = {row["path"]: row for row in rows}
    for i, path in enumerate(paths):
        row = by_path.get(path)
        if row is None:
            failures.append(f"{case}: no row for {path}")
            continue
        if row["error"]:
            failures.append(f"{case}: {path}: error {row['error']!r}")
            continue
        expected = reference[i]
        for k in range(1, TOP + 1):
            label, probability = int(row[f"label_{k}"]), float(row[f"probability_{k}"])
            if row[f"class_{k}"] != names[label]:
                failures.append(f"{case}: {path}: class_{k} {row[f'class_{k}']!r} for label {label}, expected {names[label]!r}")
            if abs(probability - expected[label].item()) > PROBABILITY_TOLERANCE:
                failures.append(f"{case}: {path}: label {label} probability {probability}, torchvision {expected[label].item()}")
            # Rank k must hold a label whose probability is the k-th largest (ties within tolerance either way).
            kth = expected.sort(descending=True).values[k - 1].item()
            if abs(expected[label].item() - kth) > PROBABILITY_TOLERANCE:
                failures.append(f"{case}: {path}: rank {k} is label {label} ({expected[label].item():.6f}), torchvision's "
                                f"rank {k} has {kth:.6f}")


def main():
    cvtrain = cvtrain_path(__doc__)
    failures = []
    with tempfile.TemporaryDirectory(prefix="cvtrain_predict_") as tmp:
        root = os.path.join(tmp, "images")
        make_folder(root)
        dataset = torchvision.datasets.ImageFolder(root, transform=evaluation_view())
        model = fitted_model(dataset)
        weights = os.path.join(tmp, "resnet18.safetensors")
        save_file({k: v.contiguous() for k, v in model.state_dict().items()}, weights)
        odd_inputs, unusable = add_odd_files(tmp, root)

        folder_files = [path for path, _ in dataset.samples]  # torchvision's ImageFolder order
        # A folder's own files first, then its sub-folders' (sorted(os.walk(...)), as ImageFolder walks a class).
        odd_files = [os.path.join(tmp, "odd", name) for name in ("gray.png", "palette.png", "rgba.png", "a/b/deep.jpg")]
        readable = folder_files + odd_files
        reference = torchvision_top(model, readable)
        names = dataset.classes

        out_csv, out_jsonl = os.path.join(tmp, "p.csv"), os.path.join(tmp, "p.jsonl")
        for out in (out_csv, out_jsonl):
            run = subprocess.run([cvtrain, "predict", "--recipe", recipe(tmp, root, 1), "--weights", weights, "--top-k", str(TOP),
                                  "--batch", "7", "--out", out, root] + odd_inputs + unusable, capture_output=True, text=True)
            print(run.stdout[:600])
            if run.returncode != 1:
                failures.append(f"{out}: exit {run.returncode} (1 expected: two files are unusable): {run.stderr[-1500:]}")
            if "2 of 53 file(s) could not be read" not in run.stderr:
                failures.append(f"{out}: the log does not count the two unusable files: {run.stderr[-1500:]}")
        rows = read_csv(out_csv)
        if [row["path"] for row in rows] != readable + unusable:
            failures.append(f"the CSV's paths are not the inputs in order: {[row['path'] for row in rows][:8]} ...")
        compare("csv", rows, readable, names, reference, failures)
        for path, reason in zip(unusable, ("empty", "text, not an image")):
            row = next((r for r in rows if r["path"] == path), None)
            if row is None or reason not in row["error"] or path not in row["error"] or row["label_1"]:
                failures.append(f"{path}: row {row!r}, expected an error saying {reason!r}")

        as_rows = []
        for line in open(out_jsonl):
            record = json.loads(line)
            row = {"path": record["path"], "error": record.get("error", "")}
            for k, top in enumerate(record.get("top", []), 1):
                row.update({f"class_{k}": top["class"], f"label_{k}": str(top["label"]), f"probability_{k}": str(top["probability"])})
            as_rows.append(row)
        if [row["path"] for row in as_rows] != readable + unusable:
            failures.append("the JSON lines' paths are not the inputs in order")
        compare("jsonl", as_rows, readable, names, reference, failures)

        print(f"{len(readable)} readable files against torchvision, top-{TOP}; classes {names}")
    return finish(failures)


if __name__ == "__main__":
    sys.exit(main())
