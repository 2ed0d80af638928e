#!/usr/bin/env bash
# Every GPU check in one go, for the single-H200 test machine (no package registry, 64 MiB carried).
#   scripts/gpu_check.sh bundle   here: builds cvtrain without OpenCV imgcodecs (which drags GDAL) into
#                                 build-gpu/ and gathers the binary, the few libraries it needs and a
#                                 small dataset into gpu_bundle/ (git-ignored; carry it to the device)
#   scripts/gpu_check.sh data [N] the bundle's data alone (N generated JPEGs, default 384), for a dry run
#   scripts/gpu_check.sh run [SECTION...]
#                                 there: runs the checks (all default sections, or those named) with
#                                 the machine's own torch libraries, and prints what it measured and
#                                 how long each section took
# DRY=1 CVTRAIN=build/apps/cvtrain scripts/gpu_check.sh run
#                                 dry run of every section's cvtrain invocations on the CPU: one case of
#                                 each kind trains, shrunk (2 steps, 32 px, batches of 8, fp32), so the
#                                 script's reading of its output runs on real output; every other case's
#                                 recipe is checked (cvtrain check); rows only a GPU can run are skipped;
#                                 2 bench batches. What CTest runs so that a recipe or key change that
#                                 breaks the GPU check fails the suite. EXTRA adds overrides to every
#                                 training case (DRY's shrinking ones by default); CVTRAIN and BUNDLE
#                                 name the binary and the bundle (default gpu_bundle/bin/cvtrain)
set -euo pipefail
cd "$(dirname "$0")/.."
BUNDLE=${BUNDLE:-gpu_bundle}

bundle() {
  bash scripts/setup.sh > /dev/null
  local torch_lib
  torch_lib=$("${CVTRAIN_HOME:-$HOME/.cache/cvtrain}/venv/bin/python" -c \
    "import os, importlib.util; print(os.path.join(os.path.dirname(importlib.util.find_spec('torch').origin), 'lib'))")
  [ -f build-gpu/build.ninja ] || cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCVTRAIN_WITH_IMGCODECS=OFF \
    -DCVTRAIN_BUILD_TESTS=OFF -DTORCH_CUDA_ARCH_LIST=9.0 > build-gpu.configure.log
  ninja -C build-gpu -j "${CVTRAIN_JOBS:-2}" cvtrain | { grep -v "^\[" || true; }  # a failed build fails the bundle (pipefail)
  rm -rf "$BUNDLE" && mkdir -p "$BUNDLE/bin" "$BUNDLE/lib" "$BUNDLE/data"
  cp build-gpu/apps/cvtrain "$BUNDLE/bin/"
  # nvJPEG (6 MB, from the nvidia-nvjpeg wheel setup.sh installs): cvtrain loads it at run time.
  cp "$torch_lib/../../nvidia/cu13/lib/libnvjpeg.so.13" "$BUNDLE/lib/"
  # Every library the binary needs except torch's own (the device has them) and the C runtime.
  ldd build-gpu/apps/cvtrain | awk '/=> \//{print $3}' | grep -v -e "^$torch_lib" -e '/nvidia/' \
    -e '/lib\(c\|m\|dl\|rt\|pthread\|util\)\.so' -e 'ld-linux' | xargs -r cp -L -t "$BUNDLE/lib/"
  bundle_data 384
  du -sh "$BUNDLE"
}

# The Fashion-MNIST test set, the quickstart recipe every case builds on, and N photo-like JPEGs
# (384: about 17 MB) for the input-pipeline checks.
bundle_data() {
  mkdir -p "$BUNDLE/data"
  cp /usr/share/datasets/fashion-mnist/t10k-*-ubyte.gz "$BUNDLE/data/"
  cp recipes/quickstart.yaml "$BUNDLE/"
  rm -rf "$BUNDLE/images"
  "${CVTRAIN_HOME:-$HOME/.cache/cvtrain}/venv/bin/python" scripts/bench_data/make_images.py "$BUNDLE/images" --count "$1" > /dev/null
}

# A dry run trains the first case of each KIND (train, synthetic, graphs, ...), so that this script's
# reading of metrics.jsonl, logs and traces runs on real output, and checks the recipe of every other
# case (cvtrain check: keys, values, plan): what another row would add on a CPU (one more model,
# precision or strategy trained) the suite's own cases cover, at a fraction of the cost. fp16 never
# trains in a dry run (a CPU takes seconds a step in it). True when the recipe was checked instead.
declare -A DRY_TRAINED=()
checked_instead() {
  [ "${DRY:-0}" = 1 ] || return 1
  local kind=$1 name=$2; shift 2
  local reason="fp16 trains on a GPU only"
  if [[ " $* " != *" precision=fp16 "* ]]; then
    [ -z "${DRY_TRAINED[$kind]:-}" ] && { DRY_TRAINED[$kind]=$name; return 1; }
    reason="trained in a dry run: ${DRY_TRAINED[$kind]}"
  fi
  if "$CVTRAIN" check "$@" > "$RUNS/$name.log" 2>&1; then
    echo "  $name: recipe checked ($reason)"
  else
    echo "  $name: FAILED"; tail -5 "$RUNS/$name.log" | sed 's/^/    /'; FAILURES=$((FAILURES + 1))
  fi
}

