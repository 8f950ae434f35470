#!/usr/bin/env bash
# Builds the tools kubediff is compared with on the living cluster
# (kubewatch, the last release published as a Go module) into .testenv/bin.
# Kept in a cache outside the checkout, keyed by this module's files.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out="$here/../../.testenv/bin"
key=$(cat "$here/go.mod" "$here/go.sum" "$here/build.sh" | sha256sum | cut -c1-16)
cache="${XDG_CACHE_HOME:-$HOME/.cache}/kubediff/peers-$key"
# Two builds at once take turns (see hack/testenv/build.sh).
mkdir -p "$(dirname "$cache")"
exec 9>"$cache.lock"
flock 9
if [ ! -x "$cache/kubewatch" ]; then
  echo "building kubewatch (about a minute, once)..." >&2
  tmp="$cache.tmp.$$"
  trap 'rm -rf "$tmp"' EXIT
  rm -rf "$tmp" && mkdir -p "$tmp"
  (cd "$here" && go build -trimpath -o "$tmp/kubewatch" github.com/bitnami-labs/kubewatch)
  rm -rf "$cache" && mv "$tmp" "$cache"
fi
mkdir -p "$out"
ln -f "$cache/kubewatch" "$out/kubewatch" 2>/dev/null || cp -f "$cache/kubewatch" "$out/kubewatch"
