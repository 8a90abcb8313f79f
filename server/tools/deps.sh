#!/bin/sh
# deps.sh: install the Debian packages kiln needs for the named purposes
# (build, test, bench) when any is missing. As root it runs apt-get; as
# anyone else it prints the exact command and fails. With --check it only
# checks, printing the command when something is missing.
set -eu

check_only=0
if [ "${1:-}" = "--check" ]; then
	check_only=1
	shift
fi

pkgs=""
# The libraries code in the box may import (Debian's Python is the
# sandbox's on purpose): docs/sandbox.md says how to add more.
pylibs="python3-numpy python3-pandas python3-matplotlib"
for purpose in "$@"; do
	case "$purpose" in
	build) pkgs="$pkgs gcc make pkg-config curl xz-utils patch libjson-c-dev libseccomp-dev libbsd-dev
		libcurl4-openssl-dev libedit-dev libmd-dev $pylibs" ;;
	test) pkgs="$pkgs check clang clang-format libclang-rt-14-dev python3 nodejs npm util-linux
		ca-certificates neovim lua-check emacs-nox elpa-package-lint elpa-eglot python3.11-examples python3-venv $pylibs
		chromium ripgrep libkrb5-dev libx11-dev libxkbfile-dev libsecret-1-dev tmux
		pandoc bash-completion zsh lintian
		qemu-system-x86 cpio busybox-static binutils" ;;
	bench) pkgs="$pkgs bubblewrap hyperfine python3-bandit" ;;
	*) echo "deps.sh: unknown purpose '$purpose'" >&2; exit 2 ;;
	esac
done

missing=""
for p in $pkgs; do
	# NodeSource's nodejs ships npm itself and conflicts with Debian's npm
	# package: an npm on PATH is enough.
	if [ "$p" = npm ] && command -v npm >/dev/null 2>&1; then
		continue
	fi
	status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	case "$status" in
	*"install ok installed"*) ;;
	*) missing="$missing $p" ;;
	esac
done
[ -z "$missing" ] && exit 0

cmd="apt-get install -y --no-install-recommends$missing"
if [ "$check_only" = 1 ]; then
	echo "kiln: missing packages:$missing" >&2
	echo "kiln: run 'make deps' (or: sudo $cmd)" >&2
	exit 1
fi
if [ "$(id -u)" != 0 ]; then
	echo "kiln: these Debian packages are needed:$missing" >&2
	echo "kiln: run as root: $cmd" >&2
	exit 1
fi
echo "kiln: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
# The package lists may be missing or stale on a fresh machine.
apt-get update -qq >/dev/null
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
