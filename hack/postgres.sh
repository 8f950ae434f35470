#!/usr/bin/env bash
# Installs Debian's PostgreSQL 15, the history store the tests start in a
# temporary directory (internal/testenv/postgres.go), when it is missing.
set -euo pipefail
bin=/usr/lib/postgresql/15/bin
if [ -x "$bin/postgres" ] && [ -x "$bin/initdb" ]; then
	exit 0
fi
sudo=""
if [ "$(id -u)" != 0 ]; then
	sudo=sudo
fi
echo "installing postgresql-15 (Debian package) for the history store's tests" >&2
$sudo apt-get update -qq
# The package may make its own cluster "main"; the tests never use it.
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends postgresql-15 >/dev/null
[ -x "$bin/postgres" ]
