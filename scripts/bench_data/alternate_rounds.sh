# Sourced by the benchmarks that time one input pipeline on two sets of shards, A against B:
# `alternate_rounds A B` runs `cvtrain data bench` (training view, 1 worker, batch 256, BATCHES
# timed batches) on $WORK/A and $WORK/B, alternating, ROUNDS rounds, then prints each side's
# min / median / max images/s and the ratio of the medians, A / B. Sets up WORK, a scratch folder
# removed on exit.
ROUNDS=${ROUNDS:-5}
BATCHES=${BATCHES:-9}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

alternate_rounds() {
  local a=$1 b=$2
  for round in $(seq "$ROUNDS"); do
    for side in "$a" "$b"; do
      echo "$side $(./build/apps/cvtrain data bench "$WORK/$side" --workers 1 --batch 256 --batches "$BATCHES" --json)"
    done
  done | "$PYTHON" -c '
import json, sys, statistics
a, b = sys.argv[1:]
rates = {a: [], b: []}
for line in sys.stdin:
    side, blob = line.split(" ", 1)
    rates[side].append(json.loads(blob)["images_per_s"])
for side, r in rates.items():
    print(f"{side:10} images/s  min {min(r):7.1f}  median {statistics.median(r):7.1f}  max {max(r):7.1f}")
print(f"{a} / {b} (medians): {statistics.median(rates[a]) / statistics.median(rates[b]):.3f}")
' "$a" "$b"
}
