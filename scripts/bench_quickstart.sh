#!/usr/bin/env bash
# Trains recipes/quickstart.yaml with cvtrain, then the same model, data order, augmentation and
# hyperparameters in plain Python PyTorch (scripts/reference_train.py, the venv's torch), in the same
# run on the same machine. Prints both accuracies per epoch and the ratio of seconds per epoch;
# both sides start from the same seed and take the same steps, so the accuracies should be equal.
#   scripts/bench_quickstart.sh [KEY=VALUE ...]   overrides go to both sides (through recipe.yaml)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh > /dev/null
CVTRAIN_HOME=${CVTRAIN_HOME:-$HOME/.cache/cvtrain}
PYTHON="$CVTRAIN_HOME/venv/bin/python"
OUT=${OUT:-runs/bench_quickstart}
rm -rf "$OUT"

echo "== cvtrain (C++)"
start=$SECONDS
./build/apps/cvtrain --recipe recipes/quickstart.yaml output="$OUT" "$@" 2>&1 | grep -E "epoch [0-9]+ train|done:|final"
cvtrain_wall=$((SECONDS - start))

echo "== plain PyTorch reference ($("$PYTHON" -c 'import torch; print(torch.__version__)'))"
start=$SECONDS
"$PYTHON" scripts/reference_train.py "$OUT/recipe.yaml" --metrics "$OUT/reference.jsonl"
reference_wall=$((SECONDS - start))

"$PYTHON" - "$OUT" "$cvtrain_wall" "$reference_wall" <<'PY'
import json, sys
out, cv_wall, ref_wall = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
cv = [r for r in map(json.loads, open(f"{out}/metrics.jsonl")) if r["kind"] == "epoch"]
ref = [json.loads(l) for l in open(f"{out}/reference.jsonl")]
print(f"\n{'epoch':>5} {'cvtrain top-1':>14} {'reference top-1':>16} {'cvtrain s':>10} {'reference s':>12}")
for c, r in zip(cv, ref):
    print(f"{c['epoch']:>5} {c['top1']:>14.4f} {r['top1']:>16.4f} {c['epoch_s']:>10.1f} {r['epoch_seconds']:>12.1f}")
cv_s = sum(c["epoch_s"] for c in cv) / len(cv)
ref_s = sum(r["epoch_seconds"] for r in ref) / len(ref)
print(f"\nfinal top-1: cvtrain {cv[-1]['top1']:.4f}, reference {ref[-1]['top1']:.4f}")
loss_diff = max(abs(c["train_loss"] - r["train_loss"]) for c, r in zip(cv, ref))
print(f"largest difference of an epoch's mean train loss: {loss_diff:.2g} (cvtrain logs 9 digits)")
print(f"seconds per epoch (training only): cvtrain {cv_s:.1f}, reference {ref_s:.1f}, ratio cvtrain/reference {cv_s / ref_s:.2f}")
print(f"whole run incl. start-up and evaluation: cvtrain {cv_wall:.0f} s, reference {ref_wall:.0f} s")
ok = cv[-1]["top1"] >= 0.92 and cv_wall <= 600
print(f"goal (>= 0.92 top-1 within 10 minutes): {'met' if ok else 'NOT met'}")
PY
