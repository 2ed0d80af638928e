#!/usr/bin/env python3
"""PyTorch's own training loop with gpu_check.sh's synthetic settings, for a side-by-side rate.

    python3 scripts/gpu_reference.py --precision bf16 [--model resnet50|vit_b16] [--cudnn-benchmark] [--compile]
                                     [--batch N] [--steps 30]

Random 224x224 images on the device, 1000 classes, autocast (fp16 through GradScaler), the
multi-tensor optimizer. resnet50 (batch 256): channels_last, SGD (lr 0.1, Nesterov momentum 0.9,
weight decay 5e-4), label smoothing 0.1; torchvision's model when torchvision is installed, else the
same architecture defined below. vit_b16 (batch 128): AdamW (lr 1e-3, weight decay 0.05), gradients
clipped to norm 1; torchvision's vit_b_16 when installed, else the ViT-B/16 defined below (fused
scaled_dot_product_attention). --compile runs the model through torch.compile (the compile happens in
the untimed steps). Prints images/s over the last third of the steps.
"""
import argparse
import time

import torch
from torch import nn


class Bottleneck(nn.Module):
    """torchvision's Bottleneck (ResNet v1.5: the stride on the 3x3 convolution)."""

    def __init__(self, inplanes, planes, stride):
        super().__init__()
        width, out = planes, planes * 4
        self.conv1, self.bn1 = nn.Conv2d(inplanes, width, 1, bias=False), nn.BatchNorm2d(width)
        self.conv2, self.bn2 = nn.Conv2d(width, width, 3, stride, 1, bias=False), nn.BatchNorm2d(width)
        self.conv3, self.bn3 = nn.Conv2d(width, out, 1, bias=False), nn.BatchNorm2d(out)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = None
        if stride != 1 or inplanes != out:
            self.downsample = nn.Sequential(nn.Conv2d(inplanes, out, 1, stride, bias=False), nn.BatchNorm2d(out))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        y = self.relu(self.bn1(self.conv1(x)))
        y = self.relu(self.bn2(self.conv2(y)))
        return self.relu(self.bn3(self.conv3(y)) + identity)


def resnet50(num_classes=1000):
    try:
        import torchvision
        return torchvision.models.resnet50(num_classes=num_classes), "torchvision"
    except ImportError:
        pass
    layers, inplanes = [], 64
    for planes, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
        for i in range(blocks):
            layers.append(Bottleneck(inplanes, planes, stride if i == 0 else 1))
            inplanes = planes * 4
    stem = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1)]
    head = [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(2048, num_classes)]
    return nn.Sequential(*stem, *layers, *head), "built-in definition"


class Block(nn.Module):
    """A pre-norm transformer block, as timm's and torchvision's ViT-B/16 have it."""

    def __init__(self, dim=768, heads=12):
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(dim, eps=1e-6), nn.LayerNorm(dim, eps=1e-6)
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        attention = nn.functional.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, n, d)
        x = x + self.proj(attention)
        return x + self.mlp(self.norm2(x))


class VisionTransformer(nn.Module):
    def __init__(self, num_classes=1000, dim=768, depth=12):
        super().__init__()
        self.patch = nn.Conv2d(3, dim, 16, 16)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos_embed = nn.Parameter(torch.randn(1, 197, dim) * 0.02)
        self.blocks = nn.Sequential(*[Block(dim) for _ in range(depth)])
        self.norm, self.head = nn.LayerNorm(dim, eps=1e-6), nn.Linear(dim, num_classes)

    def forward(self, x):
        x = self.patch(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1) + self.pos_embed
        return self.head(self.norm(self.blocks(x))[:, 0])


def vit_b16(num_classes=1000):
    try:
        import torchvision
        return torchvision.models.vit_b_16(num_classes=num_classes), "torchvision"
    except ImportError:
        return VisionTransformer(num_classes), "built-in definition"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=["resnet50", "vit_b16"], default="resnet50")
    parser.add_argument("--precision", choices=["bf16", "fp16"], required=True)
    parser.add_argument("--cudnn-benchmark", action="store_true")
    parser.add_argument("--compile", action="store_true")
    parser.add_argument("--batch", type=int, default=0, help="default: 256 for resnet50, 128 for vit_b16")
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    batch = args.batch or (256 if args.model == "resnet50" else 128)
    torch.backends.cudnn.benchmark = args.cudnn_benchmark
    device = torch.device("cuda")
    dtype = torch.bfloat16 if args.precision == "bf16" else torch.float16
    if args.model == "resnet50":
        model, source = resnet50()
        model = model.to(device, memory_format=torch.channels_last)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True, weight_decay=5e-4, foreach=True)
        loss_fn, clip = nn.CrossEntropyLoss(label_smoothing=0.1), 0.0
        images = torch.randn(batch, 3, 224, 224, device=device).to(memory_format=torch.channels_last)
    else:
        model, source = vit_b16()
        model = model.to(device)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05, foreach=True)
        loss_fn, clip = nn.CrossEntropyLoss(), 1.0
        images = torch.randn(batch, 3, 224, 224, device=device)
    forward = torch.compile(model) if args.compile else model
    scaler = torch.amp.GradScaler("cuda", enabled=args.precision == "fp16")
    labels = torch.randint(0, 1000, (batch,), device=device)
    timed_from = args.steps - args.steps // 3
    for step in range(args.steps):
        if step == timed_from:
            torch.cuda.synchronize()
            start = time.perf_counter()
        with torch.autocast("cuda", dtype=dtype):
            loss = loss_fn(forward(images), labels)
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        if clip:
            scaler.unscale_(optimizer)
            nn.utils.clip_grad_norm_(model.parameters(), clip)
        scaler.step(optimizer)
        scaler.update()
    torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    rate = (args.steps - timed_from) * batch / seconds
    suffix = ("_cudnn_benchmark" if args.cudnn_benchmark else "") + ("_compiled" if args.compile else "")
    print(f"  pytorch_{args.precision}_{args.model}_b{batch}{suffix}: "
          f"{rate:,.0f} img/s, {seconds / (args.steps - timed_from) * 1e3:.0f} ms/step ({source})")


if __name__ == "__main__":
    main()
