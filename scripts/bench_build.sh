#!/usr/bin/env bash
# What a developer waits for, this checkout against another commit in the same run: the rebuild
# after a one-line change in lib/cvtrain/train/trainer.cpp (a new constant, so ccache cannot serve
# it; library and binary relinked), and with --tests the whole test suite's time per CTest label.
#   scripts/bench_build.sh [--tests] [REV]    REV (default HEAD~1) is built in a git worktree beside
#                                             this one; ccache serves what the two share
#   ROUNDS=3                                  one-line rebuilds per side, alternating
set -euo pipefail
cd "$(dirname "$0")/.."
TESTS=0
[ "${1:-}" = --tests ] && { TESTS=1; shift; }
REV=${1:-HEAD~1}
ROUNDS=${ROUNDS:-3}
JOBS=${CVTRAIN_JOBS:-2}
bash scripts/setup.sh > /dev/null

OTHER=$(mktemp -d /tmp/cvtrain-bench-build.XXXXXX)
cleanup() { git worktree remove --force "$OTHER" > /dev/null 2>&1 || rm -rf "$OTHER"; }
trap cleanup EXIT
git worktree add --detach "$OTHER" "$REV" > /dev/null 2>&1
echo "building $REV in $OTHER ..."
BUILD_DIR=build bash "$OTHER/scripts/setup.sh" > /dev/null

# Rebuild time (seconds) of `checkout` after one new line at the end of trainer.cpp; restores the file.
one_line_rebuild() {
  local checkout=$1 file=$1/lib/cvtrain/train/trainer.cpp saved
  saved=$(mktemp)
  cp "$file" "$saved"
  echo "namespace { [[maybe_unused]] constexpr int kBenchOneLineChange = $RANDOM$RANDOM; }" >> "$file"
  local start end
  start=$(date +%s.%N)
  ninja -C "$checkout/build" -j "$JOBS" apps/cvtrain > /dev/null
  end=$(date +%s.%N)
  cp "$saved" "$file"
  rm -f "$saved"
  ninja -C "$checkout/build" -j "$JOBS" apps/cvtrain > /dev/null  # back to the committed state
  awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }'
}

echo "one-line change in train/trainer.cpp, rebuild and relink of cvtrain (s):"
for round in $(seq "$ROUNDS"); do
  here=$(one_line_rebuild "$PWD")
  there=$(one_line_rebuild "$OTHER")
  printf "  round %d: this checkout %6.1f   %s %6.1f   ratio %.2f\n" "$round" "$here" "$REV" "$there" "$(awk -v a="$here" -v b="$there" 'BEGIN { print a / b }')"
done

if [ "$TESTS" = 1 ]; then
  for side in "$PWD" "$OTHER"; do
    echo "test suite of $( [ "$side" = "$PWD" ] && echo "this checkout" || echo "$REV" ), seconds per label (ctest -j $JOBS):"
    ninja -C "$side/build" -j "$JOBS" > /dev/null  # the test programs (setup.sh builds cvtrain alone)
    (cd "$side/build" && ctest -j "$JOBS" 2>&1 | sed -n '/Label Time Summary/,/^$/p;/tests passed/p;/Total Test time/p' | sed 's/^/  /')
  done
fi
