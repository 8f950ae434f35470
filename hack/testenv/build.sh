#!/usr/bin/env bash
# Builds the local control plane from Go modules into .testenv/bin: etcd,
# kube-apiserver and kubectl (what every test needs), kube-controller-manager
# and kube-scheduler (the living cluster), and KWOK, which simulates nodes
# and the Pod lifecycle, with the stage files shipped in its module.
# Built binaries are kept in a cache outside the checkout, keyed by this
# module's go.mod and go.sum and this script (KWOK's version is pinned
# here), so fresh clones on the same machine reuse them.
set -euo pipefail
KWOK_VERSION=v0.8.0
here=$(cd "$(dirname "$0")" && pwd)
out="$here/../../.testenv/bin"
key=$(cat "$here/go.mod" "$here/go.sum" "$here/build.sh" | sha256sum | cut -c1-16)
cache="${KUBEDIFF_TESTENV_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubediff/testenv-$key}"
bins=(etcd kube-apiserver kubectl kube-controller-manager kube-scheduler kwok)

have_all() { for b in "${bins[@]}"; do [ -x "$1/$b" ] || return 1; done; [ -d "$1/kwok-stages" ]; }

# Two builds at once (a second checkout's tests, CI beside a developer)
# take turns: the second waits for the first and then finds its cache.
# Each builds in a directory of its own, moved into place whole.
mkdir -p "$(dirname "$cache")"
exec 9>"$cache.lock"
flock 9
if ! have_all "$cache"; then
  tmp="$cache.tmp.$$"
  trap 'rm -rf "$tmp"' EXIT
  rm -rf "$tmp" && mkdir -p "$tmp"
  cd "$here"
  echo "building etcd (about a minute)..." >&2
  go build -trimpath -o "$tmp/etcd" go.etcd.io/etcd/server/v3
  echo "building kube-apiserver, kubectl, kube-controller-manager and kube-scheduler (about ten minutes on 2 cores, once)..." >&2
  go build -trimpath -o "$tmp/" k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kubectl \
    k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler
  echo "building kwok $KWOK_VERSION..." >&2
  # Installed from its own module, with its own pinned dependencies.
  (cd "$tmp" && GOBIN="$tmp" GOFLAGS=-trimpath go install "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION")
  kwokdir=$(go mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  mkdir -p "$tmp/kwok-stages"
  for f in node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
           pod/general/pod-create.yaml pod/general/pod-ready.yaml pod/general/pod-complete.yaml \
           pod/general/pod-delete.yaml pod/general/pod-init-container-running.yaml \
           pod/general/pod-init-container-completed.yaml; do
    cp "$kwokdir/kustomize/stage/$f" "$tmp/kwok-stages/"
  done
  chmod -R u+w "$tmp/kwok-stages"
  rm -rf "$cache" && mv "$tmp" "$cache"
fi
mkdir -p "$out"
for b in "${bins[@]}"; do
  ln -f "$cache/$b" "$out/$b" 2>/dev/null || cp -f "$cache/$b" "$out/$b"
done
rm -rf "$out/kwok-stages" && cp -r "$cache/kwok-stages" "$out/kwok-stages"
flock -u 9
"$out/kube-apiserver" --version >&2
