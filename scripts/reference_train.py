#!/usr/bin/env python3
"""Plain-PyTorch reference for cvtrain's single-process loop: reads the resolved recipe that cvtrain
saved (recipe.yaml) and trains the same model on the same data order with the same schedule.

Used by scripts/bench_quickstart.sh; supports what the quickstart uses (idx data, small_cnn,
hflip, random_crop_padding, label smoothing, sgd/adamw, cosine/step/constant with warmup, fp32).
"""
import argparse
import gzip
import json
import math
import struct
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
import yaml

MASK = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15


def mix64(x):  # mirrors lib/cvtrain/core/rng.h
    x = (x + GOLDEN) & MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def sample_key(seed, epoch, index):
    return mix64(mix64(mix64(seed) ^ epoch) ^ index)


class SplitMix64:
    def __init__(self, state):
        self.state = state

    def next(self):
        out = mix64(self.state)
        self.state = (self.state + GOLDEN) & MASK
        return out

    def below(self, n):
        return (self.next() * n) >> 64

    def uniform(self):
        return (self.next() >> 11) * 2.0**-53


def epoch_order(seed, epoch, n):  # mirrors lib/cvtrain/data/sampler.cpp
    rng = SplitMix64(sample_key(seed, epoch, MASK))
    order = list(range(n))
    for i in range(n - 1, 0, -1):
        j = rng.below(i + 1)
        order[i], order[j] = order[j], order[i]
    return order


def read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = struct.unpack(">" + "I" * ndim, data[4 : 4 + 4 * ndim])
    return torch.frombuffer(bytearray(data[4 + 4 * ndim :]), dtype=torch.uint8).reshape(dims)


def labels_path(images_path):
    return images_path.replace("images-idx3", "labels-idx1")


def small_cnn(in_channels, num_classes):  # mirrors lib/cvtrain/models/small_cnn.cpp
    def block(i, o):
        return [nn.Conv2d(i, o, 3, padding=1, bias=False), nn.BatchNorm2d(o), nn.ReLU(inplace=True), nn.MaxPool2d(2)]

    return nn.Sequential(*block(in_channels, 32), *block(32, 64), *block(64, 128), nn.Flatten(),
                         nn.Linear(128 * 3 * 3, 256), nn.ReLU(inplace=True), nn.Dropout(0.25), nn.Linear(256, num_classes))


def augment(images, indices, seed, epoch, aug):
    """images: uint8 [B,H,W]; one SplitMix64 stream per sample, decisions in cvtrain's order."""
    pad = aug["random_crop_padding"]
    out = images.clone()
    h, w = images.shape[1:]
    for b, index in enumerate(indices):
        rng = SplitMix64(sample_key(seed, epoch, index))
        img = images[b]
        if pad:
            dy, dx = rng.below(2 * pad + 1), rng.below(2 * pad + 1)
            padded = F.pad(img, (pad, pad, pad, pad))
            img = padded[dy : dy + h, dx : dx + w]
        if aug["hflip"] and rng.uniform() < 0.5:
            img = img.flip(-1)
        out[b] = img
    return out


def lr_at(step, base, sched, steps_per_epoch, total):
    warmup = round(sched["warmup_epochs"] * steps_per_epoch)
    if step < warmup:
        return base * (step + 1) / warmup
    if sched["name"] == "cosine":
        t = (step - warmup) / max(1, total - warmup)
        return sched["min_lr"] + (base - sched["min_lr"]) * 0.5 * (1 + math.cos(math.pi * t))
    if sched["name"] == "step":
        passed = sum(1 for m in sched["milestones"] if step >= round(m * steps_per_epoch))
        return base * sched["gamma"] ** passed
    return base


def build_optimizer(model, o):
    decay = [p for p in model.parameters() if p.dim() > 1]
    no_decay = [p for p in model.parameters() if p.dim() <= 1]
    groups = [{"params": decay, "weight_decay": o["weight_decay"]}, {"params": no_decay, "weight_decay": 0.0}]
    if o["name"] == "sgd":
        return torch.optim.SGD(groups, lr=o["lr"], momentum=o["momentum"], nesterov=o["nesterov"])
    return torch.optim.AdamW(groups, lr=o["lr"], betas=tuple(o["betas"]), eps=o["eps"])


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("recipe", help="resolved recipe.yaml written by cvtrain")
    parser.add_argument("--metrics", help="write one JSON line per epoch here")
    args = parser.parse_args()
    r = yaml.safe_load(open(args.recipe))
    data, train, aug, model_spec = r["data"], r["train"], r["augment"], r["model"]
    if model_spec["arch"] != "small_cnn" or data["format"] != "idx":
        sys.exit("reference_train.py supports model.arch small_cnn on data.format idx only")
    torch.manual_seed(train["seed"])
    torch.set_num_threads(torch.get_num_threads())

    train_x, train_y = read_idx(data["train"]), read_idx(labels_path(data["train"])).long()
    val_x, val_y = read_idx(data["val"]), read_idx(labels_path(data["val"])).long()
    if data["max_samples"]:
        train_x, train_y = train_x[: data["max_samples"]], train_y[: data["max_samples"]]
    mean, std = data["mean"][0], data["std"][0]
    normalise = lambda x: (x.float().div(255) - mean).div(std).unsqueeze(1)

    model = small_cnn(1, model_spec["num_classes"])
    opt = build_optimizer(model, r["optim"])
    batch = train["global_batch"]
    steps_per_epoch = len(train_x) // batch
    total = train["epochs"] * steps_per_epoch
    step = 0
    log = open(args.metrics, "w") if args.metrics else None
    for epoch in range(train["epochs"]):
        model.train()
        order = epoch_order(train["seed"], epoch, len(train_x))
        start, loss_sum = time.time(), 0.0
        for s in range(steps_per_epoch):
            idx = order[s * batch : (s + 1) * batch]
            x = normalise(augment(train_x[idx], idx, train["seed"], epoch, aug))
            for g in opt.param_groups:
                g["lr"] = lr_at(step, r["optim"]["lr"], r["schedule"], steps_per_epoch, total)
            opt.zero_grad(set_to_none=True)
            loss = F.cross_entropy(model(x), train_y[idx], label_smoothing=aug["label_smoothing"])
            loss.backward()
            opt.step()
            loss_sum += loss.item()
            step += 1
        seconds = time.time() - start
        model.eval()
        correct = 0
        with torch.no_grad():
            for i in range(0, len(val_x), 1000):
                correct += (model(normalise(val_x[i : i + 1000])).argmax(1) == val_y[i : i + 1000]).sum().item()
        line = {"epoch": epoch + 1, "train_loss": loss_sum / steps_per_epoch, "top1": correct / len(val_x), "epoch_seconds": seconds}
        print(json.dumps(line), flush=True)
        if log:
            log.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    main()
