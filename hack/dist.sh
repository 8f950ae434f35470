#!/usr/bin/env bash
# Builds release archives for every platform with the Dockerfile's flags,
# their SHA-256 checksums, and the krew manifest (plugins/kubediff.yaml)
# that points at them, so `kubectl krew install` gets the same binary as a
# kubectl plugin. Usage: hack/dist.sh VERSION LDFLAGS [OUT]
# PLATFORMS (os/arch, space separated) overrides the default list.
set -euo pipefail
version=$1 ldflags=$2 out=${3:-dist}
platforms=${PLATFORMS:-"linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64"}
repo=https://github.com/kubediff/kubediff
root=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$out" && mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$root"
: >"$out/checksums.txt"
entries=""
for p in $platforms; do
  os=${p%/*} arch=${p#*/}
  exe=kubediff; [ "$os" = windows ] && exe=kubediff.exe
  name="kubediff_${version}_${os}_${arch}"
  stage="$out/$name"
  mkdir -p "$stage"
  echo "building $os/$arch..." >&2
  CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath -ldflags "$ldflags" -o "$stage/$exe" ./cmd/kubediff
  cp README.md "$stage/"
  files=("$exe" README.md)
  # kubectl's completion of the plugin (a shell script: not for windows).
  if [ "$os" != windows ]; then
    cp hack/plugin/kubectl_complete-kubediff "$stage/"
    files+=(kubectl_complete-kubediff)
  fi
  # Reproducible archives: fixed order, times and owners.
  tar -C "$stage" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf - "${files[@]}" | gzip -n >"$out/$name.tar.gz"
  rm -rf "$stage"
  sum=$(sha256sum "$out/$name.tar.gz" | cut -d' ' -f1)
  echo "$sum  $name.tar.gz" >>"$out/checksums.txt"
  entries+="  - selector:
      matchLabels:
        os: $os
        arch: $arch
    uri: $repo/releases/download/$version/$name.tar.gz
    sha256: $sum
    bin: $exe
"
done
mkdir -p "$out/plugins"
cat >"$out/plugins/kubediff.yaml" <<YAML
apiVersion: krew.googlecontainertools.github.com/v1alpha2
kind: Plugin
metadata:
  name: kubediff
spec:
  version: $version
  homepage: $repo
  shortDescription: Watch every resource and report each change as a diff
  description: |
    kubediff watches every resource type the API server offers, custom
    resources included, and reports each change as a readable diff: JSON
    lines for log stacks and scripts, or text for people.
    Run: kubectl kubediff watch -o text
  platforms:
$entries
YAML
# The Helm chart, versioned as the release (a non-release build gets a
# pre-release version named after it).
helm="$root/.tools/bin/helm"
if [ -x "$helm" ]; then
  chart_version=${version#v}
  [[ $chart_version =~ ^[0-9]+\.[0-9]+\.[0-9]+ ]] || chart_version="0.0.0-$chart_version"
  "$helm" package "$root/charts/kubediff" --version "$chart_version" --app-version "$version" -d "$out" >&2
else
  echo "no .tools/bin/helm (make helm): the chart is not packaged" >&2
fi
echo "wrote $out: $(ls "$out" | tr '\n' ' ')" >&2
