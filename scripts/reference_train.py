#!/usr/bin/env python3
"""Plain-PyTorch reference for cvtrain's training loop: reads the resolved recipe that cvtrain
saved (recipe.yaml) and trains the same model from the same seed on the same data order with the
same augmentation, optimizer and schedule, so the two runs take the same steps.

Used by scripts/bench_quickstart.sh (accuracy and speed side by side) and by
tests/parity/check_training.py (step-by-step equality). Supports the CPU, every precision (bf16
and fp16 through torch.autocast, fp16 with torch.amp.GradScaler), idx data, small_cnn and mlp, hflip, vflip, random_crop_padding, label smoothing, channels_last, accumulation, grad_clip,
max_steps, sgd/adamw, cosine/step/constant with warmup; one process, or (strategies ddp, zero1,
zero2, fsdp) one rank of a torch.distributed group under torch's DistributedDataParallel, called
once per rank.
"""
import argparse
import contextlib
import gzip
import json
import math
import struct
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
import yaml
from torch.nn.parallel import DistributedDataParallel

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


def mlp(inputs, num_classes):  # mirrors lib/cvtrain/models/small_cnn.cpp
    return nn.Sequential(nn.Flatten(), nn.Linear(inputs, 256), nn.ReLU(inplace=True), nn.Linear(256, num_classes))


def build_model(spec):
    """Built right after torch.manual_seed(train.seed), as cvtrain does, so the initial weights are
    the same draws of the same generator."""
    if spec["arch"] == "small_cnn":
        return small_cnn(1, spec["num_classes"]), True
    return mlp(spec["image_size"] ** 2, spec["num_classes"]), False


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
        for key, dim in (("hflip", -1), ("vflip", -2)):  # a chance; the recipe prints 0.5 as true, 0 as false
            chance = 0.5 if aug.get(key) is True else float(aug.get(key) or 0)
            if chance > 0 and rng.uniform() < chance:
                img = img.flip(dim)
        out[b] = img
    return out


def round_half_away(x):  # C++'s llround, which cvtrain uses; Python's round() goes to even
    return math.floor(x + 0.5)


def lr_at(step, base, sched, steps_per_epoch, total):
    warmup = round_half_away(sched["warmup_epochs"] * steps_per_epoch)
    if step < warmup:
        return base * (step + 1) / warmup
    if sched["name"] == "cosine":
        t = (step - warmup) / max(1, total - warmup)
        return sched["min_lr"] + (base - sched["min_lr"]) * 0.5 * (1 + math.cos(math.pi * t))
    if sched["name"] == "step":
        passed = sum(1 for m in sched["milestones"] if step >= round_half_away(m * steps_per_epoch))
        return base * sched["gamma"] ** passed
    return base


def build_optimizer(model, o):
    decay = [p for p in model.parameters() if p.dim() > 1]
    no_decay = [p for p in model.parameters() if p.dim() <= 1]
    groups = [{"params": decay, "weight_decay": o["weight_decay"]}, {"params": no_decay, "weight_decay": 0.0}]
    if o["name"] == "sgd":
        return torch.optim.SGD(groups, lr=o["lr"], momentum=o["momentum"], nesterov=o["nesterov"])
    return torch.optim.AdamW(groups, lr=o["lr"], betas=tuple(o["betas"]), eps=o["eps"])


def world():
    """(rank, world size): this process's place in torch.distributed's group, or (0, 1)."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def check_supported(r):
    data, train, aug, model_spec = r["data"], r["train"], r["augment"], r["model"]
    problems = []
    if model_spec["arch"] not in ("small_cnn", "mlp") or data["format"] != "idx":
        problems.append("model.arch small_cnn or mlp on data.format idx")
    size = world()[1]
    if train["micro_batch"] * train["accumulation"] * size != train["global_batch"]:
        problems.append(f"micro_batch x accumulation x {size} rank(s) = global_batch")
    # zero1/zero2/fsdp compute what ddp does, so DistributedDataParallel is their reference too.
    if size > 1 and r["model"]["sync_bn"]:
        problems.append("no sync_bn (torch's SyncBatchNorm needs a GPU)")
    if aug["mixup"] or aug["cutmix"] or model_spec["pretrained"]:
        problems.append("no mixup/cutmix, no pretrained weights")
    if problems:
        sys.exit("reference_train.py supports only " + "; ".join(problems))


def load_split(path, limit):
    images, labels = read_idx(path), read_idx(labels_path(path)).long()
    return (images[:limit], labels[:limit]) if limit else (images, labels)


def evaluate(model, normalise, val_x, val_y, amp_dtype):
    """Top-1 over the whole validation set, under autocast as training. cvtrain spreads it over the
    ranks and adds the counts, which gives the same number."""
    model.eval()
    correct = 0
    with torch.no_grad(), torch.autocast("cpu", dtype=amp_dtype, enabled=amp_dtype is not None):
        for i in range(0, len(val_x), 1000):
            # The first of topk(5), as cvtrain, timm and PyTorch's ImageNet example count: in bf16 or
            # fp16 logits tie now and then, and argmax would break ties differently.
            logits = model(normalise(val_x[i : i + 1000])).float()
            correct += (logits.topk(min(5, logits.size(1)), 1).indices[:, 0] == val_y[i : i + 1000]).sum().item()
    return correct / len(val_x)


def make_normaliser(data, channels_last):
    """cvtrain's device feeder: (x - 255 mean) * (1 / (255 std)) in float, constants made in double."""
    mean255 = torch.tensor(data["mean"], dtype=torch.float64).mul(255).float().view(1, -1, 1, 1)
    inv_std255 = torch.tensor(data["std"], dtype=torch.float64).mul(255).reciprocal().float().view(1, -1, 1, 1)

    def normalise(x):
        x = x.unsqueeze(1).float()
        if channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        return x.sub_(mean255).mul_(inv_std255)

    return normalise


