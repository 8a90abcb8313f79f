# debian-fetch.sh: sourced by the scripts that unpack another Debian suite's
# packages for the tests (nvim-0.10.sh: trixie; emacs-30.sh:
# bookworm-backports). fetch_debs SUITE downloads $pkgs from SUITE of the
# Debian repository this machine already uses (read from its apt sources)
# through a private sources list, lists and cache under $dest/apt, and
# unpacks them with dpkg-deb -x into $root. Nothing outside build/ is
# touched. The caller defines dest, root, pkgs and skip() (which says why
# and exits 77, so the caller's tests count as skipped).

fetch_debs() {
	suite=$1
	command -v apt-get >/dev/null 2>&1 || skip "no apt-get on this machine"
	command -v dpkg-deb >/dev/null 2>&1 || skip "no dpkg-deb on this machine"
	[ "$(dpkg --print-architecture 2>/dev/null)" = amd64 ] ||
		skip "only amd64 is supported (the unpacked paths are x86_64)"

	# The Debian repository this machine already uses: the URI of the entry
	# whose suite is the release's main one (deb822 or one-line format).
	uri=""
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		uri=$(awk '
			/^URIs:/ { u = $2 }
			/^Suites:/ { for (i = 2; i <= NF; i++) if ($i !~ /-/) s = 1 }
			/^$/ { if (u != "" && s) { print u; exit } u = ""; s = 0 }
			END { if (u != "" && s) print u }' "$f" | head -n 1)
		[ -n "$uri" ] && break
	done
	if [ -z "$uri" ]; then
		for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
			[ -f "$f" ] || continue
			uri=$(awk '$1 == "deb" && $3 !~ /-/ {
				for (i = 2; i <= NF; i++) if ($i !~ /^\[/ && $i !~ /\]$/) { print $i; exit } }' \
				"$f" | head -n 1)
			[ -n "$uri" ] && break
		done
	fi
	[ -n "$uri" ] || skip "found no Debian repository in the apt sources"

	keyring=/usr/share/keyrings/debian-archive-keyring.gpg
	[ -f "$keyring" ] || skip "no $keyring (package debian-archive-keyring)"

	work=$dest/apt
	rm -rf "$work" "$root"
	mkdir -p "$work/lists/partial" "$work/archives/partial" "$root"
	: >"$work/status"
	echo "deb [signed-by=$keyring] $uri $suite main" >"$work/sources.list"

	# Every apt path points into build/: the machine's own lists, cache and
	# package state stay as they were.
	aptopts="-o Dir::Etc::SourceList=$PWD/$work/sources.list
		-o Dir::Etc::SourceParts=/nonexistent
		-o Dir::State::Lists=$PWD/$work/lists
		-o Dir::State::status=$PWD/$work/status
		-o Dir::Cache=$PWD/$work
		-o Dir::Cache::Archives=$PWD/$work/archives
		-o Debug::NoLocking=1
		-o APT::Sandbox::User=root
		-o APT::Get::List-Cleanup=0
		-o Acquire::Retries=2
		-o Acquire::http::Timeout=30"

	# shellcheck disable=SC2086
	if ! timeout 180 apt-get $aptopts -qq update >"$work/update.log" 2>&1; then
		skip "cannot fetch $suite's package lists: $(tail -n 2 "$work/update.log" | tr '\n' ' ')"
	fi
	# apt-get download writes into the current directory.
	# shellcheck disable=SC2086
	if ! (cd "$work/archives" && timeout 300 apt-get $aptopts -qq download $pkgs) \
		>"$work/download.log" 2>&1; then
		skip "cannot download $pkgs from $suite: $(tail -n 2 "$work/download.log" | tr '\n' ' ')"
	fi
	for deb in "$work"/archives/*.deb; do
		dpkg-deb -x "$deb" "$root"
	done
}