# Overrides a dry run adds to a case it trains: fp32, which a CPU without bf16 units runs 20-60x
# faster than bf16 (bf16 autocast on a CPU has cases of its own in the suite).
dry_training() {
  [ "${DRY:-0}" = 1 ] && echo "precision=fp32"
  return 0
}

# One training run; prints the final top-1 and the mean images/s of the epochs.
train_case() {
  local name=$1; shift
  local out="$RUNS/$name"
  local start=$SECONDS
  local args=(--recipe "$BUNDLE/quickstart.yaml" data.train="$DATA" data.val="$DATA" device="$DEVICE" output="$out" "$@" ${EXTRA:-})
  checked_instead train "$name" "${args[@]}" && return 0
  # shellcheck disable=SC2046
  if ! "$CVTRAIN" "${args[@]}" $(dry_training) > "$out.log" 2>&1; then
    echo "  $name: FAILED"; tail -5 "$out.log" | sed 's/^/    /'; FAILURES=$((FAILURES + 1)); return
  fi
  "$PYTHON" - "$name" "$out/metrics.jsonl" "$((SECONDS - start))" <<'PY'
import json, sys
name, path, wall = sys.argv[1], sys.argv[2], sys.argv[3]
epochs = [r for r in map(json.loads, open(path)) if r["kind"] == "epoch"]
ips = sum(r["images_per_s"] for r in epochs) / len(epochs)
top1 = f"top-1 {epochs[-1]['top1']:.4f}" if "top1" in epochs[-1] else "no validation"
print(f"  {name}: {top1} after {len(epochs)} epochs, {ips:,.0f} img/s, data-wait {epochs[-1]['data_wait']:.0%}, {wall} s")
PY
}

# Steps on synthetic device data (no decoding): what the model, precision and strategy cost alone
# (on SYNTHETIC_RECIPE, default the quickstart's).
# Prints the rate of the last logged interval (after warm-up), the peak memory and the epoch's data wait
# (near 0: the batches are already on the device).
synthetic_case() {
  local name=$1; shift
  local out="$RUNS/$name"
  local args=(--recipe "${SYNTHETIC_RECIPE:-$BUNDLE/quickstart.yaml}" data.format=synthetic data.train= data.val= data.max_samples=0 model.num_classes=1000
    model.image_size=224 train.epochs=1 train.max_steps=30 train.log_every=10 device="$DEVICE" output="$out" "$@" ${EXTRA:-})
  checked_instead "synthetic ${SYNTHETIC_RECIPE:-}" "$name" "${args[@]}" && return 0
  # shellcheck disable=SC2046
  if ! "$CVTRAIN" "${args[@]}" $(dry_training) > "$out.log" 2>&1; then
    echo "  $name: FAILED"; tail -5 "$out.log" | sed 's/^/    /'; FAILURES=$((FAILURES + 1)); return
  fi
  "$PYTHON" - "$name" "$out/metrics.jsonl" <<'PY'
import json, sys
name, path = sys.argv[1], sys.argv[2]
records = list(map(json.loads, open(path)))
last = [r for r in records if r["kind"] == "train"][-1]
epoch = [r for r in records if r["kind"] == "epoch"][-1]
memory = f", peak {epoch['peak_memory_mb']:,.0f} MB" if "peak_memory_mb" in epoch else ""
print(f"  {name}: {last['images_per_s']:,.0f} img/s, {last['step_s'] * 1e3:.0f} ms/step, "
      f"{last['train_tflops']:.0f} TFLOP/s{memory}, data-wait {epoch['data_wait']:.0%}")
PY
}

