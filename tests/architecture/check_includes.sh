#!/usr/bin/env bash
# The include rule of docs/architecture.md: every `#include "…"` under src/ and tools/ goes down the flow.
# The rooms and what each may include are read from the ```rooms block of docs/architecture.md; this script fails
#  - on an include of a room (or header) that the including file's room may not include;
#  - on any include of tools/ from src/;
#  - when a folder of src/ is not a room of the doc, or a room of the doc (but tools) is not a folder of src/.
# An include whose first component is not a room (a file beside the includer, a system header in quotes) is not
# checked.   check_includes.sh [REPO_ROOT]   (default: two levels above this script)
set -uo pipefail -o noglob
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$root" || exit 2
doc=docs/architecture.md
[[ -f $doc ]] || { echo "no $doc"; exit 1; }

declare -A may
while IFS= read -r line; do
  room=${line%%:*}
  room=${room//[[:space:]]/}
  allowed=${line#*:}
  read -r -a words <<<"$allowed"
  [[ -n $room ]] && may[$room]=" ${words[*]} "
done < <(awk '/^```rooms/{on=1; next} /^```/{on=0} on' "$doc")
[[ ${#may[@]} -gt 0 ]] || { echo "$doc has no \`\`\`rooms block"; exit 1; }

status=0
src_rooms=" "
while IFS= read -r d; do
  d=${d#src/}
  src_rooms+="$d "
  [[ -n ${may[$d]+x} ]] || { echo "src/$d is not a room of $doc"; status=1; }
done < <(find src -mindepth 1 -maxdepth 1 -type d | LC_ALL=C sort)
for r in "${!may[@]}"; do
  [[ $r == tools || -d src/$r ]] || { echo "room '$r' of $doc is not a folder of src/"; status=1; }
done

checked=0
re='^([^:]+):([0-9]+):[[:space:]]*#[[:space:]]*include[[:space:]]*"([^"]+)"'
while IFS= read -r hit; do
  [[ $hit =~ $re ]] || continue
  f=${BASH_REMATCH[1]} n=${BASH_REMATCH[2]} inc=${BASH_REMATCH[3]}
  if [[ $f == tools/* ]]; then room=tools; else room=${f#src/}; room=${room%%/*}; fi
  allowed=${may[$room]:-}
  first=${inc%%/*}
  [[ $first == "$inc" ]] && continue                       # beside the includer
  checked=$((checked + 1))
  if [[ $first == tools ]]; then
    [[ $room == tools ]] && continue
    echo "$f:$n: includes \"$inc\": nothing under src/ includes tools/"; status=1; continue
  fi
  [[ $src_rooms == *" $first "* ]] || continue              # not a room: not ours to check
  [[ $first == "$room" || $allowed == *" * "* || $allowed == *" $first "* || $allowed == *" $inc "* ]] && continue
  echo "$f:$n: includes \"$inc\": room '$room' may include only:$allowed(docs/architecture.md)"
  status=1
done < <(grep -rnE --include='*.h' --include='*.hpp' --include='*.cpp' --include='*.cc' --include='*.cu' \
              --include='*.cuh' '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' src tools | LC_ALL=C sort)

echo "$checked include(s) between rooms checked against ${#may[@]} rooms"
exit $status
