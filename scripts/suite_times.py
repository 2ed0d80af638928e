#!/usr/bin/env python3
"""The test suite's cost after a CTest run: its wall time, the slowest cases with their seconds,
label (cost class) and processors, the seconds per class, and every case over its class's budget.

Usage: suite_times.py BUILD_DIR JUNIT_XML [--wall SECONDS] [--top N]
  BUILD_DIR   where `ctest` ran (its labels and PROCESSORS are read with --show-only=json-v1)
  JUNIT_XML   what `ctest --output-junit` wrote: each case's seconds in this run
Budgets (seconds a case, per class; docs/development.md says how to keep a case under them) are
BUDGETS below. A case over its budget is flagged, never failed: timing limits live here and in the
benchmarks, not in tests. Exit 0 always, 2 on unreadable input."""
import argparse
import json
import subprocess
import sys
import xml.etree.ElementTree as ElementTree

# Seconds one case of a class may take on a 2-core machine of the CI kind. unit: torch-free, in
# process; torch: in-process tensors and the parity scripts; e2e: the cvtrain binary end to end.
BUDGETS = {"unit": 2.0, "torch": 30.0, "e2e": 60.0}


def case_properties(build_dir):
    """Case name -> (label, processors) as CTest registered them."""
    shown = subprocess.run(["ctest", "--show-only=json-v1"], cwd=build_dir, capture_output=True, text=True, check=True).stdout
    found = {}
    for test in json.loads(shown)["tests"]:
        props = {p["name"]: p["value"] for p in test.get("properties", [])}
        labels = props.get("LABELS", ["?"])
        found[test["name"]] = (labels[0] if labels else "?", int(props.get("PROCESSORS", 1)))
    return found


def case_seconds(junit_path):
    """Case name -> (seconds, status) from CTest's JUnit file."""
    root = ElementTree.parse(junit_path).getroot()
    return {case.get("name"): (float(case.get("time", 0)), case.get("status", "run")) for case in root.iter("testcase")}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("build_dir")
    parser.add_argument("junit")
    parser.add_argument("--wall", type=float, help="the suite's wall-clock seconds, measured by the caller")
    parser.add_argument("--top", type=int, default=20)
    args = parser.parse_args()
    try:
        seconds = case_seconds(args.junit)
        properties = case_properties(args.build_dir)
    except (OSError, ElementTree.ParseError, subprocess.CalledProcessError, json.JSONDecodeError) as error:
        print(f"suite_times: cannot read the run: {error}", file=sys.stderr)
        return 2
    rows = sorted(((s, name, *properties.get(name, ("?", 1)), status) for name, (s, status) in seconds.items()), reverse=True)

    print()
    wall = f"{args.wall:.0f} s wall, " if args.wall else ""
    proc_seconds = sum(s * procs for s, _, _, procs, _ in rows)
    print(f"suite: {len(rows)} cases, {wall}{proc_seconds:.0f} s·proc in all")
    for label in sorted({row[2] for row in rows}):
        mine = [row for row in rows if row[2] == label]
        print(f"  {label:6} {len(mine):4} cases, {sum(s * p for s, _, _, p, _ in mine):7.0f} s·proc"
              f" (budget {BUDGETS.get(label, float('nan')):g} s a case)")
    print(f"\nthe {min(args.top, len(rows))} slowest cases:")
    print(f"  {'s':>7}  {'class':6} {'procs':>5}  case")
    for s, name, label, procs, _ in rows[: args.top]:
        print(f"  {s:7.1f}  {label:6} {procs:>5}  {name}")
    over = [row for row in rows if row[0] > BUDGETS.get(row[2], float("inf"))]
    print(f"\n{len(over)} case(s) over their class's budget" + (":" if over else ""))
    for s, name, label, _, _ in over:
        print(f"  OVER BUDGET {s:.1f} s > {BUDGETS[label]:g} s ({label}): {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
