#!/usr/bin/env bash
# Sets up (scripts/setup.sh) and runs the whole test suite through CTest. Extra arguments go to
# ctest, e.g. `scripts/test.sh -L unit` for the torch-free tests only.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cd "${BUILD_DIR:-build}"
ctest --output-on-failure -j "${CVTRAIN_JOBS:-2}" "$@"
