#!/usr/bin/env bash
# Memory against speed of the strategies: ViT-Small on 2 CPU ranks (Gloo) under ddp, zero1, zero2
# and fsdp, same recipe, same run. Prints per rank the parameters and optimizer state it holds,
# its peak memory (resident set size above what the process held before training started) and the
# step time.
#   scripts/bench_memory.sh [KEY=VALUE ...]   extra overrides for every run (e.g. model.image_size=128);
#                                            CVTRAIN=path runs another build
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh > /dev/null
PYTHON="${CVTRAIN_HOME:-$HOME/.cache/cvtrain}/venv/bin/python"
OUT=${OUT:-runs/bench_memory}
CVTRAIN=${CVTRAIN:-./build/apps/cvtrain}  # another build, to compare versions
STEPS=${STEPS:-12}
rm -rf "$OUT"
# Synthetic device batches: the input pipeline takes no memory or time of its own here.
COMMON=(model.arch=vit_small_patch16 model.num_classes=1000 model.image_size=64 data.format=synthetic data.train= data.val=
  data.max_samples=100000 train.global_batch=16 train.max_steps="$STEPS" train.log_every=4 optim.name=adamw optim.lr=1e-3
  train.grad_clip=1.0 distributed.nproc_per_node=2 checkpoint.resume=none)

for strategy in ddp zero1 zero2 fsdp; do
  "$CVTRAIN" --recipe recipes/quickstart.yaml "${COMMON[@]}" strategy=$strategy \
    distributed.master_port=$((29600 + RANDOM % 1000)) output="$OUT/$strategy" "$@" > "$OUT.$strategy.log" 2>&1 ||
    { cat "$OUT.$strategy.log"; exit 1; }
done

"$PYTHON" - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
print("ViT-Small (22.1 M parameters), AdamW, 2 CPU ranks (Gloo), 8 images of 64x64 per rank; "
      "step time after the first 4 steps\n")
print(f"{'strategy':>8} {'step s':>7} {'params MB':>10} {'optimizer MB':>13} {'peak RSS above start MB (rank 0, rank 1)':>42}")
rows = {}
for strategy in ("ddp", "zero1", "zero2", "fsdp"):
    records = list(map(json.loads, open(f"{out}/{strategy}/metrics.jsonl")))
    steps = [r["step_s"] for r in records if r["kind"] == "train"][1:]
    epoch = [r for r in records if r["kind"] == "epoch"][-1]
    step = sum(steps) / len(steps)
    rows[strategy] = (step, epoch)
    peaks = ", ".join(f"{float(v):,.0f}" for v in epoch["peak_memory_mb_per_rank"].split())
    print(f"{strategy:>8} {step:>7.3f} {epoch['param_mb']:>10.1f} {epoch['optimizer_state_mb']:>13.1f} {peaks:>42}")
ddp_step, ddp = rows["ddp"]
print()
for strategy in ("zero1", "zero2", "fsdp"):
    step, e = rows[strategy]
    print(f"{strategy} vs ddp: parameters {e['param_mb'] / ddp['param_mb']:.2f}x, optimizer state "
          f"{e['optimizer_state_mb'] / ddp['optimizer_state_mb']:.2f}x, peak {e['peak_memory_mb'] / ddp['peak_memory_mb']:.2f}x, "
          f"step time {step / ddp_step:.2f}x")
PY