# ResNet-50 bf16 with a Kineto window over steps 21-25, which are also one logging interval: the
# breakdown's time per step (events on the compute stream) against the trace's GPU span per step,
# and its compute phases against the kernels' busy time. Then nsys's capture window when nsys is
# there, and preflight on this GPU.
profile_case() {
  local out="$RUNS/profile_resnet50"
  if ! "$CVTRAIN" --recipe "$BUNDLE/quickstart.yaml" data.format=synthetic data.train= data.val= data.max_samples=0 \
      model.num_classes=1000 model.image_size=224 model.arch=resnet50 precision=bf16 train.global_batch=256 optim.lr=0.1 \
      train.epochs=1 train.max_steps=30 train.log_every=5 device="$DEVICE" 'profile={steps: [21, 25], ranks: [0]}' \
      output="$out" ${EXTRA:-} $(dry_training) > "$out.log" 2>&1; then
    echo "  profile_resnet50: FAILED"; tail -5 "$out.log" | sed 's/^/    /'; FAILURES=$((FAILURES + 1)); return
  fi
  "$PYTHON" - "$out" "$DEVICE" <<'PY' || FAILURES=$((FAILURES + 1))
import gzip, json, os, sys
out, device = sys.argv[1], sys.argv[2]
if device != "cuda" and not os.path.exists(f"{out}/traces/rank-0.pt.trace.json.gz"):
    print("  profile_resnet50: no trace (a dry run that stopped before step 25)"); sys.exit(0)
record = next(r for r in map(json.loads, open(f"{out}/metrics.jsonl")) if r["kind"] == "train" and r["step"] == 25)
phases = ["data", "copy", "forward", "backward", "comm", "optimizer", "other"]
steps = record["breakdown_steps"]
event_step = sum(record[f"{p}_s"] for p in phases)
event_compute = sum(record[f"{p}_s"] for p in ["copy", "forward", "backward", "optimizer"])
trace = json.load(gzip.open(f"{out}/traces/rank-0.pt.trace.json.gz"))
gpu = sorted((e["ts"], e["ts"] + e["dur"]) for e in trace["traceEvents"]
             if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and "dur" in e)
if not gpu and device != "cuda":  # a CPU dry run: host clocks against the trace's ProfilerStep ranges
    span = sum(e["dur"] for e in trace["traceEvents"] if str(e.get("name", "")).startswith("ProfilerStep#")) / 1e6 / 5
    print(f"  profile_resnet50 (cpu): per step: clocks {event_step * 1e3:.1f} ms vs ProfilerStep ranges {span * 1e3:.1f} ms")
    sys.exit(0)
if not gpu:
    print("  profile_resnet50: no CUDA kernels in the trace"); sys.exit(1)
busy, end = 0.0, None
for start, stop in gpu:  # the union of the kernels' intervals
    if end is None or start > end:
        busy += stop - start; end = stop
    elif stop > end:
        busy += stop - end; end = stop
span = (gpu[-1][1] - gpu[0][0]) / 1e6 / 5
busy_s = busy / 1e6 / 5
print(f"  profile_resnet50: {len(gpu)} GPU activities in steps 21-25 ({steps} steps timed); per step: events {event_step * 1e3:.1f} ms "
      f"vs trace span {span * 1e3:.1f} ms (ratio {event_step / span:.3f}); compute phases {event_compute * 1e3:.1f} ms vs kernels "
      f"busy {busy_s * 1e3:.1f} ms (ratio {event_compute / busy_s:.3f}); GPU busy {busy_s / span:.0%} of the span")
ok = steps == 5 and 0.85 <= event_step / span <= 1.15 and 0.85 <= event_compute / busy_s <= 1.25
print("    within tolerance (steps 0.85-1.15, compute 0.85-1.25)" if ok else "    OUT OF TOLERANCE")
sys.exit(0 if ok else 1)
PY
  grep -h -e "host_bound" -e "host/launch" "$out/perf_summary.json" | sed 's/^/    /' || true
  if command -v nsys > /dev/null; then
    local nsys_out="$RUNS/nsys_resnet50"
    if nsys profile --capture-range=cudaProfilerApi --capture-range-end=stop -t cuda,nvtx -o "$nsys_out" --force-overwrite true \
        "$CVTRAIN" --recipe "$BUNDLE/quickstart.yaml" data.format=synthetic data.train= data.val= data.max_samples=0 \
        model.num_classes=1000 model.image_size=224 model.arch=resnet50 precision=bf16 train.global_batch=256 train.max_steps=12 \
        device="$DEVICE" 'profile={steps: [8, 10], tool: nsys}' output="$RUNS/nsys_run" > "$nsys_out.log" 2>&1; then
      echo "  nsys capture window: $(ls -la "$nsys_out".nsys-rep 2>/dev/null | awk '{print $5}') bytes"
      nsys stats -r nvtx_sum "$nsys_out".nsys-rep 2>/dev/null | grep -e "cvtrain::" | head -8 | sed 's/^/    /' || true
    else
      echo "  nsys capture: FAILED"; tail -5 "$nsys_out.log" | sed 's/^/    /'; FAILURES=$((FAILURES + 1))
    fi
  else
    echo "  nsys: not installed on this machine, capture window not checked"
  fi
  "$CVTRAIN" preflight --recipe "$BUNDLE/quickstart.yaml" data.format=synthetic data.train= data.val= data.max_samples=0 \
    model.num_classes=1000 model.image_size=224 model.arch=resnet50 precision=bf16 train.global_batch=256 device="$DEVICE" \
    output="$RUNS/preflight" ${EXTRA:-} $(dry_training) 2>&1 | sed 's/^/  /' || FAILURES=$((FAILURES + 1))
}

