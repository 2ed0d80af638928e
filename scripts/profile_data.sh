#!/usr/bin/env bash
# Where the input pipeline's time goes, per view: `perf record` on `cvtrain data bench` (1 worker,
# 30 batches of 256 from the bench's 2,560 JPEGs), then the samples of the loader's threads
# (cvtrain-data:N) and of the consumer's (cvtrain: the feeder's work, when it has any) grouped by
# what the code does: decode (libjpeg), resample (Pillow's resize, OpenCV's), augment (RandAugment's
# ops, erasing), normalise, copy (memcpy/memset), kernel (file reads, page faults), other.
# Needs perf (linux-perf); the shares are of CPU samples, so they add up over threads.
#   scripts/profile_data.sh            VIEWS="train eval augmented bicubic eval_bicubic" BATCHES=30
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/bench_data/photographs.sh
command -v perf > /dev/null || { echo "profile_data.sh needs perf (apt-get install linux-perf)"; exit 1; }
VIEWS=${VIEWS:-train eval augmented bicubic eval_bicubic}
BATCHES=${BATCHES:-30}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
for view in $VIEWS; do
  case $view in
    train) args=() ;;
    eval) args=(--eval) ;;
    bicubic) args=(--interpolation bicubic) ;;
    eval_bicubic) args=(--eval --interpolation bicubic) ;;
    augmented) args=(--auto-augment rand-m9-mstd0.5-inc1-mmax9 --random-erasing 0.25) ;;
    *) echo "no view '$view'"; exit 2 ;;
  esac
  perf record -q -F 1999 -o "$TMP/$view.data" ./build/apps/cvtrain data bench "$IMAGES" --workers 1 --batch 256 \
    --batches "$BATCHES" "${args[@]}" --json > "$TMP/$view.json" 2> /dev/null
  perf report -i "$TMP/$view.data" --no-children --sort comm,dso,sym --stdio -F overhead,comm,dso,sym 2> /dev/null > "$TMP/$view.txt"
done
"$PYTHON" - "$TMP" $VIEWS <<'PY'
import json, re, sys
folder, views = sys.argv[1], sys.argv[2:]
GROUPS = [  # (group, pattern on "dso symbol"), first match wins
    ("decode", r"libjpeg|libpng|decode_jpeg|run_libjpeg|cmyk_to_rgb|png_"),
    ("resample", r"resample|weighted_row|vertical_row|HorizontalRgbPass|weigh_columns|rows_to_columns|columns_to_rows|libopencv_imgproc"),
    ("normalise", r"normalize"),
    ("augment", r"affine|bilinear|bicubic|enhance|_lut|equalize|contrast|posterize|solarize|invert|smoothed|blend|rotate|"
                r"gray_levels|histogram|transpose|erase|normal_|apply_op|CPUGeneratorImpl|mt19937"),
    ("copy", r"memmove|memcpy|memset"),
    ("kernel", r"\[kernel"),
]
print(f"{'view':>12} {'img/s':>7} " + " ".join(f"{g:>9}" for g, _ in GROUPS) + f" {'other':>9}  (% of the CPU samples of the loader and consumer threads)")
for view in views:
    rate = json.load(open(f"{folder}/{view}.json"))["images_per_s"]
    shares = {g: 0.0 for g, _ in GROUPS}
    shares["other"] = total = 0.0
    for line in open(f"{folder}/{view}.txt"):
        m = re.match(r"\s*([\d.]+)%\s+(\S+)\s+(.*)", line)
        if not m or not (m.group(2).startswith("cvtrain-data") or m.group(2) == "cvtrain"):
            continue
        share, what = float(m.group(1)), m.group(3)
        if m.group(2) == "cvtrain" and re.search(r"ld-linux|_dl_|do_lookup|\[kernel", what):
            continue  # the process starting (libraries loading), not the pipeline
        group = next((g for g, pattern in GROUPS if re.search(pattern, what)), "other")
        shares[group] += share
        total += share
    print(f"{view:>12} {rate:>7.0f} " + " ".join(f"{100 * shares[g] / total:>8.1f}%" for g, _ in GROUPS) + f" {100 * shares['other'] / total:>8.1f}%")
PY
