#!/usr/bin/env bash
# What checking every shard sample's CRC-32C costs the input pipeline: the same 2,560 photographs
# as scripts/bench_data.sh (about 500x375, quality 90), packed once, read by the same binary as
# version-2 shards (checked as read) and as a version-1 copy of the same bytes (not checked);
# decode, RandomResizedCrop 224, flip, uint8 batches of 256 with 1 worker; rounds alternate sides.
#   scripts/bench_shard_checksum.sh     ROUNDS=5 BATCHES=9 COUNT=2560 to change the defaults
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/bench_data/photographs.sh
source scripts/bench_data/alternate_rounds.sh
./build/apps/cvtrain data pack "$IMAGES" "$WORK/checked" --shards 4 > /dev/null
"$PYTHON" scripts/bench_data/shards_without_checksums.py "$WORK/checked" "$WORK/unchecked"
echo "$COUNT JPEGs ($(du -sh "$WORK/checked" | cut -f1) of shards); 1 worker, batch 256, $BATCHES timed batches, $ROUNDS alternating rounds"
alternate_rounds checked unchecked
