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
# One awk pass over every include (a shell loop forking sed per line took seconds): the including
# module and the included one from the paths, compared by the table's layers.
table_pairs=$(for m in "${!layer[@]}"; do echo "$m ${layer[$m]}"; done)
broken=$(grep -rn --include='*.h' --include='*.cpp' '#include "cvtrain/' "$root/lib/cvtrain" |
  awk -v root="$root/" -v table="$table_pairs" '
    BEGIN { n = split(table, rows, "\n"); for (i = 1; i <= n; i++) { split(rows[i], f, " "); layer[f[1]] = f[2] } }
    {
      split($0, parts, ":"); file = parts[1]; line = parts[2]
      if (!match(file, /lib\/cvtrain\/[a-z_]+\//)) next
      module = substr(file, RSTART + 12, RLENGTH - 13)
      if (!match($0, /"cvtrain\/[a-z_]+\//)) next
      included = substr($0, RSTART + 9, RLENGTH - 10)
      if (module == included) next
      if (!(included in layer) || !(module in layer) || layer[included] >= layer[module]) {
        sub(root, "", file)
        printf "%s:%s: %s (layer %s) includes %s (layer %s)\n", file, line, module, (module in layer ? layer[module] : "?"),
               included, (included in layer ? layer[included] : "?")
      }
    }')
if [ -n "$broken" ]; then
  echo "$broken"
  offences=$((offences + $(echo "$broken" | wc -l)))
fi

if [ "$offences" -gt 0 ]; then
  echo "$offences include(s) break the layer rule of lib/README.md"
  exit 1
fi
echo "layers hold: ${#layer[@]} modules, every include goes to the same module or a lower layer"
