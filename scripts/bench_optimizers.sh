#!/usr/bin/env bash
# optim.implementation on this machine: the optimizer phase of the step (the step breakdown's
# "optimizer" seconds per step, perf_summary.json) with foreach against fused, for SGD + Nesterov on
# ResNet-50 (25.6 M parameters, 161 tensors) and AdamW on ViT-Small, same run, the sides
# alternating; synthetic batches of 2 at 64 pixels, so the optimizer is a large share of the step.
# The GPU's figures come from scripts/gpu_check.sh (its *_fused rows against the foreach ones).
#   scripts/bench_optimizers.sh        ROUNDS=3 STEPS=12 to change the defaults; CVTRAIN=path another build
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh > /dev/null
PYTHON="${CVTRAIN_HOME:-$HOME/.cache/cvtrain}/venv/bin/python"
CVTRAIN=${CVTRAIN:-./build/apps/cvtrain}
OUT=${OUT:-runs/bench_optimizers}
ROUNDS=${ROUNDS:-3}
STEPS=${STEPS:-12}
rm -rf "$OUT" && mkdir -p "$OUT"
COMMON=(model.num_classes=1000 model.image_size=64 data.format=synthetic data.train= data.val= data.max_samples=100000
  train.global_batch=2 train.max_steps="$STEPS" train.log_every=4 optim.weight_decay=0.05 checkpoint.resume=none device=cpu)
declare -A MODEL=([sgd]="model.arch=resnet50 optim.name=sgd optim.lr=0.1 optim.nesterov=true"
                  [adamw]="model.arch=vit_small_patch16 optim.name=adamw optim.lr=1e-3")
for round in $(seq "$ROUNDS"); do
  for optimizer in sgd adamw; do
    for implementation in foreach fused; do
      name="$optimizer.$implementation.$round"
      # shellcheck disable=SC2086
      "$CVTRAIN" --recipe recipes/quickstart.yaml "${COMMON[@]}" ${MODEL[$optimizer]} optim.implementation=$implementation \
        output="$OUT/$name" > "$OUT/$name.log" 2>&1 || { tail -5 "$OUT/$name.log"; exit 1; }
    done
  done
done

"$PYTHON" - "$OUT" "$ROUNDS" <<'PY'
import json, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def optimizer_ms(name):
    return 1e3 * json.load(open(f"{out}/{name}/perf_summary.json"))["breakdown_s"]["optimizer"]
print(f"{'optimizer':<24} {'foreach ms/step':>16} {'fused ms/step':>14} {'fused / foreach':>16}   (best of {rounds})")
for optimizer, label in (("sgd", "SGD Nesterov, ResNet-50"), ("adamw", "AdamW, ViT-Small")):
    foreach = min(optimizer_ms(f"{optimizer}.foreach.{r}") for r in range(1, rounds + 1))
    fused = min(optimizer_ms(f"{optimizer}.fused.{r}") for r in range(1, rounds + 1))
    print(f"{label:<24} {foreach:>16.1f} {fused:>14.1f} {fused / foreach:>15.2f}x")
PY
