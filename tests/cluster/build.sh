#!/usr/bin/env bash
# Builds the test cluster's binaries from upstream source, at the releases pinned in go.mod
# (Kubernetes, etcd) and kwok/go.mod (KWOK), through the Go module proxy:
#   kube-apiserver kube-controller-manager kube-scheduler kubectl   k8s.io/kubernetes
#   etcd                                                            go.etcd.io/etcd/server/v3
#   kwok                                                            sigs.k8s.io/kwok
# into a cache outside the checkout, keyed by the pins:
#   ${ARBITER_KUBE_CACHE:-${XDG_CACHE_HOME:-~/.cache}/arbiter}/kube-v<version>-<hash>/bin
# A fresh clone on the same machine finds them there (and Go's own module and build caches in the
# home directory make a rebuild after a pin change cheaper). Prints the bin directory as its last
# line. Nothing is downloaded when the binaries are cached.
#
#   tests/cluster/build.sh           build if missing, print the bin directory
#   tests/cluster/build.sh --print   print the bin directory, build nothing (exit 1 if missing)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
cd "$HERE"

KUBE_VERSION=$(awk '$1 == "k8s.io/kubernetes" && $2 ~ /^v/ { print $2; exit }' go.mod)
[ -n "$KUBE_VERSION" ] || { echo "build.sh: no k8s.io/kubernetes version in go.mod" >&2; exit 1; }
# The cache key: the pins and sources, and RECIPE, to be bumped when the way of building below
# changes (flags, the list of tools).
RECIPE=1
KEY=$( (cat go.mod go.sum kwok/go.mod kwok/go.sum etcd/main.go; echo "recipe $RECIPE") | sha256sum | cut -c1-12)
CACHE=${ARBITER_KUBE_CACHE:-${XDG_CACHE_HOME:-${HOME:?}/.cache}/arbiter}
OUT=$CACHE/kube-$KUBE_VERSION-$KEY
BIN=$OUT/bin
TOOLS=(etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok)

complete() { [ -f "$OUT/complete" ] && for t in "${TOOLS[@]}"; do [ -x "$BIN/$t" ] || return 1; done; }
if [ "${1:-}" = --print ]; then complete && echo "$BIN" && exit 0; exit 1; fi
if complete; then echo "$BIN"; exit 0; fi

mkdir -p "$CACHE"
exec {lock}> "$OUT.lock"
flock "$lock"  # another build of the same pins (a second clone): wait for it, then reuse
if complete; then echo "$BIN"; exit 0; fi

t0=$SECONDS
TMP=$OUT/bin.tmp.$$
rm -rf "$TMP" "$BIN" "$OUT/complete"
mkdir -p "$TMP"
export CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false" GOTOOLCHAIN=local
# The version the binaries report (/version, kubectl version): what the release build stamps.
minor=${KUBE_VERSION#v1.}; minor=${minor%%.*}
ldflags="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $p.gitVersion=$KUBE_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
done
echo "build.sh: building Kubernetes $KUBE_VERSION, etcd and KWOK into $BIN (the first build on a machine takes long)" >&2
nice go build -p 2 -ldflags "$ldflags" -o "$TMP/" \
  k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl ./etcd >&2
(cd kwok && nice go build -p 2 -ldflags "-s -w" -o "$TMP/" sigs.k8s.io/kwok/cmd/kwok >&2)
mv "$TMP" "$BIN"
echo "$KUBE_VERSION built in $((SECONDS - t0)) s on $(date -u +%FT%TZ)" > "$OUT/complete"
echo "build.sh: built in $((SECONDS - t0)) s" >&2
echo "$BIN"
