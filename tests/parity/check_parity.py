#!/usr/bin/env python3
"""Parity of cvtrain's models with the Python reference implementations.

torchvision's resnet50, deeplabv3_resnet50 and fcn_resnet50 (with the auxiliary head, at 128
pixels, 21 classes), transformers' SegformerForSemanticSegmentation with nvidia/mit-b0's
configuration (its logits brought from a quarter to the input's size, bilinear, as its loss does)
and timm's vit_base_patch16_224 / convnext_tiny / swin_tiny_patch4_window7_224 get weights that look
trained (non-zero biases, BatchNorm statistics, layer scales), which are saved as safetensors with
the reference's own key names (for SegFormer those of the published checkpoints, which
transformers 5 renames as it loads them: the reference is built from that file by
from_pretrained, which must find every tensor); cvtrain's model_probe loads that file strictly, runs the same images
in eval mode and then forward + backward in training mode. Logits, every parameter gradient and
the BatchNorm buffers after the step must match in fp32 on the CPU (buffers a state_dict leaves out, such
as Swin's relative-position index and window mask, are not weights and are not compared). Dropout is off on both sides
(its draws cannot match across two programs); a segmentation model's loss adds its auxiliary
head's logits, weighed as the main ones.

With --image-sizes, a ViT's or Swin's 224-pixel weights are loaded at each other size instead: timm's own
way (create_model(..., img_size=S) with the file, its checkpoint filter resampling pos_embed)
against cvtrain's model.pretrained at model.image_size S, so the resampled position embedding is
compared through the logits and gradients it gives; a Swin's maps are padded to whole windows at
each stage and its shifted windows masked on the padded map.

    check_parity.py --probe build/tests/model_probe --arch resnet50
    check_parity.py --probe ... --exported model.safetensors --arch convnext_tiny --num-classes 10
    check_parity.py --probe ... --arch vit_base_patch16_224 --image-sizes 160 288
    check_parity.py --probe ... --arch resnet50 --image-size 64   (any size: the suite's is small)
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

import torch
from safetensors.torch import load_file, save_file

# Reference name -> cvtrain's model.arch.
CVTRAIN_ARCH = {"resnet50": "resnet50", "vit_base_patch16_224": "vit_base_patch16", "vit_small_patch16_224": "vit_small_patch16",
                "convnext_tiny": "convnext_tiny",
                "deeplabv3_resnet50": "deeplabv3_resnet50", "fcn_resnet50": "fcn_resnet50", "segformer_b0": "segformer_b0",
                "swin_tiny_patch4_window7_224": "swin_tiny_patch4_window7"}
SEGMENTATION = {"deeplabv3_resnet50", "fcn_resnet50", "segformer_b0"}
# transformers 5's module names -> the published checkpoints' (nvidia/mit-b0), which transformers 4
# uses as they are and 5 maps back on load (its conversion_mapping.py); a no-op under 4.
HUB_NAMES = [(r"stages\.(\d+)\.patch_embeddings\.", r"encoder.patch_embeddings.\1."),
             (r"stages\.(\d+)\.blocks\.", r"encoder.block.\1."), (r"stages\.(\d+)\.layer_norm\.", r"encoder.layer_norm.\1."),
             (r"attention\.q_proj", "attention.self.query"), (r"attention\.k_proj", "attention.self.key"),
             (r"attention\.v_proj", "attention.self.value"),
             (r"attention\.sequence_reduction\.sequence_reduction", "attention.self.sr"),
             (r"attention\.sequence_reduction\.layer_norm", "attention.self.layer_norm"),
             (r"attention\.o_proj", "attention.output.dense"), (r"mlp\.fc1", "mlp.dense1"), (r"mlp\.fc2", "mlp.dense2"),
             (r"layernorm_before", "layer_norm_1"), (r"layernorm_after", "layer_norm_2"),
             (r"decode_head\.linear_projections", "decode_head.linear_c")]
LOGITS_TOLERANCE = 1e-4   # absolute, on logits of order 1
GRAD_TOLERANCE = 1e-4     # relative to the largest gradient of each tensor
# Some gradients are zero in exact arithmetic: a key bias (softmax does not change when every key
# moves by the same amount), a bias followed by a linear map and training-mode BatchNorm (the mean
# subtraction removes it). Both sides then hold rounding noise of their sums, a few fp32 epsilons
# (1.2e-7) of the terms, which are at most the model's largest gradient; relative to itself that noise
# differs by 100 %. Such a tensor (the reference's under ZERO_GRADIENT of the model's largest
# gradient) must be as near zero in cvtrain, which still fails a real gradient where none should be.
ZERO_GRADIENT = 1e-6


def hub_name(name, model):
    """A transformers model's tensor name as the published checkpoints spell it; others' as they are."""
    if not type(model).__module__.startswith("transformers"):
        return name
    for pattern, replacement in HUB_NAMES:
        name = re.sub(pattern, replacement, name)
    return name


def segformer_from_file(weights_file, num_classes):
    """transformers' own loading of a file with the published names: from_pretrained on a folder
    holding it and nvidia/mit-b0's configuration; every tensor must be found."""
    import transformers
    folder = tempfile.mkdtemp()
    transformers.SegformerConfig(num_labels=num_classes, drop_path_rate=0.0).save_pretrained(folder)
    os.symlink(os.path.abspath(weights_file), os.path.join(folder, "model.safetensors"))
    model, info = transformers.SegformerForSemanticSegmentation.from_pretrained(folder, output_loading_info=True)
    problems = {k: v for k, v in info.items() if v and k in ("missing_keys", "unexpected_keys", "mismatched_keys")}
    if problems:
        sys.exit(f"transformers did not load every tensor of {weights_file}: {problems}")
    return model