# train.cuda_graphs against eager on the same 50 steps of synthetic data (ResNet-18 at 64 px, fp32 so
# that TF32 does not blur the comparison): every step's loss and the final weights within float
# tolerance, and the log must say the step was captured. Extra arguments pick the case (ddp, fp16 ...).
graphs_case() {
  local name=$1; shift
  local checked=0
  for graphs in false true; do
    local args=(--recipe "$BUNDLE/quickstart.yaml" data.format=synthetic data.train= data.val= data.max_samples=0
      model.arch=resnet18 model.num_classes=100 model.image_size=64 train.global_batch=64 train.epochs=1 train.max_steps=50
      train.log_every=1 optim.implementation=fused train.cuda_graphs=$graphs device="$DEVICE"
      output="$RUNS/${name}_graphs_$graphs" "$@" ${EXTRA:-})
    # Both sides of the case a dry run trains (the first), the recipes of the others checked.
    if [ "${DRY_TRAINED[graphs]:-}" != "${name}_graphs_false" ] && checked_instead graphs "${name}_graphs_$graphs" "${args[@]}"; then
      checked=1; continue
    fi
    # shellcheck disable=SC2046
    if ! "$CVTRAIN" "${args[@]}" $(dry_training) > "$RUNS/${name}_graphs_$graphs.log" 2>&1; then
      echo "  $name (cuda_graphs $graphs): FAILED"; tail -5 "$RUNS/${name}_graphs_$graphs.log" | sed 's/^/    /'
      FAILURES=$((FAILURES + 1)); return
    fi
  done
  [ "$checked" = 1 ] && return 0
  grep -h "train.cuda_graphs" "$RUNS/${name}_graphs_true.log" | sed 's/^/    /' || true
  "$PYTHON" - "$name" "$RUNS/${name}_graphs_false" "$RUNS/${name}_graphs_true" "$DEVICE" <<'PY' || FAILURES=$((FAILURES + 1))
import glob, json, math, struct, sys
import torch
name, eager, graphed, device = sys.argv[1:5]
def losses(run):
    return [r["loss"] for r in map(json.loads, open(f"{run}/metrics.jsonl")) if r["kind"] == "train"]
def weights(run):  # the last checkpoint's safetensors: an 8-byte header length, a JSON header, the data
    path = sorted(glob.glob(f"{run}/checkpoints/step-*/model.safetensors"))[-1]
    blob = open(path, "rb").read()
    size = struct.unpack("<Q", blob[:8])[0]
    header = json.loads(blob[8:8 + size])
    dtypes = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16, "I64": torch.int64}
    out = {}
    for key, meta in header.items():
        if key == "__metadata__" or meta["dtype"] not in dtypes: continue
        start, stop = meta["data_offsets"]
        data = bytearray(blob[8 + size + start:8 + size + stop])
        out[key] = torch.frombuffer(data, dtype=dtypes[meta["dtype"]]).double() if data else torch.zeros(0, dtype=torch.double)
    return out
a, b = losses(eager), losses(graphed)
finite = [(x, y) for x, y in zip(a, b) if math.isfinite(x) and math.isfinite(y)]
loss_gap = max(abs(x - y) / max(abs(x), 1e-12) for x, y in finite)
wa, wb = weights(eager), weights(graphed)
weight_gap = max(((wa[k] - wb[k]).abs().max() / wa[k].abs().max().clamp_min(1e-12)).item() for k in wa if wa[k].numel())
ok = len(a) == len(b) and len(finite) >= len(a) - 5 and loss_gap < 1e-3 and weight_gap < 1e-3
print(f"  {name}: {len(a)} steps; largest relative gap, graphed against eager: loss {loss_gap:.2e}, weights {weight_gap:.2e} "
      f"({'within 1e-3' if ok else 'OUT OF TOLERANCE'})")
sys.exit(0 if ok else 1)
PY
  if [ "$DEVICE" = cuda ] && ! grep -q "captured; the steps after replay it" "$RUNS/${name}_graphs_true.log"; then
    echo "    $name: the log does not say that a step was captured"; FAILURES=$((FAILURES + 1))
  fi
}

# The sections, in the order `run` takes them. A short device lease runs a few by name, e.g.
#   scripts/gpu_check.sh run graphs fused profile
SECTIONS="foundation distributed pipeline decode zoo fused graphs reference sharded micro_batch segmentation profile bf16_gap"

section_foundation() {
  echo "== foundation: single-process training on $DEVICE (Fashion-MNIST test set, 10,000 images)"
  train_case fp32_small_cnn precision=fp32 train.epochs=3
  train_case bf16_small_cnn precision=bf16 train.epochs=3
  train_case tf32_small_cnn precision=tf32 train.epochs=3
  train_case fp16_small_cnn precision=fp16 train.epochs=3
  train_case bf16_resnet18_small_stem precision=bf16 train.epochs=2 model.arch=resnet18 model.small_stem=true \
    train.global_batch=256 optim.lr=0.2
  train_case fp16_resnet18_small_stem precision=fp16 train.epochs=2 model.arch=resnet18 model.small_stem=true \
    train.global_batch=256 optim.lr=0.2
  # The bf16 checkpoint: bf16 inputs on the device. A dry run trained the fp32 row only.
  if [ "${DRY:-0}" = 1 ]; then predict_case "$RUNS/fp32_small_cnn"; else predict_case "$RUNS/bf16_small_cnn"; fi
}

