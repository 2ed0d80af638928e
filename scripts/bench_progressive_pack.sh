#!/usr/bin/env bash
# What `data pack` gains by storing progressive JPEGs as baseline ones (the same DCT coefficients,
# so the same pixels): the 2,560 photographs of scripts/bench_data.sh saved progressive (as many
# web images are), packed twice by the same binary, transcoded (the default) and byte for byte
# (--keep-progressive); decode, RandomResizedCrop 224, flip, uint8 batches of 256 with 1 worker;
# rounds alternate sides. Also the shards' sizes.
#   scripts/bench_progressive_pack.sh     ROUNDS=5 BATCHES=9 COUNT=2560 to change the defaults
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/bench_data/photographs.sh
source scripts/bench_data/alternate_rounds.sh
# The same pictures as progressive JPEGs (Pillow's progressive=True, quality 90).
"$PYTHON" - "$IMAGES" "$WORK/progressive" <<'PY'
import os, sys
from PIL import Image
source, target = sys.argv[1:]
for folder, _, files in os.walk(source):
    out = os.path.join(target, os.path.relpath(folder, source))
    os.makedirs(out, exist_ok=True)
    for name in files:
        Image.open(os.path.join(folder, name)).save(os.path.join(out, name), quality=90, progressive=True)
PY
./build/apps/cvtrain data pack "$WORK/progressive" "$WORK/transcoded" --shards 4 2>&1 | grep -o "wrote .*"
./build/apps/cvtrain data pack "$WORK/progressive" "$WORK/kept" --shards 4 --keep-progressive > /dev/null 2>&1
echo "$COUNT progressive JPEGs: shards $(du -sh "$WORK/kept" | cut -f1) kept, $(du -sh "$WORK/transcoded" | cut -f1) transcoded;" \
  "1 worker, batch 256, $BATCHES timed batches, $ROUNDS alternating rounds"
alternate_rounds transcoded kept
