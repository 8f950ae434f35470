#!/usr/bin/env bash
# Builds the tools kubediff is compared with on the living cluster
# (kubewatch, the last release published as a Go module) into .testenv/bin.
# Kept in a cache outside the checkout, keyed by this module's files.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out="$here/../../.testenv/bin"
key=$(cat "$here/go.mod" "$here/go.sum" "$here/build.sh" | sha256sum | cut -c1-16)
cache="${XDG_CACHE_HOME:-$HOME/.cache}/kubediff/peers-$key"
if [ ! -x "$cache/kubewatch" ]; then
  echo "building kubewatch (about a minute, once)..." >&2
  rm -rf "$cache.tmp" && mkdir -p "$cache.tmp"
  (cd "$here" && go build -trimpath -o "$cache.tmp/kubewatch" github.com/bitnami-labs/kubewatch)
  rm -rf "$cache" && mv "$cache.tmp" "$cache"
fi
mkdir -p "$out"
ln -f "$cache/kubewatch" "$out/kubewatch" 2>/dev/null || cp -f "$cache/kubewatch" "$out/kubewatch"