# cvtrain predict on the device (pinned batches, the copy stream, bf16 inputs): the bundle's 384
# JPEGs through the bf16 small_cnn's checkpoint (made gray for its one channel); a row per file.
predict_case() {
  local out="$RUNS/predictions.csv"
  if ! "$CVTRAIN" predict --checkpoint "$1" "$BUNDLE/images" device="$DEVICE" --out "$out" > "$RUNS/predict.log" 2>&1; then
    echo "  predict: FAILED"; tail -5 "$RUNS/predict.log" | sed 's/^/    /'; FAILURES=$((FAILURES + 1)); return
  fi
  echo "  predict: $(($(wc -l < "$out") - 1)) rows; $(grep -o '[0-9]* image(s) in .* images/s)' "$RUNS/predict.log")"
}

section_distributed() {
  echo "== distributed: world size 1 through a real process group (strategy ddp, backend nccl on CUDA)"
  local backend=nccl
  [ "$DEVICE" = cuda ] || backend=gloo
  train_case "ddp_world1_${backend}" strategy=ddp distributed.backend=$backend distributed.nproc_per_node=1 train.epochs=1
}

section_pipeline() {
  echo "== input pipeline: JPEG decode, RandomResizedCrop 224, flip; batches pinned, copied on a side stream, normalised on $DEVICE"
  # Batches of 24: the 384 images make 16 batches an epoch, one for each of up to 16 workers.
  for workers in 1 4 8 16; do
    "$CVTRAIN" data bench "$BUNDLE/images" --workers $workers --batch 24 --batches $BENCH_BATCHES --device "$DEVICE" 2>&1 | sed 's/^/  /' ||
      FAILURES=$((FAILURES + 1))
  done
  "$CVTRAIN" data bench "$BUNDLE/images" --workers 16 --batch 24 --batches $BENCH_BATCHES --device "$DEVICE" --eval 2>&1 | sed 's/^/  /' ||
    FAILURES=$((FAILURES + 1))
  # The DeiT/ConvNeXt recipes' bicubic crops: Pillow's filter on the workers.
  "$CVTRAIN" data bench "$BUNDLE/images" --workers 16 --batch 24 --batches $BENCH_BATCHES --device "$DEVICE" --interpolation bicubic 2>&1 |
    sed 's/^/  /' || FAILURES=$((FAILURES + 1))
  # DeiT's augmented view (vit_b16.yaml: RandAugment rand-m9-mstd0.5-inc1, bicubic crops and ops, random
  # erasing 0.25 on the device): the cores an H200 needs to keep a ViT-B/16 fed are the zoo section's
  # bf16_vit_b16_b128 images/s over these rows' images/s per worker.
  for workers in 4 8 16; do
    "$CVTRAIN" data bench "$BUNDLE/images" --workers $workers --batch 24 --batches $BENCH_BATCHES --device "$DEVICE" \
      --auto-augment rand-m9-mstd0.5-inc1 --random-erasing 0.25 --interpolation bicubic 2>&1 | sed 's/^/  /' || FAILURES=$((FAILURES + 1))
  done
  if [ "$DEVICE" = cuda ]; then  # nvJPEG's batched decode, crop and flip rendered on the GPU; the goal: 2x 16 workers, < 4 cores busy
    for workers in 2 4; do
      "$CVTRAIN" data bench "$BUNDLE/images" --workers $workers --batch 24 --batches $BENCH_BATCHES --device cuda --decoder nvjpeg 2>&1 |
        sed 's/^/  /' || FAILURES=$((FAILURES + 1))
    done
    "$CVTRAIN" data bench "$BUNDLE/images" --workers 4 --batch 24 --batches $BENCH_BATCHES --device cuda --decoder nvjpeg --interpolation bicubic 2>&1 |
      sed 's/^/  /' || FAILURES=$((FAILURES + 1))
  fi
  train_case bf16_resnet18_224_jpeg_folder data.format=imagefolder data.train="$BUNDLE/images" data.val= data.workers=14 \
    data.mean=[0.485,0.456,0.406] data.std=[0.229,0.224,0.225] model.arch=resnet18 model.image_size=224 precision=bf16 \
    train.global_batch=24 train.epochs=3 augment.random_resized_crop=[0.08,1.0] augment.mixup=0.2 augment.cutmix=1.0
}

