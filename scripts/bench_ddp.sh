#!/usr/bin/env bash
# DDP on CPU with Gloo: for one global batch, the optimizer-step time with 1 and 2 ranks, and the
# part of the step spent waiting for gradient all-reduce after backward ended (what bucketing and
# overlap are meant to hide). Same recipe, same machine, same run.
#   scripts/bench_ddp.sh [KEY=VALUE ...]   extra overrides for every run (CVTRAIN=path: another build)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh > /dev/null
PYTHON="${CVTRAIN_HOME:-$HOME/.cache/cvtrain}/venv/bin/python"
OUT=${OUT:-runs/bench_ddp}
CVTRAIN=${CVTRAIN:-./build/apps/cvtrain}  # another build, to compare versions
STEPS=${STEPS:-80}
rm -rf "$OUT"
COMMON=(data.val= train.max_steps="$STEPS" train.log_every=20 train.global_batch=128 strategy=ddp)

# name ranks bucket_mb: small_cnn's 1.5 MB of gradients fit one 25 MB bucket (nothing to overlap);
# 0.25 MB buckets let the all-reduce of the head start while backward still runs the convolutions.
runs=("1rank 1 25" "2ranks 2 25" "2ranks_small_buckets 2 0.25")
for run in "${runs[@]}"; do
  read -r name world bucket <<< "$run"
  "$CVTRAIN" --recipe recipes/quickstart.yaml "${COMMON[@]}" distributed.nproc_per_node="$world" \
    distributed.bucket_mb="$bucket" distributed.master_port=$((29600 + RANDOM % 1000)) output="$OUT/$name" "$@" \
    > "$OUT.$name.log" 2>&1 || { cat "$OUT.$name.log"; exit 1; }
done

"$PYTHON" - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
print(f"global batch 128, small_cnn on Fashion-MNIST, CPU, Gloo; first 20 steps skipped (warm-up)\n")
print(f"{'run':>22} {'step s':>8} {'images/s':>9} {'comm wait after backward':>26}")
rows = {}
for name in ("1rank", "2ranks", "2ranks_small_buckets"):
    recs = [r for r in map(json.loads, open(f"{out}/{name}/metrics.jsonl")) if r["kind"] == "train"][1:]
    step = sum(r["step_s"] for r in recs) / len(recs)
    wait = sum(r["comm_wait"] for r in recs) / len(recs)
    rows[name] = step
    print(f"{name:>22} {step:>8.3f} {128 / step:>9.0f} {wait:>14.1%} ({wait * step * 1000:.1f} ms/step)")
print(f"\nstep time 1 rank / 2 ranks: {rows['1rank'] / rows['2ranks']:.2f}x "
      f"(2 cores here: one rank uses both through intra-op threads, two ranks get one each)")
PY
