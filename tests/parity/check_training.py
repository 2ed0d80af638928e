#!/usr/bin/env python3
"""cvtrain's training loop against a plain PyTorch loop, step by step.

Runs cvtrain on Fashion-MNIST with the given overrides, then scripts/reference_train.py on the
recipe cvtrain saved: same seed (so the same initial weights and dropout masks from torch's
generator), same sample order and augmentation, torch.optim's SGD/AdamW, clip_grad_norm_,
F.cross_entropy with label smoothing, torch.autocast and GradScaler for bf16/fp16. With
`strategy=ddp|zero1|zero2|fsdp distributed.nproc_per_node=N` both sides run N CPU ranks on Gloo,
the reference under torch's DistributedDataParallel. Every step's loss, learning rate and loss
scale, every epoch's accuracy and the final weights and BatchNorm buffers must agree: they do bit
for bit.

    check_training.py --cvtrain build/apps/cvtrain --recipe recipes/quickstart.yaml KEY=VALUE ...
"""
import argparse
import json
import os
import random
import socket
import subprocess
import sys
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing
import yaml
from safetensors.torch import load_file

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import reference_train  # noqa: E402

# The runs are expected to agree bit for bit. Early in training a one-ulp difference grows about a
# hundredfold per step, so after a few dozen steps anything but equal kernels on equal inputs in
# the same order is far outside these; they only absorb the 9 digits metrics.jsonl prints.
LOSS_TOLERANCE = 1e-7    # absolute, on losses of order 1
WEIGHT_TOLERANCE = 1e-6  # relative to the largest value of each tensor
LR_TOLERANCE = 1e-8      # relative


def free_port():
    """A port for a rendezvous: tests run side by side, so never the default 29500. Random, free when
    chosen, and below Linux's ephemeral range (32768-60999), where outgoing connections take their
    local ports and could take this one before the server listens (as tests/run_shell.h does)."""
    while True:
        port = random.randrange(20000, 32000)
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
                return port
            except OSError:
                continue


def run_cvtrain(binary, recipe, overrides, out):
    command = [binary, "--recipe", recipe, f"output={out}", "train.log_every=1", "checkpoint.resume=none",
               f"distributed.master_port={free_port()}", *overrides]
    # One thread on both sides: torch's kernels then reduce in the same order, and the runs agree bit
    # for bit (a one-ulp difference grows a hundredfold per step this early in training).
    done = subprocess.run(command, capture_output=True, text=True, env=dict(os.environ, OMP_NUM_THREADS="1"))
    if done.returncode != 0:
        sys.exit(f"cvtrain failed ({done.returncode}):\n{done.stdout}{done.stderr}")
    records = [json.loads(line) for line in open(os.path.join(out, "metrics.jsonl"))]
    steps = [r for r in records if r["kind"] == "train"]
    epochs = [r for r in records if r["kind"] == "epoch"]
    checkpoints = sorted(os.listdir(os.path.join(out, "checkpoints")))
    weights = load_file(os.path.join(out, "checkpoints", checkpoints[-1], "model.safetensors"))
    return steps, epochs, weights


def reference_rank(rank, size, port, recipe, result_path):
    """One rank of the reference under torch.distributed (Gloo); rank 0 saves what it saw."""
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=size)
    steps, epochs = [], []
    model = reference_train.train_reference(recipe, on_step=lambda *s: steps.append(s), on_epoch=epochs.append)
    if rank == 0:
        torch.save({"steps": steps, "epochs": epochs, "state": model.state_dict()}, result_path)
    dist.destroy_process_group()


def run_reference(recipe, size, scratch):
    """The reference's steps, epochs and model: in this process, or over `size` spawned ranks."""
    if size == 1:
        steps, epochs = [], []
        model = reference_train.train_reference(recipe, on_step=lambda *s: steps.append(s), on_epoch=epochs.append)
        return steps, epochs, model.state_dict()
    result_path = os.path.join(scratch, "reference.pt")
    # The reference is the oracle, not what is tested: a rank of it that dies (once, in a fresh-machine
    # run under load, Gloo's rendezvous aborted rank 1 before training) is started again on a new port.
    for attempt in (1, 2):
        try:
            # Forked, not spawned: the ranks start from this interpreter's imports (a spawned one spends
            # seconds importing torch again), and nothing here has started a thread pool yet.
            torch.multiprocessing.start_processes(reference_rank, args=(size, free_port(), recipe, result_path), nprocs=size,
                                                  start_method="fork")
            break
        except torch.multiprocessing.ProcessExitedException as died:
            if attempt == 2:
                raise
            print(f"the reference's ranks died ({died}); starting them again on another port", flush=True)
    result = torch.load(result_path)
    return result["steps"], result["epochs"], result["state"]


def world_size(recipe):
    """The CPU job's rank count (nproc_per_node 'auto' is one rank on a machine without GPUs)."""
    if recipe["strategy"] == "single":
        return 1
    per_node = recipe["distributed"]["nproc_per_node"]
    return (1 if per_node == "auto" else int(per_node)) * int(recipe["distributed"]["nnodes"])


