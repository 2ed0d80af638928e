#!/usr/bin/env bash
# The code's shape at one or more commits, side by side: lines per module of lib/cvtrain (and
# apps/), README.md's size, the largest source files, and the step and loop files' lengths.
# Read from git, so no checkout or build is needed.
#   scripts/code_shape.sh [REV ...]     default: HEAD
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || set -- HEAD

lines_of() {  # REV PATH...: lines of the C++ files under the paths at REV
  local rev=$1; shift
  git ls-tree -r --name-only "$rev" -- "$@" | grep -E '\.(h|cpp)$' | while read -r f; do git show "$rev:$f" | wc -l; done |
    awk '{ s += $1 } END { print s + 0 }'
}

for rev in "$@"; do
  echo "== $rev ($(git log -1 --format='%h %ad' --date=short "$rev"))"
  echo "  lines per module:"
  for dir in $(git ls-tree -d --name-only "$rev" lib/cvtrain/ | sort) apps/cvtrain; do
    printf "    %-22s %6s\n" "${dir#lib/cvtrain/}" "$(lines_of "$rev" "$dir")"
  done
  printf "  README.md: %s bytes, %s lines\n" "$(git show "$rev:README.md" | wc -c)" "$(git show "$rev:README.md" | wc -l)"
  echo "  largest source files (lines):"
  git ls-tree -r --name-only "$rev" -- lib apps | grep -E '\.(h|cpp)$' | while read -r f; do
    printf "%s %s\n" "$(git show "$rev:$f" | wc -l)" "$f"
  done | sort -rn | head -3 | sed 's/^/    /'
  for f in lib/cvtrain/train/train_step.cpp lib/cvtrain/train/trainer.cpp; do
    printf "  %s: %s lines\n" "$f" "$(git show "$rev:$f" 2>/dev/null | wc -l)"
  done
done