# Issue 18's data-wait goal: ResNet-50 trained from real JPEGs, decoded by the CPU workers or by
# nvJPEG. The bundle's 384 files are copied 16 times (6,144 files, 48 steps an epoch) so that an
# epoch is long enough to measure.
section_decode() {
  echo "== data.decoder: ResNet-50 bf16 b128 from 6,144 JPEG files (about 500x375), RandomResizedCrop 224 + flip"
  local images="$RUNS/images_x16"
  "$PYTHON" - "$BUNDLE/images" "$images" "$COPIES" <<'PY'
import os, shutil, sys
source, target = sys.argv[1], sys.argv[2]
for label in sorted(os.listdir(source)):
    os.makedirs(os.path.join(target, label), exist_ok=True)
    for name in os.listdir(os.path.join(source, label)):
        for copy in range(int(sys.argv[3])):
            shutil.copyfile(os.path.join(source, label, name), os.path.join(target, label, f"{copy}_{name}"))
PY
  local decoders="cpu"
  [ "$DEVICE" = cuda ] && decoders="cpu nvjpeg"
  for decoder in $decoders; do
    local workers=14
    [ "$decoder" = nvjpeg ] && workers=4
    train_case "bf16_resnet50_b128_jpeg_${decoder}_w${workers}" data.format=imagefolder data.train="$images" data.val=       data.decoder=$decoder data.workers=$workers data.mean=[0.485,0.456,0.406] data.std=[0.229,0.224,0.225]       model.arch=resnet50 model.image_size=224 precision=bf16 train.global_batch=128 train.epochs=2 optim.lr=0.1       augment.random_resized_crop=[0.08,1.0] augment.label_smoothing=0.1
    grep -h "data.decoder" "$RUNS/bf16_resnet50_b128_jpeg_${decoder}_w${workers}.log" | sed 's/^/    /' || true
    input_share "$RUNS/bf16_resnet50_b128_jpeg_${decoder}_w${workers}"
  done
}

# The step breakdown's input phases in the last logged interval: waiting for the loader (data) and
# for the batch on the device (copy; with nvJPEG, its decode and render on the copy stream); and the
# run's verdicts (host_bound: the training thread, which also launches the render, cannot keep up).
input_share() {
  [ -f "$1/metrics.jsonl" ] || return 0
  "$PYTHON" - "$1" <<'PY'
import json, os, sys
records = [r for r in map(json.loads, open(f"{sys.argv[1]}/metrics.jsonl")) if r["kind"] == "train" and "copy_frac" in r]
if records:
    r = records[-1]
    print(f"    last interval (step {r['step']}): data {r['data_frac']:.1%} + copy {r['copy_frac']:.1%} of the step")
summary = f"{sys.argv[1]}/perf_summary.json"
if os.path.exists(summary):
    for verdict in json.load(open(summary)).get("verdicts", []):
        print(f"    verdict {verdict.get('kind')}: {verdict.get('message', '')[:160]}")
PY
}

section_zoo() {
  echo "== model zoo and precision: 30 steps on synthetic device data at 224 (1000 classes, channels_last for CNNs)"
  for precision in bf16 fp16; do
    synthetic_case "${precision}_resnet50_b256" model.arch=resnet50 precision=$precision train.global_batch=256 optim.lr=0.1
    synthetic_case "${precision}_vit_b16_b128" model.arch=vit_base_patch16 precision=$precision train.global_batch=128 \
      optim.name=adamw optim.lr=1e-3 train.grad_clip=1.0
  done
  synthetic_case bf16_convnext_tiny_b128 model.arch=convnext_tiny precision=bf16 train.global_batch=128 optim.name=adamw optim.lr=1e-3
  synthetic_case bf16_vit_b16_b128_grad_checkpointing model.arch=vit_base_patch16 precision=bf16 train.global_batch=128 \
    optim.name=adamw optim.lr=1e-3 model.grad_checkpointing=true
}

section_fused() {
  echo "== optimizer kernels: optim.implementation=fused (ATen's _fused_sgd_ / _fused_adamw_) against the zoo's foreach rows"
  synthetic_case bf16_resnet50_b256_fused model.arch=resnet50 precision=bf16 train.global_batch=256 optim.lr=0.1 optim.implementation=fused
  synthetic_case fp16_resnet50_b256_fused model.arch=resnet50 precision=fp16 train.global_batch=256 optim.lr=0.1 optim.implementation=fused
  synthetic_case bf16_vit_b16_b128_fused model.arch=vit_base_patch16 precision=bf16 train.global_batch=128 \
    optim.name=adamw optim.lr=1e-3 train.grad_clip=1.0 optim.implementation=fused
}

