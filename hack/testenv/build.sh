#!/usr/bin/env bash
# Builds the local control plane (etcd, kube-apiserver, kubectl) from Go
# modules into .testenv/bin. Built binaries are kept in a cache outside the
# checkout, keyed by this module's go.mod and go.sum, so fresh clones on the
# same machine reuse them instead of spending minutes rebuilding.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out="$here/../../.testenv/bin"
key=$(cat "$here/go.mod" "$here/go.sum" | sha256sum | cut -c1-16)
cache="${KUBEDIFF_TESTENV_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubediff/testenv-$key}"
bins=(etcd kube-apiserver kubectl)

have_all() { for b in "${bins[@]}"; do [ -x "$1/$b" ] || return 1; done; }

if ! have_all "$cache"; then
  mkdir -p "$cache.tmp"
  cd "$here"
  echo "building etcd (about a minute)..." >&2
  go build -trimpath -o "$cache.tmp/etcd" go.etcd.io/etcd/server/v3
  echo "building kube-apiserver and kubectl (about five minutes on 2 cores)..." >&2
  go build -trimpath -o "$cache.tmp/" k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kubectl
  rm -rf "$cache" && mv "$cache.tmp" "$cache"
fi
mkdir -p "$out"
for b in "${bins[@]}"; do
  ln -f "$cache/$b" "$out/$b" 2>/dev/null || cp -f "$cache/$b" "$out/$b"
done
"$out/kube-apiserver" --version >&2