def compare_steps(cv_steps, ref_steps, failures):
    """Every step's loss, learning rate and (fp16) loss scale; returns the largest differences."""
    if len(cv_steps) != len(ref_steps):
        failures.append(f"cvtrain logged {len(cv_steps)} steps, the reference took {len(ref_steps)}")
    loss_diff = max(abs(c["loss"] - r[1]) for c, r in zip(cv_steps, ref_steps))
    lr_diff = max(abs(c["lr"] - r[2]) / max(r[2], 1e-12) for c, r in zip(cv_steps, ref_steps))
    for c, (step, loss, lr, scale) in zip(cv_steps, ref_steps):
        if (c["step"] != step or abs(c["loss"] - loss) > LOSS_TOLERANCE or abs(c["lr"] - lr) > LR_TOLERANCE * max(lr, 1e-12)
                or c.get("loss_scale") != scale):
            failures.append(f"step {step}: cvtrain loss {c['loss']:.6f} lr {c['lr']:.6g} loss scale {c.get('loss_scale')}, "
                            f"reference {loss:.6f} {lr:.6g} {scale}")
            break
    return loss_diff, lr_diff


def overflows(ref_steps):
    """fp16: how often GradScaler backed off (each time a step was skipped); None without loss scaling."""
    scales = [r[3] for r in ref_steps]
    if scales[0] is None:
        return None
    return sum(1 for before, after in zip([2.0**16] + scales, scales) if after < before)


def describe_loss_scale(ref_steps):
    """fp16: the overflows skipped and the last scale."""
    if overflows(ref_steps) is None:
        return ""
    return f"; loss scale equal every step ({overflows(ref_steps)} overflow(s) skipped, last {ref_steps[-1][3]:g})"


def compare_weights(cv_weights, ref_state, failures):
    """Final parameters and buffers by name; returns the worst tensor and its relative difference."""
    reference = {k: v.detach() for k, v in ref_state.items()}
    worst_name, worst = "", 0.0
    for name, value in cv_weights.items():
        ref = reference.pop(name.removeprefix("layers."), None)
        if ref is None:
            failures.append(f"cvtrain has {name}, the reference has not")
            continue
        scale = max(ref.double().abs().max().item(), 1e-12)
        diff = (value.double() - ref.double()).abs().max().item() / scale
        if diff > worst:
            worst_name, worst = name, diff
    if reference:
        failures.append(f"the reference has {sorted(reference)} that cvtrain did not save")
    if worst > WEIGHT_TOLERANCE:
        failures.append(f"final {worst_name} differs by {worst:.3g} relative")
    return worst_name, worst


def compare(cv_steps, cv_epochs, cv_weights, ref_steps, ref_epochs, ref_state, val_samples):
    failures = []
    loss_diff, lr_diff = compare_steps(cv_steps, ref_steps, failures)
    for c, r in zip(cv_epochs, ref_epochs):
        # Equal weights classify equally: the counts must match exactly (ties broken as topk does).
        if abs(c["top1"] - r["top1"]) * val_samples > 0.5:
            failures.append(f"epoch {r['epoch']}: cvtrain top-1 {c['top1']:.4f}, reference {r['top1']:.4f}")
    worst_name, worst = compare_weights(cv_weights, ref_state, failures)
    print(f"{len(ref_steps)} steps: largest loss difference {loss_diff:.3g} (as logged, 9 digits), lr {lr_diff:.3g} relative"
          f"{describe_loss_scale(ref_steps)}; "
          f"final weights and buffers: {'bit-identical' if worst == 0 else f'largest relative difference {worst:.3g} ({worst_name})'}; "
          f"top-1 per epoch cvtrain {[round(c['top1'], 4) for c in cv_epochs]}, "
          f"reference {[round(r['top1'], 4) for r in ref_epochs]}")
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cvtrain", required=True)
    parser.add_argument("--recipe", required=True)
    parser.add_argument("--expect-overflow", action="store_true", help="fp16: at least one step must overflow and be skipped")
    parser.add_argument("overrides", nargs="*", help="KEY=VALUE, given to cvtrain; the reference reads the saved recipe")
    args = parser.parse_args()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory(prefix="cvtrain_training_parity_") as out:
        cv_steps, cv_epochs, cv_weights = run_cvtrain(args.cvtrain, args.recipe, args.overrides, out)
        recipe = yaml.safe_load(open(os.path.join(out, "recipe.yaml")))
        ref_steps, ref_epochs, ref_state = run_reference(recipe, world_size(recipe), out)
    val_samples = recipe["data"]["max_val_samples"] or 10000
    failures = compare(cv_steps, cv_epochs, cv_weights, ref_steps, ref_epochs, ref_state, val_samples)
    if args.expect_overflow and not overflows(ref_steps):
        failures.append("no step overflowed: the skip path went untested (give the run more steps or a larger lr)")
    for failure in failures:
        print("MISMATCH:", failure)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