def mean_over_ranks(value):
    size = world()[1]
    if size == 1:
        return value
    total = torch.tensor(value, dtype=torch.float64)
    dist.all_reduce(total)
    return total.item() / size


def optimizer_step(net, model, opt, scaler, micro_batches, r, amp_dtype):
    """One step over this rank's [(images, labels), ...]: autocast around forward and loss, the
    gradient all-reduce (DDP) only on the last micro-batch, clipping after unscaling. Returns the
    step's loss, the mean over micro-batches and ranks."""
    opt.zero_grad(set_to_none=True)
    accumulation, step_loss = len(micro_batches), 0.0
    for m, (x, y) in enumerate(micro_batches):
        syncing = m == accumulation - 1 or not isinstance(net, DistributedDataParallel)
        with contextlib.nullcontext() if syncing else net.no_sync():
            with torch.autocast("cpu", dtype=amp_dtype, enabled=amp_dtype is not None):
                loss = F.cross_entropy(net(x), y, label_smoothing=r["augment"]["label_smoothing"])
            scaler.scale(loss / accumulation).backward()
        step_loss += loss.item() / accumulation
    if r["train"]["grad_clip"] > 0:
        scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(model.parameters(), r["train"]["grad_clip"])
    scaler.step(opt)  # skipped when fp16 gradients overflowed
    scaler.update()
    return mean_over_ranks(step_loss)


def train_reference(r, on_step=None, on_epoch=None):
    """Trains as cvtrain would; on_step(step, loss, lr, loss_scale) after every optimizer step (loss:
    the mean over ranks; loss_scale: None unless fp16), on_epoch(record) after every evaluation
    (rank 0 only). Returns the model."""
    check_supported(r)
    data, train, aug = r["data"], r["train"], r["augment"]
    rank, size = world()
    torch.manual_seed(train["seed"])  # on every rank, as cvtrain: the same weights and dropout draws
    model, convolutional = build_model(r["model"])
    channels_last = convolutional and train["channels_last"]
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
    # torch's defaults: rank 0's parameters and buffers broadcast, bucketed all-reduce of the mean.
    net = DistributedDataParallel(model) if size > 1 else model
    train_x, train_y = load_split(data["train"], data["max_samples"])
    val_x, val_y = load_split(data["val"], data["max_val_samples"])
    normalise = make_normaliser(data, channels_last)
    opt = build_optimizer(model, r["optim"])
    # cvtrain's precision: bf16/fp16 autocast; fp16 adds dynamic loss scaling with its constants
    # (2^16 at first, x2 after 2,000 clean steps, x0.5 and the step skipped on overflow).
    amp_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(r["precision"])
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                                  enabled=r["precision"] == "fp16")
    batch, micro = train["global_batch"], train["micro_batch"]
    steps_per_epoch = len(train_x) // batch
    total = train["epochs"] * steps_per_epoch
    if train["max_steps"]:
        total = min(total, train["max_steps"])
    step = 0
    for epoch in range(train["epochs"]):
        if step >= total:
            break
        model.train()
        order = epoch_order(train["seed"], epoch, len(train_x))
        start, loss_sum, epoch_steps = time.time(), 0.0, 0
        for s in range(min(steps_per_epoch, total - step)):
            lr = lr_at(step, r["optim"]["lr"], r["schedule"], steps_per_epoch, total)
            for g in opt.param_groups:
                g["lr"] = lr
            # Rank r's contiguous share of the global batch, micro-batches in order (cvtrain's sampler).
            micro_batches = []
            for first in range(s * batch + rank * (batch // size), s * batch + (rank + 1) * (batch // size), micro):
                idx = order[first : first + micro]
                micro_batches.append((normalise(augment(train_x[idx], idx, train["seed"], epoch, aug)), train_y[idx]))
            step_loss = optimizer_step(net, model, opt, scaler, micro_batches, r, amp_dtype)
            loss_sum += step_loss
            step += 1
            epoch_steps += 1
            if on_step:
                on_step(step, step_loss, lr, scaler.get_scale() if scaler.is_enabled() else None)
        seconds = time.time() - start
        if rank == 0:
            top1 = evaluate(model, normalise, val_x, val_y, amp_dtype)
            if on_epoch:
                on_epoch({"epoch": epoch + 1, "train_loss": loss_sum / epoch_steps, "top1": top1, "epoch_seconds": seconds})
    return model


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("recipe", help="resolved recipe.yaml written by cvtrain")
    parser.add_argument("--metrics", help="write one JSON line per epoch here")
    args = parser.parse_args()
    r = yaml.safe_load(open(args.recipe))
    log = open(args.metrics, "w") if args.metrics else None

    def on_epoch(record):
        print(json.dumps(record), flush=True)
        if log:
            log.write(json.dumps(record) + "\n")

    train_reference(r, on_epoch=on_epoch)


if __name__ == "__main__":
    main()
