#!/usr/bin/env bash
# What checking every shard sample's CRC-32C costs the input pipeline: the same 2,560 photographs
# as scripts/bench_data.sh (about 500x375, quality 90), packed once, read by the same binary as
# version-2 shards (checked as read) and as a version-1 copy of the same bytes (not checked);
# decode, RandomResizedCrop 224, flip, uint8 batches of 256 with 1 worker; rounds alternate sides.
#   scripts/bench_shard_checksum.sh     ROUNDS=5 BATCHES=9 COUNT=2560 to change the defaults
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/bench_data/photographs.sh
ROUNDS=${ROUNDS:-5}
BATCHES=${BATCHES:-9}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
./build/apps/cvtrain data pack "$IMAGES" "$WORK/checked" --shards 4 > /dev/null
"$PYTHON" scripts/bench_data/shards_without_checksums.py "$WORK/checked" "$WORK/unchecked"
echo "$COUNT JPEGs ($(du -sh "$WORK/checked" | cut -f1) of shards); 1 worker, batch 256, $BATCHES timed batches, $ROUNDS alternating rounds"
for round in $(seq "$ROUNDS"); do
  for side in checked unchecked; do
    echo "$side $(./build/apps/cvtrain data bench "$WORK/$side" --workers 1 --batch 256 --batches "$BATCHES" --json)"
  done
done | "$PYTHON" -c '
import json, sys, statistics
rates = {"checked": [], "unchecked": []}
for line in sys.stdin:
    side, blob = line.split(" ", 1)
    rates[side].append(json.loads(blob)["images_per_s"])
for side, r in rates.items():
    print(f"{side:9} images/s  min {min(r):7.1f}  median {statistics.median(r):7.1f}  max {max(r):7.1f}")
ratio = statistics.median(rates["checked"]) / statistics.median(rates["unchecked"])
print(f"checked / unchecked (medians): {ratio:.3f}")
'