section_graphs() {
  echo "== CUDA graphs (train.cuda_graphs): 50 graphed steps against 50 eager ones, then the rate of fused + graphs"
  graphs_case graphs_single precision=fp32
  graphs_case graphs_ddp_world1 precision=fp32 strategy=ddp distributed.nproc_per_node=1
  CVTRAIN_INF_GRAD_STEPS=10-11 graphs_case graphs_fp16_overflow precision=fp16
  grep -hs "overflowed" "$RUNS/graphs_fp16_overflow_graphs_true.log" | sed 's/^/    /' || true
  graphs_case graphs_zero2_adamw precision=bf16 strategy=zero2 distributed.nproc_per_node=1 optim.name=adamw optim.lr=1e-3 train.grad_clip=1.0
  synthetic_case bf16_resnet50_b256_fused_graphs model.arch=resnet50 precision=bf16 train.global_batch=256 optim.lr=0.1 \
    optim.implementation=fused train.cuda_graphs=true
  synthetic_case fp16_resnet50_b256_fused_graphs model.arch=resnet50 precision=fp16 train.global_batch=256 optim.lr=0.1 \
    optim.implementation=fused train.cuda_graphs=true
  synthetic_case bf16_vit_b16_b128_fused_graphs model.arch=vit_base_patch16 precision=bf16 train.global_batch=128 \
    optim.name=adamw optim.lr=1e-3 train.grad_clip=1.0 optim.implementation=fused train.cuda_graphs=true
}

section_reference() {
  echo "== cuDNN autotuning (train.cudnn_benchmark, off above), and PyTorch's own loop with the same settings (scripts/gpu_reference.py)"
  for precision in bf16 fp16; do
    synthetic_case "${precision}_resnet50_b256_cudnn_benchmark" model.arch=resnet50 precision=$precision train.global_batch=256 \
      optim.lr=0.1 train.cudnn_benchmark=true
    if [ "$DEVICE" = cuda ]; then
      for autotune in "" --cudnn-benchmark; do
        "$PYTHON" scripts/gpu_reference.py --precision $precision $autotune || FAILURES=$((FAILURES + 1))
      done
    fi
  done
  [ "$DEVICE" = cuda ] && { "$PYTHON" scripts/gpu_reference.py --model vit_b16 --precision bf16 || FAILURES=$((FAILURES + 1)); }
  return 0
}

# Not in the default list (compiling takes minutes): PyTorch's loop under torch.compile, the bar
# issue 18 sets for ViT-B/16. Each compile is cut off after 300 s.
section_compile() {
  echo "== torch.compile: PyTorch's loop compiled (scripts/gpu_reference.py --compile), beside the eager rows"
  for model in resnet50 vit_b16; do
    timeout 300 "$PYTHON" scripts/gpu_reference.py --model $model --precision bf16 --compile ||
      echo "  pytorch_bf16_${model}_compiled: failed or not done within 300 s"
  done
}

section_sharded() {
  echo "== sharded strategies on one GPU (world size 1: NCCL all-gathers and reduce-scatters, gathering, freeing and hooks on CUDA memory)"
  for strategy in zero2 fsdp; do
    synthetic_case "bf16_vit_b16_b128_${strategy}" model.arch=vit_base_patch16 precision=bf16 train.global_batch=128 \
      optim.name=adamw optim.lr=1e-3 strategy=$strategy distributed.nproc_per_node=1
  done
}

section_micro_batch() {
  echo "== train.micro_batch: auto"
  [ "$DEVICE" = cuda ] || { echo "  skipped: the search runs in GPU memory"; return 0; }
  # 1024 fits an H200 in one micro-batch; 8192 makes the search meet out-of-memory (4096) and back off.
  synthetic_case bf16_resnet50_micro_batch_auto model.arch=resnet50 precision=bf16 train.global_batch=8192 train.micro_batch=auto \
    optim.lr=0.1 train.max_steps=4 train.log_every=2
  grep -h -e "micro-batch do not fit" -e "auto chose" "$RUNS/bf16_resnet50_micro_batch_auto.log" | sed 's/^/    /' || true
}

# Segmentation at the resolutions its recipes train (issue 49): DeepLabV3-R50 on 512x1024 crops and
# SegFormer-B2 on 1024x1024, synthetic crops and masks on the GPU, bf16, with and without activation
# recomputation and under fsdp (world size 1), then micro_batch: auto on DeepLabV3; peak memory and
# img/s as scripts/bench_segmentation_memory.sh prints them on a CPU. A dry run shrinks the crops.
segmentation_case() {
  local name=$1 recipe=$2; shift 2
  local crop=()
  # Dry: small crops.
  [ "${DRY:-0}" = 1 ] && crop=(augment.crop_size=[32,64] model.image_size=32)
  SYNTHETIC_RECIPE=$recipe synthetic_case "$name" model.num_classes=19 train.global_batch=8 checkpoint.every_steps=0 \
    "$@" "${crop[@]}"
}

