#!/usr/bin/env bash
# Behaviour check for refactorings (issue #37): runs `scalescope analyze --out` (JSON, scalescope.analyze/1) with two
# binaries on the same inputs and says, per input, whether the results are identical.
#
#   bench/compare_analyze.sh OLD_BINARY NEW_BINARY
#
# Inputs: every case folder of tests/fixtures (a folder with files of its own: all of them but README.md, in one
# call, as the tests pass them) and every case folder of ../shared/corpus/cases (all files but case.md; skipped with
# a message when ../shared is absent). Each call runs from the repository root with the same relative paths and the
# same --out path, so paths in the JSON agree.
#
# Normalisation: fields that legitimately differ between runs or builds are found, not guessed — OLD runs every
# input twice, and every JSON leaf that differs between those two runs is blanked in all results of that input
# before the comparison; so are leaves whose key names a build stamp (version_stamp, build_stamp, commit, built,
# generated_at) if any appear. The exit status of each call is compared too. Terminal output is compared and
# reported, but only the JSON and the exit status decide.
#
# IGNORE_KEYS="k1 k2": top-level keys left out of both results, for a section one of the binaries adds on purpose
# (e.g. IGNORE_KEYS=inputs between a binary before issue #40 and one after it).
#
# Exit status: 0 when every input is identical, 1 when any differs, 2 on a usage error. Needs jq.
set -u

if [[ $# -ne 2 ]]; then
  echo "usage: $0 OLD_BINARY NEW_BINARY" >&2
  exit 2
fi
old=$(realpath "$1") new=$(realpath "$2")
for b in "$old" "$new"; do
  [[ -x $b ]] || { echo "$0: $b is not an executable" >&2; exit 2; }
done
command -v jq >/dev/null || { echo "$0: needs jq" >&2; exit 2; }

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 2
work=$(mktemp -d "${TMPDIR:-/tmp}/compare_analyze.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Case folders: "<label>\t<file> <file> …" (paths relative to the repository root).
cases=()
add_cases() {  # $1: top folder, $2: file name to leave out, $3: the least depth of a case folder
  local dir files
  while IFS= read -r dir; do
    files=$(find "$dir" -maxdepth 1 -type f ! -name "$2" | LC_ALL=C sort | tr '\n' ' ')
    [[ -n $files ]] && cases+=("$dir"$'\t'"$files")
  done < <(find "$1" -mindepth "${3:-0}" -type d | LC_ALL=C sort)
}
add_cases tests/fixtures README.md
if [[ -d ../shared/corpus/cases ]]; then
  add_cases ../shared/corpus/cases case.md 1  # not cases/ itself (its INDEX.md)
else
  echo "note: ../shared/corpus/cases not found: the shared corpus's cases are skipped"
fi

# run BINARY TAG FILES…: the JSON (or "" when none was written) in $work/TAG.json, exit status in $work/TAG.rc,
# terminal output in $work/TAG.txt. The --out path is the same for every run.
run() {
  local bin=$1 tag=$2
  shift 2
  rm -f "$work/out.json"
  "$bin" analyze --out "$work/out.json" "$@" >"$work/$tag.txt" 2>&1
  echo $? >"$work/$tag.rc"
  if [[ -f $work/out.json ]]; then mv "$work/out.json" "$work/$tag.json"; else : >"$work/$tag.json"; fi
}

# Leaf paths (as jq path arrays, one per line) whose values differ between two JSON files.
differing_paths() {
  jq -n -c --slurpfile a "$1" --slurpfile b "$2" '
    [$a[0], $b[0]] as [$x, $y]
    | ([$x | paths(scalars)] + [$y | paths(scalars)]) | unique[]
    | . as $p | select(($x | getpath($p)) != ($y | getpath($p)))'
}

# normalise FILE PATHSFILE: the JSON, sorted keys, with every path of PATHSFILE and every stamp-like key blanked.
normalise() {
  [[ -s $1 ]] || { echo "(no JSON written)"; return; }
  jq -S --slurpfile drop <(jq -c -s '.' "$2") --arg ignore "${IGNORE_KEYS:-}" '
    reduce ($ignore | split(" ") | map(select(length > 0))[]) as $k (.; del(.[$k]))
    | reduce ($drop[0][]) as $p (.; try setpath($p; "<varies between runs>") catch .)
    | walk(if type == "object" then with_entries(
        if (.key | test("^(version_stamp|build_stamp|commit|built|generated_at)$")) then .value = "<build stamp>"
        else . end) else . end)' "$1"
}

identical=0 differing=0 n=0
for c in "${cases[@]}"; do
  label=${c%%$'\t'*}
  read -r -a files <<<"${c#*$'\t'}"
  n=$((n + 1))
  run "$old" old1 "${files[@]}"
  run "$old" old2 "${files[@]}"
  run "$new" new "${files[@]}"
  : >"$work/varies"
  if [[ -s $work/old1.json && -s $work/old2.json ]]; then
    differing_paths "$work/old1.json" "$work/old2.json" >"$work/varies"
  fi
  normalise "$work/old1.json" "$work/varies" >"$work/old.norm"
  normalise "$work/new.json" "$work/varies" >"$work/new.norm"
  why=()
  cmp -s "$work/old.norm" "$work/new.norm" || why+=("JSON differs")
  cmp -s "$work/old1.rc" "$work/new.rc" || why+=("exit status $(cat "$work/old1.rc") → $(cat "$work/new.rc")")
  note=""
  [[ -s $work/varies ]] && note=" ($(wc -l <"$work/varies") field(s) vary between runs, blanked)"
  cmp -s "$work/old1.txt" "$work/new.txt" || note+=" (terminal output differs)"
  if [[ ${#why[@]} -eq 0 ]]; then
    identical=$((identical + 1))
    echo "identical  $label$note"
  else
    differing=$((differing + 1))
    echo "DIFFERENT  $label: ${why[*]}$note"
    diff -u "$work/old.norm" "$work/new.norm" | head -40 | sed 's/^/    /'
  fi
done

echo "compare_analyze: $n input(s): $identical identical, $differing different"
[[ $differing -eq 0 ]]
