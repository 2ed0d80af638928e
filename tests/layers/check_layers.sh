#!/usr/bin/env bash
# The layer rule of lib/README.md, checked on the code: a module of lib/cvtrain includes only its
# own headers and those of modules in lower layers (siblings never include each other), and every
# module folder is in the table. Prints each offence with file:line; exits 1 if there is any.
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
table="$root/lib/README.md"

declare -A layer
while read -r module level; do layer[$module]=$level; done < <(sed -n 's/^| `\([a-z_]*\)` | \([0-9]\) |.*/\1 \2/p' "$table")
[ "${#layer[@]}" -gt 0 ] || { echo "no layer table (| \`module\` | N | ...) in $table"; exit 1; }

offences=0
for dir in "$root"/lib/cvtrain/*/; do
  module=$(basename "$dir")
  if [ -z "${layer[$module]:-}" ]; then
    echo "lib/cvtrain/$module: a module missing from the layer table of lib/README.md"
    offences=$((offences + 1))
  fi
done
while IFS=: read -r file line text; do
  module=$(echo "$file" | sed -n 's#.*lib/cvtrain/\([a-z_]*\)/.*#\1#p')
  included=$(echo "$text" | sed -n 's#.*"cvtrain/\([a-z_]*\)/.*#\1#p')
  [ -n "$module" ] && [ -n "$included" ] && [ "$module" != "$included" ] || continue
  if [ -z "${layer[$included]:-}" ] || [ -z "${layer[$module]:-}" ] || [ "${layer[$included]}" -ge "${layer[$module]}" ]; then
    echo "${file#"$root"/}:$line: $module (layer ${layer[$module]:-?}) includes $included (layer ${layer[$included]:-?})"
    offences=$((offences + 1))
  fi
done < <(grep -rn --include='*.h' --include='*.cpp' '#include "cvtrain/' "$root/lib/cvtrain")

if [ "$offences" -gt 0 ]; then
  echo "$offences include(s) break the layer rule of lib/README.md"
  exit 1
fi
echo "layers hold: ${#layer[@]} modules, every include goes to the same module or a lower layer"
