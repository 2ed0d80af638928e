#!/usr/bin/env bash
# What the always-on step breakdown costs: the same training run with observe.breakdown true and
# false, alternating, in one session on one machine; prints the seconds per epoch of each round
# and the median ratio on/off (1.00 = free; the issue's budget is 1.01).
#   scripts/bench_profiling.sh [KEY=VALUE ...]    overrides for both sides (default: the quickstart
#                                                 on 12,800 Fashion-MNIST samples, one epoch)
#   ROUNDS=5                                      pairs of runs
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh > /dev/null
ROUNDS=${ROUNDS:-5}
OUT=$(mktemp -d /tmp/cvtrain-bench-profiling.XXXXXX)
trap 'rm -rf "$OUT"' EXIT
overrides=(data.max_samples=12800 data.val= train.epochs=1 "$@")

# Seconds of training (the epoch record's epoch_s) of one run.
epoch_seconds() {
  rm -rf "${OUT:?}/$1"
  ./build/apps/cvtrain --recipe recipes/quickstart.yaml "${overrides[@]}" "observe.breakdown=$1" output="$OUT/$1" > "$OUT/$1.log" 2>&1 ||
    { tail -5 "$OUT/$1.log"; exit 1; }
  sed -n 's/.*"kind": "epoch".*"epoch_s": \([0-9.e+-]*\).*/\1/p' "$OUT/$1/metrics.jsonl" | tail -1
}

on=() off=()
for round in $(seq "$ROUNDS"); do
  on+=("$(epoch_seconds true)")
  off+=("$(epoch_seconds false)")
  echo "round $round: breakdown on ${on[-1]} s, off ${off[-1]} s"
done
python3 - "${on[*]}" "${off[*]}" <<'PY'
import statistics, sys
on, off = ([float(v) for v in arg.split()] for arg in sys.argv[1:3])
ratios = [a / b for a, b in zip(on, off)]
print(f"median seconds per epoch: on {statistics.median(on):.3f}, off {statistics.median(off):.3f}")
print(f"ratio on/off per round: {' '.join(f'{r:.3f}' for r in ratios)}; median {statistics.median(ratios):.3f}")
PY
