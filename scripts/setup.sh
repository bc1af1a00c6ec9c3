#!/usr/bin/env bash
# Installs the Debian packages Arbiter needs, only those missing. Idempotent.
# Works as root, or through sudo when not root.
#   scripts/setup.sh                 build and run
#   scripts/setup.sh --with-browser  also Chromium, for the tests that render the HTML reports,
#                                    and Node.js + npm for the dashboard's browser tests
#                                    (tests/browser: npm ci of playwright-core)
# Quiet: one line when everything is present, two when packages are installed; apt's and dpkg's
# own output goes to a log file, printed (its end) only when the installation fails.
# ARBITER_APT_GET replaces apt-get (tests/apps/scripts_test.cc runs this script with a fake one).
set -euo pipefail
PKGS=(cmake ninja-build g++ pkg-config libyaml-cpp-dev nlohmann-json3-dev libcli11-dev
      libsqlite3-dev libgtest-dev libgmock-dev libbenchmark-dev sqlite3 time
      libcpp-httplib-dev libssl-dev libpq-dev libjemalloc-dev curl clang-format-14 ccache)
# kubectl for the `arbiter serve` tests: the machine's own (1.32) when present, else Debian's
# kubernetes-client (1.20; the tests then fail, by design, on the version check). A kubectl older
# than 1.23 is named on stderr (check_kubectl) without failing: the build and most tests work.
command -v kubectl >/dev/null 2>&1 || PKGS+=(kubernetes-client)
check_kubectl() {
  command -v kubectl >/dev/null 2>&1 || return 0
  local minor
  minor=$(kubectl version --client -o json 2>/dev/null |
          sed -n 's/.*"minor": *"\([0-9]*\).*/\1/p' | head -n 1)
  if [ -n "$minor" ] && [ "$minor" -lt 23 ]; then
    echo "setup: kubectl 1.$minor is too old for \`arbiter serve\` (demo.sh and the serve tests use" \
         "kubectl 1.32; nothing before 1.23 is expected to work): install a newer one from" \
         "https://kubernetes.io/docs/tasks/tools/ ahead of it in PATH" >&2
  fi
}
if [ "${1:-}" = "--with-browser" ]; then
  PKGS+=(chromium nodejs)
  # Debian's npm, unless npm came with nodejs (NodeSource's package bundles it).
  command -v npm >/dev/null 2>&1 || PKGS+=(npm)
fi
if [ -n "${ARBITER_SETUP_EXTRA_PKGS:-}" ]; then read -r -a extra <<<"$ARBITER_SETUP_EXTRA_PKGS"; PKGS+=("${extra[@]}"); fi
APT_GET=${ARBITER_APT_GET:-apt-get}
missing=()
for p in "${PKGS[@]}"; do
  [ -n "$p" ] || continue
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PKGS[@]} packages present"
  check_kubectl
  exit 0
fi
SUDO=()
if [ "$(id -u)" -ne 0 ] && [ -z "${ARBITER_APT_GET:-}" ]; then SUDO=(sudo); fi
log=$(mktemp "${TMPDIR:-/tmp}/arbiter-setup.XXXXXX.log")
echo "setup: installing ${missing[*]} (apt output in $log)"
start=$SECONDS
if ! { "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive "$APT_GET" update -qq &&
       "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive "$APT_GET" install -y -qq --no-install-recommends \
         "${missing[@]}"; } >"$log" 2>&1; then
  echo "setup: installing failed; the end of $log:" >&2
  tail -n 25 "$log" >&2
  exit 1
fi
n=${#missing[@]}
echo "setup: installed $n package$([ "$n" -eq 1 ] || echo s) in $((SECONDS - start)) s"
rm -f "$log"
check_kubectl
