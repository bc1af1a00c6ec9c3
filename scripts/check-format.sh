#!/usr/bin/env bash
# Checks that every C++ file under src/ apps/ tests/ bench/ fuzz/ is formatted as .clang-format
# says, with clang-format 14 (scripts/setup.sh installs it); lists the files that are not.
#   scripts/check-format.sh         check (exit 0: all formatted; 1: some are not, or no clang-format 14)
#   scripts/check-format.sh --fix   reformat them in place
set -euo pipefail
cd "$(dirname "$0")/.."
CF=${CLANG_FORMAT:-}
if [ -z "$CF" ]; then
  for c in clang-format-14 clang-format; do
    if command -v "$c" >/dev/null && "$c" --version | grep -q 'version 14\.'; then CF=$c; break; fi
  done
fi
if [ -z "$CF" ]; then
  echo "check-format: clang-format 14 not found (run scripts/setup.sh)" >&2
  exit 1
fi
mapfile -t files < <(find src apps tests bench fuzz \( -name '*.cc' -o -name '*.h' \) -type f | sort)
if [ "${1:-}" = "--fix" ]; then
  "$CF" -i "${files[@]}"
  echo "check-format: formatted ${#files[@]} files"
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  if ! "$CF" --dry-run -Werror "$f" >/dev/null 2>&1; then bad+=("$f"); fi
done
if [ ${#bad[@]} -gt 0 ]; then
  echo "check-format: ${#bad[@]} of ${#files[@]} files are not formatted as .clang-format says:" >&2
  printf '  %s\n' "${bad[@]}" >&2
  echo "fix with: scripts/check-format.sh --fix" >&2
  exit 1
fi
echo "check-format: ${#files[@]} files formatted"