section_segmentation() {
  echo "== segmentation at 512x1024 and 1024x1024: bf16, recomputation, fsdp, micro_batch auto"
  local deeplab=recipes/deeplabv3_r50_cityscapes.yaml segformer=recipes/segformer_b0_ade20k.yaml
  segmentation_case bf16_deeplabv3_r50_512x1024_b8 $deeplab precision=bf16
  segmentation_case bf16_deeplabv3_r50_512x1024_b8_recompute $deeplab precision=bf16 model.grad_checkpointing=true
  segmentation_case bf16_deeplabv3_r50_512x1024_b8_fsdp $deeplab precision=bf16 strategy=fsdp distributed.nproc_per_node=1
  segmentation_case bf16_segformer_b2_1024_b8 $segformer precision=bf16 model.arch=segformer_b2 augment.crop_size=[1024,1024] \
    model.image_size=1024
  segmentation_case bf16_segformer_b2_1024_b8_recompute $segformer precision=bf16 model.arch=segformer_b2 \
    augment.crop_size=[1024,1024] model.image_size=1024 model.grad_checkpointing=true
  [ "$DEVICE" = cuda ] || { echo "  micro_batch auto skipped: the search runs in GPU memory"; return 0; }
  segmentation_case bf16_deeplabv3_r50_micro_batch_auto $deeplab precision=bf16 train.global_batch=64 train.micro_batch=auto \
    train.max_steps=4 train.log_every=2
  grep -h -e "micro-batch do not fit" -e "auto chose" "$RUNS/bf16_deeplabv3_r50_micro_batch_auto.log" | sed 's/^/    /' || true
}

section_profile() {
  echo "== profiler: the step breakdown (CUDA events) against a Kineto trace of the same steps, NVTX, preflight"
  profile_case
}

# Issue 18's bf16 question: ResNet-50 b256 is slower in bf16 than in fp16 (in PyTorch too). A Kineto
# window over steps 21-25 of each, and scripts/kernel_table.py charges every kernel to the op that
# launched it: which categories (convolution, BatchNorm, casts ...) make the difference.
section_bf16_gap() {
  echo "== bf16 against fp16: ResNet-50 b256, where the GPU time of steps 21-25 goes (scripts/kernel_table.py)"
  for precision in bf16 fp16; do
    synthetic_case "${precision}_resnet50_b256_traced" model.arch=resnet50 precision=$precision train.global_batch=256 optim.lr=0.1 \
      'profile={steps: [21, 25], ranks: [0]}'
  done
  local traces="$RUNS/bf16_resnet50_b256_traced/traces/rank-0.pt.trace.json.gz $RUNS/fp16_resnet50_b256_traced/traces/rank-0.pt.trace.json.gz"
  # shellcheck disable=SC2086
  if ls $traces > /dev/null 2>&1; then
    "$PYTHON" scripts/kernel_table.py $traces --labels bf16 fp16 --steps 5 || FAILURES=$((FAILURES + 1))
  else
    echo "  no traces (a dry run that stopped before step 25)"
  fi
}

run() {
  DEVICE=${DEVICE:-cuda}
  BENCH_BATCHES=64
  COPIES=16
  if [ "${DRY:-0}" = 1 ]; then
    DEVICE=cpu BENCH_BATCHES=2 COPIES=1
    EXTRA=${EXTRA:-"train.max_steps=2 train.log_every=1 data.max_val_samples=32 model.image_size=32 train.global_batch=8 data.workers=1"}
  fi
  PYTHON=${PYTHON:-python3}
  local sections=("$@")
  [ ${#sections[@]} -gt 0 ] || read -r -a sections <<< "$SECTIONS"
  for section in "${sections[@]}"; do
    declare -F "section_$section" > /dev/null || { echo "no section '$section'; the sections: $SECTIONS compile"; exit 2; }
  done
  CVTRAIN=${CVTRAIN:-$BUNDLE/bin/cvtrain}
  [ -x "$CVTRAIN" ] || { echo "no $CVTRAIN: run 'scripts/gpu_check.sh bundle' first and carry $BUNDLE"; exit 1; }
  local torch_lib
  torch_lib=$("$PYTHON" -c "import torch, os; print(os.path.join(os.path.dirname(torch.__file__), 'lib'))")
  export LD_LIBRARY_PATH="$torch_lib:$(realpath -m "$BUNDLE/lib"):${LD_LIBRARY_PATH:-}"
  DATA="$BUNDLE/data/t10k-images-idx3-ubyte.gz"
  RUNS=$(mktemp -d)
  FAILURES=0
  echo "== machine"
  command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  "$PYTHON" -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'available', torch.cuda.is_available())"
  for section in "${sections[@]}"; do
    local started=$SECONDS
    "section_$section"
    echo "   ($section: $((SECONDS - started)) s)"
  done
  [ "${DRY:-0}" = 1 ] && rm -rf "$RUNS"  # a real run's folders stay, to be looked into
  echo "== $FAILURES failed"
  [ "$FAILURES" -eq 0 ]
}

case "${1:-run}" in
  bundle) bundle ;;
  data) bundle_data "${2:-384}" ;;
  run) shift $(( $# > 0 ? 1 : 0 )); run "$@" ;;
  *) echo "usage: $0 bundle | data [N] | run [SECTION...]   (sections: $SECTIONS compile)"; exit 2 ;;
esac
