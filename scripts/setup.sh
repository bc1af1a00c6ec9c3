#!/usr/bin/env bash
# Installs the Debian packages Arbiter needs, only those missing. Idempotent.
# Works as root, or through sudo when not root.
#   scripts/setup.sh                 build and run
#   scripts/setup.sh --with-browser  also Chromium, for the tests that render the HTML reports
set -euo pipefail
PKGS=(cmake ninja-build g++ pkg-config libyaml-cpp-dev nlohmann-json3-dev libcli11-dev
      libsqlite3-dev libgtest-dev libgmock-dev libbenchmark-dev sqlite3 time)
if [ "${1:-}" = "--with-browser" ]; then PKGS+=(chromium); fi
missing=()
for p in "${PKGS[@]}"; do
  [ -n "$p" ] || continue
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PKGS[@]} packages present"
  exit 0
fi
echo "setup: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
