#!/usr/bin/env bash
# Checks the layers' include rules (docs/architecture.md): the core includes no other layer; the
# adapters and the driver only the core (the driver no heavy header either); the front ends (sim,
# server, kubesched) share the driver and never include one another's headers (kubesched, above
# server, may include server).
# Lists every include that breaks a rule; exit 0: none, 1: some. Run by ctest (Layering.Includes).
set -euo pipefail
cd "$(dirname "$0")/.."
bad=0
rule() {  # DIR PATTERN WHY: no file under DIR may have an include line matching PATTERN
  local hits
  hits=$(grep -rnE --include='*.cc' --include='*.h' "^#include [\"<]($2)" "$1" || true)
  if [ -n "$hits" ]; then
    echo "check-layering: $1 must not include $3:" >&2
    echo "$hits" | sed 's/^/  /' >&2
    bad=1
  fi
}
rule src/core 'adapters/|driver/|sim/|server/|kubesched/' 'adapters, driver, sim, server or kubesched'
rule src/driver 'adapters/|sim/|server/|kubesched/|nlohmann/|httplib|yaml-cpp/' \
  'adapters, sim, server, kubesched or heavy headers'
rule src/adapters 'driver/|sim/|server/|kubesched/' 'driver, sim, server or kubesched'
rule src/sim 'server/|kubesched/' 'server or kubesched'
rule src/server 'sim/|kubesched/' 'sim or kubesched (what they share lives in src/driver)'
rule src/kubesched 'sim/' 'sim (what it shares lives in src/driver)'
exit $bad
