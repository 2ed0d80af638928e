#!/usr/bin/env bash
# Sets up (scripts/setup.sh, which builds what training needs), builds the test programs and runs the
# whole test suite through CTest, then prints its wall time, its slowest cases and every case over its
# class's time budget (scripts/suite_times.py). Extra arguments go to ctest, e.g. `scripts/test.sh -L
# unit` for the torch-free tests only.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
BUILD_DIR=${BUILD_DIR:-build}
JOBS=${CVTRAIN_JOBS:-2}
# Only ninja's progress lines are dropped; a failed build fails the command (pipefail).
ninja -C "$BUILD_DIR" -j "$JOBS" | { grep -v "^\[" || true; }
cd "$BUILD_DIR"
start=$SECONDS
status=0
ctest --output-on-failure -j "$JOBS" --output-junit Testing/suite.xml "$@" || status=$?
python3 ../scripts/suite_times.py . Testing/suite.xml --wall $((SECONDS - start)) || true
exit $status
