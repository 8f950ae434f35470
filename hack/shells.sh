#!/usr/bin/env bash
# Installs the Debian packages the completion tests
# (test/e2e/completion_test.go) drive real shells with, those missing:
# bash-completion, which the script cobra writes for bash needs (its
# _get_comp_words_by_ref), and zsh, whose zsh/zpty module runs an
# interactive zsh to complete in.
set -euo pipefail
packages=()
if [ ! -f /usr/share/bash-completion/bash_completion ]; then
	packages+=(bash-completion)
fi
if ! command -v zsh >/dev/null; then
	packages+=(zsh)
fi
if [ ${#packages[@]} -eq 0 ]; then
	exit 0
fi
sudo=""
if [ "$(id -u)" != 0 ]; then
	sudo=sudo
fi
echo "installing ${packages[*]} (Debian packages) for the completion tests" >&2
$sudo apt-get update -qq
# apt's own notes (debconf's "delaying package configuration") only when it fails.
if ! out=$(DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${packages[@]}" 2>&1); then
	echo "$out" >&2
	exit 1
fi
test -f /usr/share/bash-completion/bash_completion
command -v zsh >/dev/null
