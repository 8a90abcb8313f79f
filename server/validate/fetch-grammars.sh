#!/bin/sh
# fetch-grammars.sh: fetch the pinned tree-sitter sources (the runtime and
# the grammars) named in grammars.lock, from the npm registry or from the
# Debian archive (a source package's upstream tarball), check each
# tarball's sha256 and unpack its src/ (and include/, when it has one) into
# OUTDIR/NAME/, then apply kiln's own changes to NAME's sources, if any
# (PATCHDIR/NAME-*.patch in name order, `patch -p1` in OUTDIR/NAME; each
# says why in its header). The sources are build products: never commit them.
# Usage: fetch-grammars.sh LOCKFILE OUTDIR [PATCHDIR]
#        fetch-grammars.sh --tarballs LOCKFILE DIR
# PATCHDIR defaults to server/validate/patches. A tarball found in the
# lock file's vendor/ folder (as `make dist` ships them; the sum is checked
# all the same) is used instead of the network. --tarballs only fetches
# and checks the tarballs, into DIR (what `make dist` puts in vendor/).
# KILN_DEBIAN_MIRROR overrides the archive (default http://deb.debian.org/debian).
set -eu

only_tarballs=0
if [ "$1" = --tarballs ]; then
	only_tarballs=1
	shift
fi
lock=$1
out=$2
patchdir=${3:-$(dirname "$0")/patches}
vendor=$(dirname "$lock")/vendor
mirror=${KILN_DEBIAN_MIRROR:-http://deb.debian.org/debian}
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# tarball SOURCE VERSION: the tarball's file name.
tarball_name() {
	case $1 in
	debian:*) echo "${1#debian:}_$2.orig.tar.xz" ;;
	*) echo "$1-$2.tgz" ;;
	esac
}

# fetch SOURCE VERSION: the tarball's path (vendor/, else fetched into
# $tmp) on stdout.
fetch() {
	if [ -f "$vendor/$(tarball_name "$1" "$2")" ]; then
		echo "$vendor/$(tarball_name "$1" "$2")"
		return 0
	fi
	case $1 in
	debian:*)
		src=${1#debian:}
		# The pool's folder: lib* packages under their first four letters.
		case $src in lib?*) pre=$(echo "$src" | cut -c1-4) ;; *) pre=$(echo "$src" | cut -c1) ;; esac
		file=$(tarball_name "$1" "$2")
		if ! command -v curl >/dev/null 2>&1; then
			echo "kiln: curl is needed to fetch $file (make deps installs it)" >&2
			return 1
		fi
		curl -fsS --retry 3 -o "$tmp/$file" "$mirror/pool/main/$pre/$src/$file" || {
			echo "kiln: cannot fetch $file from $mirror" >&2
			return 1
		}
		echo "$tmp/$file"
		;;
	*)
		if ! command -v npm >/dev/null 2>&1; then
			echo "kiln: npm is needed to fetch the tree-sitter sources (make deps installs it)" >&2
			return 1
		fi
		(cd "$tmp" && npm pack --silent "$1@$2" >/dev/null 2>"$tmp/npm.err") || {
			cat "$tmp/npm.err" >&2
			echo "kiln: cannot fetch $1@$2 from the npm registry" >&2
			return 1
		}
		echo "$tmp/$1-$2.tgz"
		;;
	esac
}

grep -v '^#' "$lock" | while read -r lang pkg version sum root; do
	[ -n "$lang" ] || continue
	root=${root:-package}
	# What NAME/ holds: the tarball's sum, and the patches' when there are
	# any, so that a new or changed patch unpacks the sources again.
	patches=$(find "$patchdir" -maxdepth 1 -name "$lang-*.patch" 2>/dev/null | sort)
	stamp=$sum
	if [ -n "$patches" ]; then
		# shellcheck disable=SC2086
		stamp="$sum $(cat $patches | sha256sum | cut -d' ' -f1)"
	fi
	if [ "$only_tarballs" = 0 ] && [ -f "$out/$lang/.sum" ] && [ "$(cat "$out/$lang/.sum")" = "$stamp" ]; then
		continue
	fi
	tarball=$(fetch "$pkg" "$version") || exit 1
	got=$(sha256sum "$tarball" | cut -d' ' -f1)
	if [ "$got" != "$sum" ]; then
		echo "kiln: $pkg $version has sha256 $got, expected $sum: refusing it" >&2
		exit 1
	fi
	if [ "$only_tarballs" = 1 ]; then
		cp "$tarball" "$out/$(tarball_name "$pkg" "$version")"
		continue
	fi
	rm -rf "${out:?}/$lang"
	mkdir -p "$out/$lang"
	# ROOT/src, and ROOT/include when the tarball has it, land in NAME/
	# (GNU tar finds the compression itself).
	dirs="$root/src"
	if tar -tf "$tarball" | grep -q "^$root/include/"; then dirs="$dirs $root/include"; fi
	depth=$(echo "$root" | awk -F/ '{ print NF }')
	# shellcheck disable=SC2086
	tar -xf "$tarball" -C "$out/$lang" --strip-components="$depth" $dirs
	for p in $patches; do
		if ! patch -s -p1 -d "$out/$lang" <"$p" >&2; then
			echo "kiln: $p does not apply to $pkg $version" >&2
			exit 1
		fi
		echo "kiln: applied $(basename "$p") to $pkg $version" >&2
	done
	echo "$stamp" >"$out/$lang/.sum"
	echo "kiln: fetched $pkg $version (sha256 ok)" >&2
done
