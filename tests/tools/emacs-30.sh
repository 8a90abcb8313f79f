#!/bin/sh
# emacs-30.sh: fetch Emacs 30 from Debian's bookworm-backports into
# build/emacs-30/ (without installing anything on the system) and write a
# launcher, build/emacs-30/emacs, that starts it with its own Lisp
# directories, data and dump file.
#
# Debian 12 ships Emacs 28.2; the package's tests also run on 30, the
# release of bookworm-backports (built for bookworm, so its libraries are
# the ones emacs-nox 28 already pulled in). The packages come from the
# Debian repository the machine already uses (read from its apt sources),
# through a private sources list, lists and cache under build/, and are
# unpacked with dpkg-deb -x. Nothing outside build/ is touched.
#
# Prints the launcher's path and exits 0 when Emacs 30 is ready; exits 77
# (and says why on stderr) when the packages cannot be fetched or do not
# start, so a caller can count its tests as skipped.
set -eu
cd "$(dirname "$0")/../.."

dest=build/emacs-30
root=$dest/root
launcher=$dest/emacs
pkgs="emacs-nox emacs-bin-common emacs-common"

skip() {
	echo "emacs-30: $*" >&2
	exit 77
}

# Already there from an earlier run: just check that it starts.
if [ -x "$launcher" ] && "$launcher" --batch -Q --eval '(kill-emacs 0)' >/dev/null 2>&1; then
	echo "$PWD/$launcher"
	exit 0
fi

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
echo "deb [signed-by=$keyring] $uri bookworm-backports main" >"$work/sources.list"

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
	skip "cannot fetch bookworm-backports' package lists: $(tail -n 2 "$work/update.log" | tr '\n' ' ')"
fi
# apt-get download writes into the current directory.
# shellcheck disable=SC2086
if ! (cd "$work/archives" && timeout 300 apt-get $aptopts -qq download $pkgs) \
	>"$work/download.log" 2>&1; then
	skip "cannot download the emacs packages: $(tail -n 2 "$work/download.log" | tr '\n' ' ')"
fi
for deb in "$work"/archives/*.deb; do
	dpkg-deb -x "$deb" "$root"
done

r=$PWD/$root
ver=$(ls "$r/usr/share/emacs" | grep -E '^[0-9]+\.[0-9]+$' | sort -V | tail -n 1)
[ -n "$ver" ] || skip "the packages hold no usr/share/emacs/VERSION"
dump=$(ls "$r/usr/libexec/emacs/$ver"/*/emacs-*.pdmp 2>/dev/null | head -n 1)
[ -n "$dump" ] || skip "the packages hold no dump file"
libexec=$(dirname "$dump")
# Every directory under lisp/, as the installed subdirs.el would add.
loadpath=$(find "$r/usr/share/emacs/$ver/lisp" -type d | sort | tr '\n' ':')
cat >"$launcher" <<LAUNCH
#!/bin/sh
# Emacs $ver from Debian bookworm-backports, unpacked by tests/tools/emacs-30.sh.
# The compiled-in paths point at /usr; these point at the unpacked tree.
EMACSLOADPATH=$loadpath
EMACSDATA=$r/usr/share/emacs/$ver/etc
EMACSDOC=$r/usr/share/emacs/$ver/etc
EMACSPATH=$libexec
export EMACSLOADPATH EMACSDATA EMACSDOC EMACSPATH
exec $r/usr/bin/emacs-nox --dump-file=$dump "\$@"
LAUNCH
chmod +x "$launcher"

if ! "$launcher" --batch -Q --eval '(kill-emacs 0)' >"$work/start.log" 2>&1; then
	skip "the unpacked Emacs does not start: $(head -n 3 "$work/start.log" | tr '\n' ' ')"
fi
echo "$PWD/$launcher"
