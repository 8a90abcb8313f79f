#!/bin/sh
# deb.sh: `make deb`. A Debian package of kiln, build/kiln_VERSION_ARCH.deb,
# from what `make install` installs (server/tools/install.sh, PREFIX=/usr,
# staged with DESTDIR), laid out as Debian's policy asks: man pages and the
# changelog compressed, the binary stripped, the copyright file, md5sums,
# Depends from dpkg-shlibdeps (the libraries the binary links) plus the
# Python the box runs. The AppArmor profile is shipped in
# /usr/share/kiln/apparmor/ and put in /etc/apparmor.d by the postinst only
# where AppArmor is on and its parser accepts the profile (its `userns`
# rule needs AppArmor 4: Ubuntu 23.10 and later; Debian 12's 3.0 refuses it,
# and there unprivileged user namespaces are not restricted anyway).
# tests/suites/26-install.sh installs it in a scratch root, runs it,
# removes it, and runs lintian.
set -eu
cd "$(dirname "$0")/../.."

KILN=${KILN:-build/kiln}
version=$(sed -n 's/^#define KILN_VERSION "\(.*\)"$/\1/p' server/kiln.h)
arch=$(dpkg --print-architecture)
work=build/deb
pkg=$work/kiln_${version}_$arch
out=build/kiln_${version}_$arch.deb
rm -rf "$work"
mkdir -p "$pkg/DEBIAN"

KILN=$KILN DESTDIR=$PWD/$pkg PREFIX=/usr APPARMOR=no \
	ZSH_COMPDIR=/usr/share/zsh/vendor-completions sh server/tools/install.sh install >/dev/null
install -D -m 644 server/sandbox/apparmor/kiln "$pkg/usr/share/kiln/apparmor/kiln"
sed -i 's|^profile kiln /usr/{local/,}bin/kiln |profile kiln /usr/bin/kiln |' "$pkg/usr/share/kiln/apparmor/kiln"

# Policy: a stripped binary; compressed man pages and changelog; copyright.
strip --strip-unneeded --remove-section=.comment --remove-section=.note "$pkg/usr/bin/kiln"
gzip -9n "$pkg/usr/share/man/man1/kiln.1" "$pkg/usr/share/man/man5/kiln-config.5"
doc=$pkg/usr/share/doc/kiln
install -d -m 755 "$doc"
date=$(git log -1 --format=%cd --date=rfc2822 2>/dev/null || date -R)
{
	echo "kiln ($version) unstable; urgency=medium"
	echo
	echo "  * Built from the kiln source tree (git $(git rev-parse --short HEAD 2>/dev/null || echo unknown))."
	echo
	echo " -- The kiln authors <kiln@example.org>  $date"
} | gzip -9n >"$doc/changelog.gz"
{
	echo "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/"
	echo "Upstream-Name: kiln"
	echo
	echo "Files: *"
	echo "Copyright: 2026 The kiln authors"
	echo "License: Expat"
	sed -e 's/^$/./' -e 's/^/ /' LICENSE | sed '1,/^ Copyright/d'
} >"$doc/copyright"
chmod 644 "$doc/changelog.gz" "$doc/copyright"

# Depends: the shared libraries' packages (dpkg-shlibdeps reads
# debian/control from the folder it runs in); libcurl, which kiln dlopens
# on a model's first request (server/llm/curl_api.c); the box's Python.
mkdir -p "$work/src/debian"
printf 'Source: kiln\n\nPackage: kiln\nArchitecture: any\n' >"$work/src/debian/control"
shlibs=$(cd "$work/src" && dpkg-shlibdeps -O "$PWD/../../../$pkg/usr/bin/kiln" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
size=$(du -k -s "$pkg" | cut -f1)
cat >"$pkg/DEBIAN/control" <<EOC
Package: kiln
Version: $version
Architecture: $arch
Maintainer: The kiln authors <kiln@example.org>
Installed-Size: $size
Depends: $shlibs, libcurl4, python3
Recommends: python3-numpy, python3-pandas, python3-matplotlib, nodejs
Suggests: neovim, emacs, apparmor
Section: devel
Priority: optional
Description: safe code interpreter for editors, agents and the terminal
 kiln asks a language model for code that does what you wrote in plain
 words, checks it with its validator, and shows it as a proposal with
 diagnostics. Only when you approve does it run the code, in a namespace
 sandbox it builds itself (user, pid, mount, network, IPC and UTS
 namespaces, seccomp, Landlock, resource limits), streaming the output.
 .
 It speaks JSON-RPC like a language server and comes with a Neovim plugin,
 an Emacs package, a terminal session and an MCP server.
EOC

cat >"$pkg/DEBIAN/postinst" <<'EOS'
#!/bin/sh
# The AppArmor profile goes live only where AppArmor is on and its parser
# accepts it (the userns rule needs AppArmor 4).
set -e
r=${DPKG_ROOT:-}
if [ "$1" = configure ] && [ -z "$r" ] && [ -d /sys/kernel/security/apparmor ] &&
	command -v apparmor_parser >/dev/null 2>&1; then
	if apparmor_parser -Q -K /usr/share/kiln/apparmor/kiln >/dev/null 2>&1; then
		cp /usr/share/kiln/apparmor/kiln /etc/apparmor.d/kiln
		apparmor_parser -r -W /etc/apparmor.d/kiln || true
	fi
fi
exit 0
EOS
cat >"$pkg/DEBIAN/postrm" <<'EOS'
#!/bin/sh
set -e
r=${DPKG_ROOT:-}
if [ "$1" = remove ] || [ "$1" = purge ]; then
	if [ -f "$r/etc/apparmor.d/kiln" ]; then
		if [ -z "$r" ] && command -v apparmor_parser >/dev/null 2>&1 && [ -d /sys/kernel/security/apparmor ]; then
			apparmor_parser -R /etc/apparmor.d/kiln >/dev/null 2>&1 || true
		fi
		rm -f "$r/etc/apparmor.d/kiln"
	fi
fi
exit 0
EOS
chmod 755 "$pkg/DEBIAN/postinst" "$pkg/DEBIAN/postrm"
(cd "$pkg" && find usr -type f -exec md5sum {} + | LC_ALL=C sort -k2) >"$pkg/DEBIAN/md5sums"
chmod 644 "$pkg/DEBIAN/control" "$pkg/DEBIAN/md5sums"
find "$pkg" -type d -exec chmod 755 {} +

dpkg-deb --root-owner-group -Zxz --build "$pkg" "$out" >/dev/null
echo "$out"
