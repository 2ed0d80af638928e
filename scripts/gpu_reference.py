#!/usr/bin/env python3
"""PyTorch's own eager training loop with gpu_check.sh's synthetic ResNet-50 settings, for a side-by-side rate.

    python3 scripts/gpu_reference.py --precision bf16 [--cudnn-benchmark] [--batch 256] [--steps 30]

Batch 256 of random 224x224 images on the device, 1000 classes, channels_last, SGD (lr 0.1,
Nesterov momentum 0.9, weight decay 5e-4), label smoothing 0.1, autocast (fp16 through GradScaler), the
multi-tensor optimizer. Prints images/s over the last third of the steps. The model is
torchvision's resnet50 when torchvision is installed, else the same architecture defined below.
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--precision", choices=["bf16", "fp16"], required=True)
    parser.add_argument("--cudnn-benchmark", action="store_true")
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    torch.backends.cudnn.benchmark = args.cudnn_benchmark
    device = torch.device("cuda")
    dtype = torch.bfloat16 if args.precision == "bf16" else torch.float16
    model, source = resnet50()
    model = model.to(device, memory_format=torch.channels_last)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True, weight_decay=5e-4,
                                foreach=True)
    scaler = torch.amp.GradScaler("cuda", enabled=args.precision == "fp16")
    loss_fn = nn.CrossEntropyLoss(label_smoothing=0.1)
    images = torch.randn(args.batch, 3, 224, 224, device=device).to(memory_format=torch.channels_last)
    labels = torch.randint(0, 1000, (args.batch,), device=device)
    timed_from = args.steps - args.steps // 3
    for step in range(args.steps):
        if step == timed_from:
            torch.cuda.synchronize()
            start = time.perf_counter()
        with torch.autocast("cuda", dtype=dtype):
            loss = loss_fn(model(images), labels)
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    rate = (args.steps - timed_from) * args.batch / seconds
    print(f"  pytorch_{args.precision}_resnet50_b{args.batch}{'_cudnn_benchmark' if args.cudnn_benchmark else ''}: "
          f"{rate:,.0f} img/s, {seconds / (args.steps - timed_from) * 1e3:.0f} ms/step ({source})")


if __name__ == "__main__":
    main()
