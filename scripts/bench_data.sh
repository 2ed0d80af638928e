#!/usr/bin/env bash
# Input pipeline against torchvision and timm, same machine, same run, every view with 1 and 2
# workers (cvtrain: threads; the references: DataLoader worker processes with ImageFolder + PIL),
# and each side's gain from the second worker: images per second for decode,
# RandomResizedCrop 224 (scale 0.08-1), horizontal flip and uint8 batches of 256; then
# the evaluation view (Resize 256 + CenterCrop 224, the same pixels on both sides);
# then the augmented view of the DeiT and ConvNeXt recipes (RandAugment rand-m9-mstd0.5-inc1 and
# random erasing 0.25, normalised float batches) against timm's own transform and loader
# (scripts/bench_data/timm_pipeline.py) with 1 and 2 workers. The policy is clipped at magnitude 9
# (mmax9): at 10, which the noise reaches, timm's PosterizeIncreasing asks Pillow 13 for 0 bits
# and its loader stops with a ValueError. The bicubic views (augment.interpolation and
# data.eval_interpolation bicubic, as the DeiT, ConvNeXt and RSB recipes resize) against torchvision
# with PIL's bicubic filter, which is what timm's RandomResizedCropAndInterpolation calls.
# The segmentation view: image and mask pairs (512x512 JPEGs and palette PNGs of
# scripts/make_shapes_dataset.py, 512 of them, cached under $CVTRAIN_HOME) through mmsegmentation's
# standard training pipeline (RandomResize (2048, 512) x 0.5-2, RandomCrop 512 with cat_max_ratio
# 0.75, flip, PhotoMetricDistortion, padding) in batches of 16, against the same transforms written
# in PIL and numpy in a torchvision-style Dataset and DataLoader (scripts/bench_data/segmentation_pipeline.py).
# The images: 2,560 JPEGs around 500x375 at quality 90, random crops and flips of the photographs
# scikit-image ships (scripts/bench_data/make_images.py), cached under $CVTRAIN_HOME.
# 20 timed batches are two epochs of the 2,560 images: with 10, each side's restart at the epoch
# boundary (workers idle until the next epoch's first batches) weighed a tenth of the time.
#   scripts/bench_data.sh            ROUNDS=3 BATCHES=20 COUNT=2560 to change the defaults,
#                                    VIEWS="train eval augmented bicubic eval_bicubic segmentation" to time some of the views,
#                                    WORKERS="1 2" the worker counts
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/bench_data/photographs.sh
ROUNDS=${ROUNDS:-3}
BATCHES=${BATCHES:-20}
echo "$COUNT JPEGs in $IMAGES ($(du -sh "$IMAGES" | cut -f1)); batch 256, RandomResizedCrop 224, flip; $BATCHES timed batches,"
echo "best of $ROUNDS alternating rounds per side; $(nproc) cores"

RESULTS=$(mktemp)
POLICY=rand-m9-mstd0.5-inc1-mmax9
ERASING=0.25
VIEWS=${VIEWS:-train eval augmented bicubic eval_bicubic segmentation}
if [[ " $VIEWS " == *" segmentation "* ]]; then
  PAIRS="$CVTRAIN_HOME/bench_data/shapes_512"
  [ -f "$PAIRS/ImageSets/Segmentation/train.txt" ] ||
    "$PYTHON" scripts/make_shapes_dataset.py "$PAIRS" --train 512 --val 0 --size 512 > /dev/null
  PAIRS="$PAIRS/ImageSets/Segmentation/train.txt"
fi
RUNS=()
WORKERS=${WORKERS:-1 2}
for view in $VIEWS; do
  for workers in $WORKERS; do RUNS+=("$view $workers"); done
done
# view workers
for run in "${RUNS[@]}"; do
  read -r view workers <<< "$run"
  source=$IMAGES
  batch=(--batch 256)
  case $view in
    train) ours=(); reference=(torchvision scripts/bench_data/torchvision_pipeline.py) ;;
    segmentation) source=$PAIRS; batch=(--batch 16 --image-size 512)
                  ours=(); reference=(torchvision scripts/bench_data/segmentation_pipeline.py) ;;
    eval) ours=(--eval); reference=(torchvision scripts/bench_data/torchvision_pipeline.py --eval) ;;
    bicubic) ours=(--interpolation bicubic); reference=(torchvision scripts/bench_data/torchvision_pipeline.py --interpolation bicubic) ;;
    eval_bicubic) ours=(--eval --interpolation bicubic)
                  reference=(torchvision scripts/bench_data/torchvision_pipeline.py --eval --interpolation bicubic) ;;
    augmented) ours=(--auto-augment "$POLICY" --random-erasing "$ERASING")
               reference=(timm scripts/bench_data/timm_pipeline.py --auto-augment "$POLICY" --random-erasing "$ERASING") ;;
  esac
  for round in $(seq "$ROUNDS"); do
    # Alternate the sides so drift on a shared machine hits both.
    # A side that fails stops the benchmark (set -e) rather than leaving a hole in the table.
    ours_result=$(./build/apps/cvtrain data bench "$source" --workers "$workers" "${batch[@]}" --batches "$BATCHES" "${ours[@]}" --json)
    echo "cvtrain $view $workers $ours_result" >> "$RESULTS"
    reference_result=$("$PYTHON" "${reference[@]:1}" "$source" --workers "$workers" "${batch[@]}" --batches "$BATCHES")
    echo "${reference[0]} $view $workers $reference_result" >> "$RESULTS"
  done
done

"$PYTHON" - "$RESULTS" <<'PY'
import json, sys
best, reference = {}, {}
for line in open(sys.argv[1]):
    side, view, workers, blob = line.split(" ", 3)
    key = (side, view, int(workers))
    best[key] = max(best.get(key, 0), json.loads(blob)["images_per_s"])
    if side != "cvtrain":
        reference[view] = side
print(f"\n{'view':>12} {'workers':>7} {'cvtrain img/s':>14} {'reference':>11} {'img/s':>7} {'cvtrain/reference':>18}"
      f" {'cvtrain vs 1 worker':>20} {'reference vs 1':>15}")
for view, w in sorted({(v, w) for (_, v, w) in best}, key=lambda k: (list(reference).index(k[0]), k[1])):
    c, t = best[("cvtrain", view, w)], best[(reference[view], view, w)]
    gain = ""
    if w != 1 and ("cvtrain", view, 1) in best:
        gain = f"{c / best[('cvtrain', view, 1)]:>19.2f}x {t / best[(reference[view], view, 1)]:>14.2f}x"
    print(f"{view:>12} {w:>7} {c:>14.0f} {reference[view]:>11} {t:>7.0f} {c / t:>17.2f}x {gain}")
PY
rm -f "$RESULTS"