def reference_model(arch, num_classes, weights_file=None, image_size=None):
    """The reference model; with weights_file, loaded the way each library documents it (timm's at
    `image_size`, when given)."""
    if arch == "segformer_b0":
        import transformers
        model = (segformer_from_file(weights_file, num_classes) if weights_file else
                 transformers.SegformerForSemanticSegmentation(transformers.SegformerConfig(num_labels=num_classes, drop_path_rate=0.0)))
        for module in model.modules():
            if isinstance(module, torch.nn.Dropout):
                module.p = 0.0
        return model
    if arch == "resnet50" or arch in SEGMENTATION:
        import torchvision
        if arch in SEGMENTATION:
            build = getattr(torchvision.models.segmentation, arch)
            model = build(weights=None, weights_backbone=None, num_classes=num_classes, aux_loss=True)
        else:
            model = torchvision.models.resnet50(num_classes=num_classes)
        if weights_file:
            model.load_state_dict(load_file(weights_file))
        for module in model.modules():
            if isinstance(module, torch.nn.Dropout):
                module.p = 0.0
        return model
    import timm
    # Stochastic depth off, as cvtrain's probe builds it (Swin's default drop_path_rate is 0.1).
    size = dict(img_size=image_size, drop_path_rate=0.0) if image_size else dict(drop_path_rate=0.0)
    if weights_file:
        return timm.create_model(arch, pretrained=True, num_classes=num_classes,
                                 pretrained_cfg_overlay=dict(file=weights_file, num_classes=num_classes), **size)
    return timm.create_model(arch, num_classes=num_classes, **size)


