#!/usr/bin/env bash
# The segmentation quickstart's quality: recipes/shapes_segmentation.yaml on the shapes set
# (scripts/make_shapes_dataset.py: 512 training and 128 validation images of 64x64, seed 0, written
# once under $CVTRAIN_HOME/bench_data/shapes), trained to its end. Prints the mIoU of every epoch, the
# final one against the goal (>= 0.8) and the wall time; the test suite only checks that a short run
# learns (tests/e2e/segmentation_test.cpp).
#   scripts/bench_shapes_segmentation.sh [KEY=VALUE ...]   overrides for the recipe
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh > /dev/null
CVTRAIN_HOME=${CVTRAIN_HOME:-$HOME/.cache/cvtrain}
PYTHON="$CVTRAIN_HOME/venv/bin/python"
SHAPES="$CVTRAIN_HOME/bench_data/shapes"
OUT=${OUT:-runs/bench_shapes_segmentation}
[ -f "$SHAPES/ImageSets/Segmentation/val.txt" ] || "$PYTHON" scripts/make_shapes_dataset.py "$SHAPES" > /dev/null
rm -rf "$OUT"

start=$SECONDS
./build/apps/cvtrain --recipe recipes/shapes_segmentation.yaml data.train="$SHAPES/ImageSets/Segmentation/train.txt" \
  data.val="$SHAPES/ImageSets/Segmentation/val.txt" output="$OUT" "$@" 2>&1 | grep -E "final"
wall=$((SECONDS - start))

"$PYTHON" - "$OUT" "$wall" <<'PY'
import json, sys
out, wall = sys.argv[1], int(sys.argv[2])
epochs = [r for r in map(json.loads, open(f"{out}/metrics.jsonl")) if r["kind"] == "epoch"]
print("mIoU per epoch: " + " ".join(f"{r['miou']:.3f}" for r in epochs))
final = epochs[-1]["miou"]
print(f"final mIoU {final:.4f} after {len(epochs)} epochs in {wall // 60} min {wall % 60} s (start-up and evaluation included)")
print(f"goal (>= 0.8): {'met' if final >= 0.8 else 'NOT met'}")
PY
