#!/usr/bin/env bash
# Installs Debian's chromium, the browser the timeline page's tests drive
# headless (test/e2e/ui_test.go), when it is missing.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
	exit 0
fi
sudo=""
if [ "$(id -u)" != 0 ]; then
	sudo=sudo
fi
echo "installing chromium (Debian package) for the timeline page's browser tests" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends chromium >/dev/null
command -v chromium >/dev/null
