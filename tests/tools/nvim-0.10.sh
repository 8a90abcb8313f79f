#!/bin/sh
# nvim-0.10.sh: fetch Neovim 0.10 from Debian trixie's packages into
# build/nvim-0.10/ (without installing anything on the system) and write a
# launcher, build/nvim-0.10/nvim, that starts it through trixie's own loader.
#
# Debian 12 ships Neovim 0.7.2; the plugin's tests also run on 0.10, the
# release most users have. The packages come from the same Debian repository
# the machine already uses (read from its apt sources), through a private
# sources list, lists and cache under build/, and are unpacked with
# dpkg-deb -x. Nothing outside build/ is touched.
#
# The launcher is for headless use (what the tests do): the TUI starts its
# own server by re-executing /proc/self/exe, which is the loader here.
#
# Prints the launcher's path and exits 0 when Neovim 0.10 is ready; exits 77
# (and says why on stderr) when the trixie packages cannot be fetched, so a
# caller can count its tests as skipped.
set -eu
cd "$(dirname "$0")/../.."

dest=build/nvim-0.10
root=$dest/root
launcher=$dest/nvim
pkgs="neovim neovim-runtime libc6 libluajit-5.1-2 libluajit-5.1-common libmsgpack-c2
	libtree-sitter0.22 libunibilium4 libuv1t64 libvterm0 lua-lpeg lua-luv libutf8proc3"

skip() {
	echo "nvim-0.10: $*" >&2
	exit 77
}

# Already there from an earlier run: just check that it starts.
if [ -x "$launcher" ] && "$launcher" --headless --clean -u NONE +q >/dev/null 2>&1; then
	echo "$PWD/$launcher"
	exit 0
fi

command -v apt-get >/dev/null 2>&1 || skip "no apt-get on this machine"
command -v dpkg-deb >/dev/null 2>&1 || skip "no dpkg-deb on this machine"
[ "$(dpkg --print-architecture 2>/dev/null)" = amd64 ] ||
	skip "only amd64 is supported (trixie's loader path is x86_64)"

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
echo "deb [signed-by=$keyring] $uri trixie main" >"$work/sources.list"

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
	skip "cannot fetch trixie's package lists: $(tail -n 2 "$work/update.log" | tr '\n' ' ')"
fi
# apt-get download writes into the current directory.
# shellcheck disable=SC2086
if ! (cd "$work/archives" && timeout 180 apt-get $aptopts -qq download $pkgs) \
	>"$work/download.log" 2>&1; then
	skip "cannot download trixie's neovim packages: $(tail -n 2 "$work/download.log" | tr '\n' ' ')"
fi
for deb in "$work"/archives/*.deb; do
	dpkg-deb -x "$deb" "$root"
done

lib=$PWD/$root/usr/lib/x86_64-linux-gnu
cat >"$launcher" <<EOF
#!/bin/sh
# Neovim 0.10 from Debian trixie, unpacked by tests/tools/nvim-0.10.sh.
VIMRUNTIME=$PWD/$root/usr/share/nvim/runtime
export VIMRUNTIME
exec $lib/ld-linux-x86-64.so.2 --library-path $lib:$lib/lua/5.1 $PWD/$root/usr/bin/nvim "\$@"
EOF
chmod +x "$launcher"

if ! "$launcher" --headless --clean -u NONE +q >"$work/start.log" 2>&1; then
	skip "the unpacked Neovim does not start: $(head -n 3 "$work/start.log" | tr '\n' ' ')"
fi
echo "$PWD/$launcher"
