#!/bin/sh
# dist.sh: `make dist`. A source tarball, build/kiln-VERSION.tar.xz, that
# builds with no network: the tree's files (git's list) plus the
# pinned tree-sitter tarballs of server/validate/grammars.lock, checked
# against their sums, in server/validate/vendor/, where
# fetch-grammars.sh looks before it fetches. Building it needs only the
# Debian packages `make deps` names (server/tools/deps.sh build).
# tests/suites/26-install.sh builds it in a network namespace with no
# network.
set -eu
cd "$(dirname "$0")/../.."

version=$(sed -n 's/^#define KILN_VERSION "\(.*\)"$/\1/p' server/kiln.h)
name=kiln-$version
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p build

# The tree's files as they are now (a change not yet committed included):
# git's list in a checkout; else (a copy such as make mutate's) every file
# but the build's, the editors' node_modules and the vendored tarballs.
mkdir -p "$work/$name"
if git rev-parse --git-dir >/dev/null 2>&1; then
	git ls-files -z --cached --others --exclude-standard
else
	find . \( -path ./build -o -path ./.git -o -name node_modules -o -path ./server/validate/vendor \) -prune -o \
		-type f -print0 | sed -z 's|^\./||'
fi | tar -C . --null -T - -cf - | tar -C "$work/$name" -xf -
mkdir -p "$work/$name/server/validate/vendor"
sh server/validate/fetch-grammars.sh --tarballs server/validate/grammars.lock "$work/$name/server/validate/vendor"
# Fixed owners and times, so the same commit gives the same tarball.
when=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
tar -C "$work" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$when" -cf - "$name" |
	xz -9 -T1 >"build/$name.tar.xz"
echo "build/$name.tar.xz"
