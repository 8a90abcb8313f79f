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

. tests/tools/debian-fetch.sh
fetch_debs trixie

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
