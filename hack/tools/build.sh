#!/usr/bin/env bash
# Builds the developer tools pinned in this module (its `tool` lines) into
# .tools/bin, e.g. `hack/tools/build.sh golangci-lint`; with -m DIR, those
# of another tools module (`hack/tools/build.sh -m hack/helm helm`). Built
# binaries are cached outside the checkout, keyed by the module's go.mod
# and go.sum, so fresh clones on the same machine reuse them.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out="$here/../../.tools/bin"
if [ "${1:-}" = -m ]; then
  here=$(cd "$2" && pwd)
  shift 2
fi
key=$(cat "$here/go.mod" "$here/go.sum" | sha256sum | cut -c1-16)
cache="${KUBEDIFF_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubediff/tools-$key}"
mkdir -p "$out" "$cache"
for name in "$@"; do
  pkg=$(awk -v n="$name" '$1 == "tool" && $2 ~ ("/" n "$") { print $2 }' "$here/go.mod")
  if [ -z "$pkg" ]; then
    echo "hack/tools: no tool named $name in hack/tools/go.mod" >&2
    exit 2
  fi
  if [ ! -x "$cache/$name" ]; then
    echo "building $name from $pkg (a few minutes, once)..." >&2
    (cd "$here" && go build -trimpath -o "$cache/$name.tmp" "$pkg")
    mv "$cache/$name.tmp" "$cache/$name"
  fi
  ln -f "$cache/$name" "$out/$name" 2>/dev/null || cp -f "$cache/$name" "$out/$name"
done
