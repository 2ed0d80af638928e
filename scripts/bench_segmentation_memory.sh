#!/usr/bin/env bash
# High-resolution segmentation, memory against speed: DeepLabV3-R50 on 512x1024 crops
# (recipes/deeplabv3_r50_cityscapes.yaml) and SegFormer-B2 on 1024x1024 crops
# (recipes/segformer_b0_ade20k.yaml with model.arch=segformer_b2), each on synthetic crops and masks
# (data.format: synthetic: made once on the device, no decoding) as fp32, with activation
# recomputation (model.grad_checkpointing), in bf16 (on a GPU), and under fsdp on 2 ranks. Prints per run the
# step time, images/s and peak memory (on a CPU: resident set size above what the process held
# before training; on a GPU: the allocator's peak), and each against fp32.
#   scripts/bench_segmentation_memory.sh [KEY=VALUE ...]   extra overrides for every run
#   STEPS=2 (the first is warm-up, not timed; 1: memory only, the step time includes the warm-up)  BATCH=crops per rank (default 2 for DeepLabV3, whose
#   ASPP pooling branch's BatchNorm sees one value per channel at 1, as mmseg's 2 per GPU; 1 for SegFormer)  DEVICE=cpu|cuda
#   MODELS="deeplabv3_r50 segformer_b2"  CONFIGS="fp32 recompute bf16 fsdp"  CVTRAIN=path (another build)
set -euo pipefail
cd "$(dirname "$0")/.."
[ -n "${CVTRAIN:-}" ] || bash scripts/setup.sh > /dev/null
PYTHON="${CVTRAIN_HOME:-$HOME/.cache/cvtrain}/venv/bin/python"
[ -x "$PYTHON" ] || PYTHON=python3
CVTRAIN=${CVTRAIN:-./build/apps/cvtrain}
OUT=${OUT:-runs/bench_segmentation_memory}
STEPS=${STEPS:-2}
DEVICE=${DEVICE:-cpu}
MODELS=${MODELS:-deeplabv3_r50 segformer_b2}
# bf16 on a GPU only by default: a CPU without bf16 matrix units runs it ~20x slower than fp32.
DEFAULT_CONFIGS="fp32 recompute fsdp"
[ "$DEVICE" = cuda ] && DEFAULT_CONFIGS="fp32 recompute bf16 fsdp"
CONFIGS=${CONFIGS:-$DEFAULT_CONFIGS}
rm -rf "$OUT"
mkdir -p "$OUT"

model_args() {
  case $1 in
    deeplabv3_r50) echo "--recipe recipes/deeplabv3_r50_cityscapes.yaml" ;;
    segformer_b2) echo "--recipe recipes/segformer_b0_ade20k.yaml model.arch=segformer_b2 augment.crop_size=[1024,1024] model.image_size=1024" ;;
  esac
}

config_args() {
  case $1 in
    fp32) echo "precision=fp32" ;;
    recompute) echo "precision=fp32 model.grad_checkpointing=true" ;;
    bf16) echo "precision=bf16" ;;
    fsdp) echo "precision=fp32 optim.lr_mult=null strategy=fsdp distributed.nproc_per_node=2 distributed.master_port=$((29600 + RANDOM % 1000))" ;;
  esac
}

for model in $MODELS; do
  for config in $CONFIGS; do
    ranks=1
    [ "$config" = fsdp ] && ranks=2
    per_rank=${BATCH:-$([ "$model" = deeplabv3_r50 ] && echo 2 || echo 1)}
    batch=$((per_rank * ranks))
    # shellcheck disable=SC2046
    "$CVTRAIN" $(model_args "$model") $(config_args "$config") data.format=synthetic data.train= data.val= \
      data.max_samples=$((STEPS * batch)) train.epochs=1 train.max_steps="$STEPS" train.global_batch=$batch train.log_every=1 \
      checkpoint.every_steps=0 checkpoint.resume=none device="$DEVICE" output="$OUT/${model}_$config" "$@" \
      > "$OUT/${model}_$config.log" 2>&1 || { tail -20 "$OUT/${model}_$config.log"; exit 1; }
  done
done

"$PYTHON" - "$OUT" "$DEVICE" "$MODELS" "$CONFIGS" <<'PY'
import json, os, re, sys
out, device, models, configs = sys.argv[1], sys.argv[2], sys.argv[3].split(), sys.argv[4].split()
crops = {"deeplabv3_r50": "DeepLabV3-R50, 512x1024", "segformer_b2": "SegFormer-B2, 1024x1024"}
memory = "peak resident set above the start" if device == "cpu" else "peak allocated"
print(f"on {device}; step time after the first step; {memory}, MB per rank\n")
for model in models:
    plan = json.load(open(os.path.join(out, f"{model}_{configs[0]}", "provenance.json")))["plan"]["batch"]
    per_rank = re.search(r"micro ([0-9]+)", plan).group(1)
    print(f"{crops[model]}, {per_rank} crop(s) per rank")
    print(f"{'':>10} {'step s':>8} {'img/s':>7} {'peak MB':>16} {'peak vs fp32':>13} {'step vs fp32':>13}")
    base = None
    for config in configs:
        path = os.path.join(out, f"{model}_{config}", "metrics.jsonl")
        records = list(map(json.loads, open(path)))
        steps = [r for r in records if r["kind"] == "train"]
        steps = steps[1:] or steps  # STEPS=1 (memory only): the one step, warm-up included
        epoch = [r for r in records if r["kind"] == "epoch"][-1]
        step = sum(r["step_s"] for r in steps) / len(steps)
        ips = sum(r["images_per_s"] for r in steps) / len(steps)
        peaks = [float(v) for v in str(epoch.get("peak_memory_mb_per_rank", epoch["peak_memory_mb"])).split()]
        peak = max(peaks)
        base = base or (step, peak)
        shown = ", ".join(f"{p:,.0f}" for p in peaks)
        print(f"{config:>10} {step:>8.2f} {ips:>7.3f} {shown:>16} {peak / base[1]:>12.2f}x {step / base[0]:>12.2f}x")
    print()
PY
