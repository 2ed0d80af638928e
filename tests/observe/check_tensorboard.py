"""Reads a cvtrain run folder's TensorBoard event files with TensorBoard's own reader and compares
every scalar with metrics.jsonl: the same tags (KIND/KEY), steps and values (float32 rounding).

    check_tensorboard.py RUN_FOLDER [RESUMED_AT]

With RESUMED_AT, the run's last start resumed from that step's checkpoint after an earlier start
(metrics.1.jsonl) had logged beyond it: TensorBoard must show the earlier start's records up to
that step and the last start's after it, each step once.
"""
import json
import math
import sys

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator


def main():
    folder = sys.argv[1]
    events = EventAccumulator(folder, size_guidance={"scalars": 0})  # 0: keep every event
    events.Reload()
    read = {tag: {(e.step, i): e.value for i, e in enumerate(events.Scalars(tag))} for tag in events.Tags()["scalars"]}
    expected = {}
    records = [json.loads(line) for line in open(f"{folder}/metrics.jsonl")]
    if len(sys.argv) > 2:
        resumed_at = int(sys.argv[2])
        earlier = [json.loads(line) for line in open(f"{folder}/metrics.1.jsonl")]
        if not any(r["step"] > resumed_at for r in earlier):
            print(f"FAILED: metrics.1.jsonl logged nothing after step {resumed_at}, so nothing is there to drop")
            return 1
        records = [r for r in earlier if r["step"] <= resumed_at] + records
    for record in records:
        for key, value in record.items():
            if key in ("kind", "step") or isinstance(value, str):
                continue
            tag = f"{record['kind']}/{key}"
            values = expected.setdefault(tag, [])
            values.append((record["step"], value))
    failures, compared = [], 0
    if sorted(read) != sorted(expected):
        failures.append(f"tags differ: only in events {sorted(set(read) - set(expected))}, only in metrics.jsonl {sorted(set(expected) - set(read))}")
    for tag, values in expected.items():
        got = sorted(read.get(tag, {}).items(), key=lambda kv: kv[0][1])
        if len(got) != len(values):
            failures.append(f"{tag}: {len(got)} events, {len(values)} lines")
            continue
        for ((step, _), value), (want_step, want) in zip(got, values):
            compared += 1
            if step != want_step:
                failures.append(f"{tag}: step {step} against {want_step}")
            elif want is None:
                if not math.isnan(value):
                    failures.append(f"{tag} at step {step}: {value} where metrics.jsonl has null")
            elif abs(value - want) > 1e-6 * max(1.0, abs(want)):
                failures.append(f"{tag} at step {step}: {value} against {want}")
    print(f"compared {compared} values of {len(expected)} tags")
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures[:20]))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
