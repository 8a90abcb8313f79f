#!/bin/sh
# fetch-grammars.sh: fetch the pinned tree-sitter grammar sources named in
# grammars.lock from the npm registry, check each tarball's sha256 and
# unpack its src/ into OUTDIR/LANG/src. The sources are build products:
# never commit them. Usage: fetch-grammars.sh LOCKFILE OUTDIR
set -eu

lock=$1
out=$2
if ! command -v npm >/dev/null 2>&1; then
	echo "kiln: npm is needed to fetch the tree-sitter grammars (make deps installs it)" >&2
	exit 1
fi
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

grep -v '^#' "$lock" | while read -r lang pkg version sum; do
	[ -n "$lang" ] || continue
	if [ -f "$out/$lang/.sum" ] && [ "$(cat "$out/$lang/.sum")" = "$sum" ]; then
		continue
	fi
	(cd "$tmp" && npm pack --silent "$pkg@$version" >/dev/null 2>"$tmp/npm.err") || {
		cat "$tmp/npm.err" >&2
		echo "kiln: cannot fetch $pkg@$version from the npm registry" >&2
		exit 1
	}
	tgz="$tmp/$pkg-$version.tgz"
	got=$(sha256sum "$tgz" | cut -d' ' -f1)
	if [ "$got" != "$sum" ]; then
		echo "kiln: $pkg@$version has sha256 $got, expected $sum: refusing it" >&2
		exit 1
	fi
	rm -rf "${out:?}/$lang"
	mkdir -p "$out/$lang"
	tar -xzf "$tgz" -C "$out/$lang" --strip-components=1 package/src
	echo "$sum" >"$out/$lang/.sum"
	echo "kiln: fetched $pkg@$version (sha256 ok)" >&2
done
