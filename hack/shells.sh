#!/usr/bin/env bash
# Installs Debian's bash-completion, which the completion script cobra
# writes for bash needs (its _get_comp_words_by_ref), when it is missing:
# the completion tests (test/e2e/completion_test.go) drive a real bash with it.
set -euo pipefail
if [ -f /usr/share/bash-completion/bash_completion ]; then
	exit 0
fi
sudo=""
if [ "$(id -u)" != 0 ]; then
	sudo=sudo
fi
echo "installing bash-completion (Debian package) for the completion tests" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends bash-completion >/dev/null
test -f /usr/share/bash-completion/bash_completion