def make_trained_looking(model, seed):
    """Freshly initialised models have zero biases and unit norms; trained ones do not, and parity
    must cover the terms those zeros would hide."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("gamma"):  # ConvNeXt layer scale (1e-6 at init would mute every block)
                p.copy_(torch.rand(p.shape, generator=generator) * 0.5 + 0.1)
            elif name.endswith("bias") or name in ("cls_token", "pos_embed"):
                p.copy_(torch.randn(p.shape, generator=generator) * 0.02)
            elif p.dim() == 1:  # normalisation weights
                p.copy_(1 + torch.randn(p.shape, generator=generator) * 0.1)
        for name, b in model.named_buffers():
            if name.endswith("running_mean"):
                b.copy_(torch.randn(b.shape, generator=generator) * 0.1)
            elif name.endswith("running_var"):
                b.copy_(torch.rand(b.shape, generator=generator) + 0.5)
        # Keep the logits of order 1 so an absolute tolerance means something.
        if hasattr(model, "aux_classifier"):
            heads = [model.classifier[-1], model.aux_classifier[-1]]
        elif hasattr(model, "decode_head"):
            heads = [model.decode_head.classifier]
        else:
            heads = [model.fc if hasattr(model, "fc") else model.head if hasattr(model.head, "weight") else model.head.fc]
        for head in heads:
            head.weight.mul_(0.1)


def outputs_of(model, images):
    out = model(images)
    if hasattr(out, "logits"):  # transformers: logits at a quarter of the input's size
        return torch.nn.functional.interpolate(out.logits, size=images.shape[-2:], mode="bilinear", align_corners=False)
    return out


def run_reference(model, images, loss_weights):
    model.eval()
    with torch.no_grad():
        eval_out = outputs_of(model, images)
    model.train()
    train_out = outputs_of(model, images)
    if isinstance(train_out, dict):  # torchvision's segmentation models: "out", and "aux" from the auxiliary head
        (train_out["out"] * loss_weights + train_out["aux"] * loss_weights).sum().backward()
        out = {"eval_logits": eval_out["out"], "train_logits": train_out["out"].detach(), "train_aux_logits": train_out["aux"].detach()}
    else:
        (train_out * loss_weights).sum().backward()
        out = {"eval_logits": eval_out, "train_logits": train_out.detach()}
    out.update({"grad/" + hub_name(n, model): p.grad for n, p in model.named_parameters()})
    saved = set(model.state_dict())
    out.update({"buffer/" + hub_name(n, model): b for n, b in model.named_buffers() if n in saved})
    return out


def run_probe(probe, arch, weights, inputs, folder, with_checkpointing=False):
    """cvtrain's outputs; with_checkpointing: also those of the same model, weights and buffers with
    activation checkpointing (one probe builds and loads the model for both), as a pair."""
    output, checkpointed = os.path.join(folder, "probe_out.safetensors"), os.path.join(folder, "probe_checkpointed.safetensors")
    extra = ["--checkpointed-out", checkpointed] if with_checkpointing else []
    result = subprocess.run([probe, CVTRAIN_ARCH[arch], weights, inputs, output, *extra], capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"model_probe failed ({result.returncode}): {result.stderr.strip()}")
    return (load_file(output), load_file(checkpointed)) if with_checkpointing else load_file(output)


def compare(reference, cvtrain, label):
    """Prints the largest differences; returns the names that are out of tolerance."""
    failures = []
    missing = sorted(set(reference) ^ set(cvtrain))
    if missing:
        failures.append(f"tensors on one side only: {missing[:8]}")
    worst_grad, worst_grad_name = 0.0, ""
    gradients = [reference[n].abs().max().item() for n in reference if n.startswith("grad/") and reference[n].numel()]
    zero_level = ZERO_GRADIENT * max(gradients, default=0.0)
    zeros = 0
    for name in sorted(set(reference) & set(cvtrain)):
        ref, got = reference[name].double(), cvtrain[name].double()
        if ref.shape != got.shape:
            failures.append(f"{name}: shape {tuple(got.shape)} vs reference {tuple(ref.shape)}")
            continue
        diff = (ref - got).abs().max().item() if ref.numel() else 0.0
        if name.endswith("logits"):
            print(f"{label} {name}: max |difference| {diff:.2e} (largest logit {ref.abs().max().item():.2f})")
            if diff > LOGITS_TOLERANCE:
                failures.append(f"{name}: max difference {diff:.3e} > {LOGITS_TOLERANCE}")
        elif name.startswith("grad/") and ref.numel() and ref.abs().max().item() <= zero_level:
            zeros += 1
            if got.abs().max().item() > zero_level:
                failures.append(f"{name}: {got.abs().max().item():.3e} where the reference is zero up to rounding "
                                f"(under {zero_level:.1e})")
        else:
            relative = diff / max(ref.abs().max().item(), 1e-12)
            if name.startswith("grad/") and relative > worst_grad:
                worst_grad, worst_grad_name = relative, name
            if relative > GRAD_TOLERANCE:
                failures.append(f"{name}: max relative difference {relative:.3e} > {GRAD_TOLERANCE}")
    count = sum(1 for n in reference if n.startswith("grad/"))
    print(f"{label} gradients: {count} tensors, largest relative difference {worst_grad:.2e} ({worst_grad_name})"
          + (f"; {zeros} zero up to rounding on both sides" if zeros else ""))
    return failures


def inputs_for(folder, num_classes, seed, size=224, dense=False):
    generator = torch.Generator().manual_seed(seed)
    images = torch.randn(2, 3, size, size, generator=generator)
    loss_weights = torch.randn(2, num_classes, *((size, size) if dense else ()), generator=generator)
    path = os.path.join(folder, "inputs.safetensors")
    save_file({"images": images, "loss_weights": loss_weights}, path)
    return images, loss_weights, path


def classes_of(args):
    return 21 if args.arch in SEGMENTATION else 1000  # Pascal VOC's, ImageNet's


def saved_reference(args, folder):
    """A reference model with trained-looking weights, and the safetensors file they are saved in."""
    torch.manual_seed(args.seed)
    model = reference_model(args.arch, classes_of(args))
    make_trained_looking(model, args.seed)
    weights = os.path.join(folder, "weights.safetensors")
    save_file({hub_name(k, model): v.contiguous() for k, v in model.state_dict().items()}, weights)
    if args.arch == "segformer_b0":  # the reference as transformers loads the published names
        model = reference_model(args.arch, classes_of(args), weights)
    return model, weights


def image_size(args):
    return args.image_size or (128 if args.arch in SEGMENTATION else 224)


def check_fresh_weights(args, folder):
    """Reference weights into cvtrain: same logits and gradients, also with grad checkpointing."""
    model, weights = saved_reference(args, folder)
    images, loss_weights, inputs = inputs_for(folder, classes_of(args), args.seed, image_size(args), args.arch in SEGMENTATION)
    reference = run_reference(model, images, loss_weights)
    plain, checkpointed = run_probe(args.probe, args.arch, weights, inputs, folder, with_checkpointing=True)
    failures = compare(reference, plain, args.arch)
    failures += compare(reference, checkpointed, args.arch + " (grad checkpointing)")
    return failures


def check_resized(args, folder):
    """224-pixel weights at other sizes: timm's resampled position embedding against cvtrain's."""
    _, weights = saved_reference(args, folder)
    failures = []
    for size in args.image_sizes:
        reference_at_size = reference_model(args.arch, 1000, weights, size)
        images, loss_weights, inputs = inputs_for(folder, 1000, args.seed, size)
        reference = run_reference(reference_at_size, images, loss_weights)
        failures += compare(reference, run_probe(args.probe, args.arch, weights, inputs, folder), f"{args.arch} at {size} px")
    return failures


def check_exported(args, folder):
    """A file `cvtrain export` wrote loads into the reference as its docs say and computes what
    cvtrain computes."""
    model = reference_model(args.arch, args.num_classes, args.exported)
    images, loss_weights, inputs = inputs_for(folder, args.num_classes, args.seed, image_size(args), args.arch in SEGMENTATION)
    reference = run_reference(model, images, loss_weights)
    return compare(reference, run_probe(args.probe, args.arch, args.exported, inputs, folder), args.arch + " (exported)")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--probe", required=True, help="the model_probe test program")
    parser.add_argument("--arch", required=True, choices=sorted(CVTRAIN_ARCH))
    parser.add_argument("--exported", help="check a file written by `cvtrain export` instead of fresh weights")
    parser.add_argument("--num-classes", type=int, default=1000, help="class count of the exported model")
    parser.add_argument("--image-sizes", type=int, nargs="+", help="ViT or Swin: load the 224-pixel weights at these sizes")
    parser.add_argument("--image-size", type=int, help="of the images for fresh or exported weights (default 224, segmentation "
                                                       "128); not for ViT and Swin, whose size is part of their weights")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.image_size and args.arch.startswith(("vit_", "swin_")):
        parser.error("--image-size: a ViT's or Swin's image size is part of its weights; --image-sizes resamples them")
    if not os.environ.get("OMP_NUM_THREADS"):  # CTest gives a case that holds one processor one thread
        torch.set_num_threads(max(1, os.cpu_count() or 1))
    with tempfile.TemporaryDirectory() as folder:
        if args.exported:
            failures = check_exported(args, folder)
        elif args.image_sizes:
            failures = check_resized(args, folder)
        else:
            failures = check_fresh_weights(args, folder)
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures[:20]))
        return 1
    print("parity: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
