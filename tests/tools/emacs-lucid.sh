#!/bin/sh
# emacs-lucid.sh: fetch Debian 12's graphical Emacs 28 (emacs-lucid and the
# four libraries it needs beyond emacs-nox's) into build/emacs-lucid/
# (without installing anything on the system) and write a launcher,
# build/emacs-lucid/emacs, that starts it with its own dump file and the
# Lisp of the installed emacs-common.
#
# Debian's emacs-nox has no image support, so `create-image' fails there;
# a graphical build makes images in `emacs --batch' too, which is what the
# Emacs package's image tests need. `apt-get download' uses the machine's
# own package lists; nothing outside build/ is touched.
#
# Prints the launcher's path and exits 0 when it is ready; exits 77 (and
# says why on stderr) when the packages cannot be fetched or do not start,
# so a caller can count its tests as skipped.
set -eu
cd "$(dirname "$0")/../.."

dest=build/emacs-lucid
root=$dest/root
launcher=$dest/emacs
pkgs="emacs-lucid libm17n-0 libotf1 xaw3dg m17n-db"

skip() {
	echo "emacs-lucid: $*" >&2
	exit 77
}

if [ -x "$launcher" ] && "$launcher" --batch -Q --eval '(kill-emacs 0)' >/dev/null 2>&1; then
	echo "$PWD/$launcher"
	exit 0
fi

command -v apt-get >/dev/null 2>&1 || skip "no apt-get on this machine"
command -v dpkg-deb >/dev/null 2>&1 || skip "no dpkg-deb on this machine"
# The Lisp comes from the installed emacs-common: the same release.
want=$(dpkg-query -W -f='${Version}' emacs-common 2>/dev/null) || skip "emacs-common is not installed"

work=$dest/apt
rm -rf "$work" "$root"
mkdir -p "$work/archives" "$root"
# shellcheck disable=SC2086
if ! (cd "$work/archives" && timeout 180 apt-get -qq download emacs-lucid="$want" \
	$(echo "$pkgs" | sed 's/emacs-lucid//')) >"$work/download.log" 2>&1; then
	skip "cannot download emacs-lucid $want: $(tail -n 2 "$work/download.log" | tr '\n' ' ')"
fi
for deb in "$work"/archives/*.deb; do
	dpkg-deb -x "$deb" "$root"
done

r=$PWD/$root
dump=$(ls "$r"/usr/libexec/emacs/*/*/emacs*.pdmp 2>/dev/null | head -n 1)
[ -n "$dump" ] || skip "the package holds no dump file"
cat >"$launcher" <<LAUNCH
#!/bin/sh
# Debian's emacs-lucid, unpacked by tests/tools/emacs-lucid.sh.
LD_LIBRARY_PATH=$r/usr/lib/x86_64-linux-gnu\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}
export LD_LIBRARY_PATH
exec $r/usr/bin/emacs-lucid --dump-file=$dump "\$@"
LAUNCH
chmod +x "$launcher"

if ! "$launcher" --batch -Q --eval '(kill-emacs (if (image-type-available-p (quote png)) 0 1))' \
	>"$work/start.log" 2>&1; then
	skip "the unpacked emacs-lucid does not start or has no PNG support: $(head -n 3 "$work/start.log" | tr '\n' ' ')"
fi
echo "$PWD/$launcher"
