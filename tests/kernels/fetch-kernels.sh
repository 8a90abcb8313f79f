#!/bin/sh
# fetch-kernels.sh: fetch the Debian kernel packages named in kernels.lock
# from the Debian archive's pool, check each .deb's sha256 and unpack it
# (dpkg-deb -x) into OUTDIR/LABEL/, reused while its .sum says the same
# sum. Prints nothing on success but what it fetched (on stderr).
# Usage: fetch-kernels.sh LOCKFILE OUTDIR [LABEL...]
# KILN_DEBIAN_MIRROR overrides the archive (default http://deb.debian.org/debian).
# Debian drops superseded backports from the pool: when a pinned .deb is
# gone, snapshot.debian.org still has it under the same pool path
# (KILN_DEBIAN_MIRROR=https://snapshot.debian.org/archive/debian/DATE), or
# pin the current one (its name and sum are in the Packages index).
set -eu

lock=$1
out=$2
shift 2
mirror=${KILN_DEBIAN_MIRROR:-http://deb.debian.org/debian}
mkdir -p "$out"

grep -v '^#' "$lock" | while read -r label pkg file sum; do
	[ -n "$label" ] || continue
	if [ $# -gt 0 ]; then
		want=0
		for l in "$@"; do [ "$l" = "$label" ] && want=1; done
		[ "$want" = 1 ] || continue
	fi
	if [ -f "$out/$label/.sum" ] && [ "$(cat "$out/$label/.sum")" = "$sum" ]; then
		continue
	fi
	if ! command -v curl >/dev/null 2>&1; then
		echo "kiln: curl is needed to fetch $pkg" >&2
		exit 1
	fi
	deb="$out/.$label.deb"
	curl -fsS --retry 3 -o "$deb" "$mirror/$file" || {
		echo "kiln: cannot fetch $mirror/$file" >&2
		rm -f "$deb"
		exit 1
	}
	got=$(sha256sum "$deb" | cut -d' ' -f1)
	if [ "$got" != "$sum" ]; then
		echo "kiln: $pkg has sha256 $got, expected $sum: refusing it" >&2
		rm -f "$deb"
		exit 1
	fi
	rm -rf "${out:?}/$label"
	mkdir -p "$out/$label"
	dpkg-deb -x "$deb" "$out/$label"
	rm -f "$deb"
	echo "$sum" >"$out/$label/.sum"
	echo "kiln: fetched $pkg (sha256 ok)" >&2
done
