#!/usr/bin/env bash
# Input pipeline against torchvision, same machine, same run: images per second for decode,
# RandomResizedCrop 224 (scale 0.08-1), horizontal flip and uint8 batches of 256, with 1 and 2
# workers (cvtrain: threads; torchvision: DataLoader worker processes with ImageFolder + PIL); then
# the evaluation view (Resize 256 + CenterCrop 224, the same pixels on both sides) with 2 workers.
# The images: 2,560 JPEGs around 500x375 at quality 90, random crops and flips of the photographs
# scikit-image ships (scripts/bench_data/make_images.py), cached under $CVTRAIN_HOME.
#   scripts/bench_data.sh            ROUNDS=3 BATCHES=10 COUNT=2560 to change the defaults
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh > /dev/null
CVTRAIN_HOME=${CVTRAIN_HOME:-$HOME/.cache/cvtrain}
PYTHON="$CVTRAIN_HOME/venv/bin/python"
COUNT=${COUNT:-2560}
ROUNDS=${ROUNDS:-3}
BATCHES=${BATCHES:-10}
IMAGES="$CVTRAIN_HOME/bench_data/images_$COUNT"
"$PYTHON" scripts/bench_data/make_images.py "$IMAGES" --count "$COUNT"
echo "$COUNT JPEGs in $IMAGES ($(du -sh "$IMAGES" | cut -f1)); batch 256, RandomResizedCrop 224, flip; $BATCHES timed batches,"
echo "best of $ROUNDS alternating rounds per side; $(nproc) cores"

RESULTS=$(mktemp)
# view workers [--eval]
for run in "train 1" "train 2" "eval 2 --eval"; do
  read -r view workers flag <<< "$run"
  for round in $(seq "$ROUNDS"); do
    # Alternate the sides so drift on a shared machine hits both.
    echo "cvtrain $view $workers $(./build/apps/cvtrain data bench "$IMAGES" --workers "$workers" --batch 256 --batches "$BATCHES" $flag --json)" >> "$RESULTS"
    echo "torchvision $view $workers $("$PYTHON" scripts/bench_data/torchvision_pipeline.py "$IMAGES" --workers "$workers" --batch 256 --batches "$BATCHES" $flag)" >> "$RESULTS"
  done
done

"$PYTHON" - "$RESULTS" <<'PY'
import json, sys
best = {}
for line in open(sys.argv[1]):
    side, view, workers, blob = line.split(" ", 3)
    key = (side, view, int(workers))
    best[key] = max(best.get(key, 0), json.loads(blob)["images_per_s"])
print(f"\n{'view':>5} {'workers':>7} {'cvtrain img/s':>14} {'torchvision img/s':>18} {'cvtrain/torchvision':>20}")
for view, w in (("train", 1), ("train", 2), ("eval", 2)):
    c, t = best[("cvtrain", view, w)], best[("torchvision", view, w)]
    print(f"{view:>5} {w:>7} {c:>14.0f} {t:>18.0f} {c / t:>19.2f}x")
PY
rm -f "$RESULTS"
