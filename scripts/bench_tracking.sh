#!/usr/bin/env bash
# What experiment tracking costs training: the same run (the quickstart recipe, shortened) with no
# tracking, against an MLflow server that answers every request only after 2 s
# (scripts/bench_tracking/slow_mlflow.py), and against an address where no server listens,
# alternating, ROUNDS rounds each. Compares the step time of metrics.jsonl's lines (what the
# training thread spends per step: each round's median, then the median and the best of the
# rounds, as ratios to no tracking) and the whole command's wall time (which adds the bounded wait
# at the end, when the last points, the artifacts and the status go).
#   scripts/bench_tracking.sh          ROUNDS=6 DELAY=2 to change the defaults
set -euo pipefail
cd "$(dirname "$0")/.."
CVTRAIN_HOME=${CVTRAIN_HOME:-$HOME/.cache/cvtrain}
PYTHON=${PYTHON:-$CVTRAIN_HOME/venv/bin/python}
CVTRAIN=${CVTRAIN:-build/apps/cvtrain}
ROUNDS=${ROUNDS:-6}
DELAY=${DELAY:-2}
WORK=$(mktemp -d)
PORT=$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$PYTHON" scripts/bench_tracking/slow_mlflow.py "$PORT" "$DELAY" &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; rm -rf "$WORK"' EXIT
DOWN=$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')  # closed again: nothing listens
COMMON=(--recipe recipes/quickstart.yaml data.max_samples=16384 data.max_val_samples=512 train.epochs=1 train.log_every=4
        track.mlflow.experiment=bench)
echo "quickstart, 16384 samples (128 steps of 128), a metrics line every 4 steps; server delay ${DELAY} s per request; $(nproc) cores"

run() {  # SIDE ROUND URI: prints "SIDE median_step_s wall_s"
  local out="$WORK/$1-$2" start end
  start=$(date +%s.%N)
  "$CVTRAIN" "${COMMON[@]}" output="$out" track.mlflow.uri="$3" > "$out.log" 2>&1
  end=$(date +%s.%N)
  "$PYTHON" - "$out/metrics.jsonl" "$1" "$start" "$end" <<'PY'
import json, statistics, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if '"kind": "train"' in l]
steps = [l["step_s"] for l in lines[1:]]  # the first interval holds the start-up
print(sys.argv[2], statistics.median(steps), float(sys.argv[4]) - float(sys.argv[3]))
PY
}

RESULTS="$WORK/results"
declare -A URI=([none]=off [slow]="http://127.0.0.1:$PORT" [down]="http://127.0.0.1:$DOWN")
SIDES=(none slow down)
for round in $(seq 1 "$ROUNDS"); do  # each round starts with the next side: no side always runs first
  for i in 0 1 2; do
    side=${SIDES[$(((round + i) % 3))]}
    run "$side" "$round" "${URI[$side]}" >> "$RESULTS"
  done
done
"$PYTHON" - "$RESULTS" "$DELAY" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
side = lambda name, i: [float(r[i]) for r in rows if r[0] == name]
base_median, base_best = statistics.median(side("none", 1)), min(side("none", 1))
names = {"none": "no tracking", "slow": f"server answering in {sys.argv[2]} s", "down": "no server listening"}
print(f"{'':28} step ms: median  best  (rounds)                    ratio to none: median  best   wall s")
for name, label in names.items():
    steps = side(name, 1)
    print(f"{label:28} {statistics.median(steps) * 1000:14.1f} {min(steps) * 1000:5.1f}  ({', '.join(f'{s * 1000:.1f}' for s in steps)})"
          f"{statistics.median(steps) / base_median:>22.3f} {min(steps) / base_best:5.3f} {statistics.median(side(name, 2)):8.1f}")
PY
