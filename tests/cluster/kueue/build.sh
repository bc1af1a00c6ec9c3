#!/usr/bin/env bash
# Builds Kueue's manager (sigs.k8s.io/kueue/cmd/kueue) from upstream source at the release pinned
# in go.mod, through the Go module proxy, with exactly the dependencies that release pins (its own
# module: Kueue's k8s.io libraries are not those of ../go.mod, and this directory is not part of
# ../build.sh's cache key, so adding or moving Kueue never rebuilds Kubernetes). Into a cache
# outside the checkout, keyed by this module's pins:
#   ${ARBITER_KUBE_CACHE:-${XDG_CACHE_HOME:-~/.cache}/arbiter}/kueue-v<version>-<hash>/
#     bin/kueue   the manager
#     crd/*.yaml  the release's CRDs (config/components/crd/bases of the module)
#     webhook/manifests.yaml  its webhook configurations (config/components/webhook)
# Prints the output directory as its last line. Nothing is downloaded when it is cached.
#
#   tests/cluster/kueue/build.sh           build if missing, print the directory
#   tests/cluster/kueue/build.sh --print   print the directory, build nothing (exit 1 if missing)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
cd "$HERE"

VERSION=$(awk '$1 == "sigs.k8s.io/kueue" && $2 ~ /^v/ { print $2; exit }' go.mod)
[ -n "$VERSION" ] || { echo "kueue/build.sh: no sigs.k8s.io/kueue version in go.mod" >&2; exit 1; }
RECIPE=1  # bump when the way of building below changes
KEY=$( (cat go.mod go.sum; echo "recipe $RECIPE") | sha256sum | cut -c1-12)
CACHE=${ARBITER_KUBE_CACHE:-${XDG_CACHE_HOME:-${HOME:?}/.cache}/arbiter}
OUT=$CACHE/kueue-$VERSION-$KEY

complete() { [ -f "$OUT/complete" ] && [ -x "$OUT/bin/kueue" ] && [ -f "$OUT/crd/kueue.x-k8s.io_clusterqueues.yaml" ] \
  && [ -f "$OUT/webhook/manifests.yaml" ]; }
if [ "${1:-}" = --print ]; then complete && echo "$OUT" && exit 0; exit 1; fi
if complete; then echo "$OUT"; exit 0; fi

mkdir -p "$CACHE"
exec {lock}> "$OUT.lock"
flock "$lock"  # another build of the same pin: wait for it, then reuse
if complete; then echo "$OUT"; exit 0; fi

t0=$SECONDS
TMP=$OUT.tmp.$$
rm -rf "$TMP" "$OUT"
mkdir -p "$TMP/bin" "$TMP/crd" "$TMP/webhook"
export CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false" GOTOOLCHAIN=local
echo "kueue/build.sh: building Kueue $VERSION into $OUT (the first build on a machine takes long)" >&2
SRC=$(go mod download -json sigs.k8s.io/kueue | awk -F'"' '$2 == "Dir" { print $4 }')
[ -d "$SRC/config/components/crd/bases" ] || { echo "kueue/build.sh: no CRDs in $SRC" >&2; exit 1; }
cp "$SRC"/config/components/crd/bases/*.yaml "$TMP/crd/"
cp "$SRC"/config/components/webhook/manifests.yaml "$TMP/webhook/"
v=sigs.k8s.io/kueue/pkg/version
nice go build -p 2 -ldflags "-s -w -X $v.GitVersion=$VERSION" -o "$TMP/bin/kueue" sigs.k8s.io/kueue/cmd/kueue >&2
mv "$TMP" "$OUT"
echo "$VERSION built in $((SECONDS - t0)) s on $(date -u +%FT%TZ)" > "$OUT/complete"
echo "kueue/build.sh: built in $((SECONDS - t0)) s" >&2
echo "$OUT"
