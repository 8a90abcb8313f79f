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

. tests/tools/debian-fetch.sh
fetch_debs bookworm-backports

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
