#!/bin/sh
# install.sh install|uninstall: `make install` and `make uninstall`. The
# list below is the one description of what kiln installs and where; both
# verbs walk it, so uninstall removes exactly what install wrote (and the
# folders it leaves empty). Variables, as make passes them (the GNU names):
#   DESTDIR      a staging root (a package build); nothing is loaded then
#   PREFIX       /usr/local by default
#   BINDIR MANDIR DATADIR SYSCONFDIR   derived from PREFIX (SYSCONFDIR /etc)
#   ZSH_COMPDIR  where _kiln goes ($DATADIR/zsh/site-functions)
#   NVIM_PACKDIR where the Neovim plugin goes, a package on 'packpath'
#                ($DATADIR/nvim/site/pack/kiln/start/kiln)
#   LISPDIR      where kiln.el goes, on Emacs's load-path
#                ($DATADIR/emacs/site-lisp)
#   APPARMOR     yes, no or auto (default): install the AppArmor profile
#                when AppArmor is present here, for BINDIR/kiln
#   KILN         the binary to install (build/kiln)
set -eu
cd "$(dirname "$0")/../.."

verb=${1:-}
D=${DESTDIR:-}
PREFIX=${PREFIX:-/usr/local}
BINDIR=${BINDIR:-$PREFIX/bin}
MANDIR=${MANDIR:-$PREFIX/share/man}
DATADIR=${DATADIR:-$PREFIX/share}
SYSCONFDIR=${SYSCONFDIR:-/etc}
ZSH_COMPDIR=${ZSH_COMPDIR:-$DATADIR/zsh/site-functions}
NVIM_PACKDIR=${NVIM_PACKDIR:-$DATADIR/nvim/site/pack/kiln/start/kiln}
LISPDIR=${LISPDIR:-$DATADIR/emacs/site-lisp}
APPARMOR=${APPARMOR:-auto}
KILN=${KILN:-build/kiln}

if [ "$APPARMOR" = auto ]; then
	if [ -d /sys/kernel/security/apparmor ] || [ -d "$D$SYSCONFDIR/apparmor.d" ]; then
		APPARMOR=yes
	else
		APPARMOR=no
	fi
fi
# Installing for this machine (no DESTDIR): a profile its AppArmor cannot
# parse (the userns rule needs AppArmor 4; Debian 12 has 3.0, and does not
# restrict user namespaces) would break the reload of every profile.
if [ "$APPARMOR" = yes ] && [ -z "$D" ] && [ "$verb" = install ] && command -v apparmor_parser >/dev/null 2>&1 &&
	! apparmor_parser -Q -K server/sandbox/apparmor/kiln >/dev/null 2>&1; then
	echo "install.sh: this AppArmor cannot parse the kiln profile (it needs AppArmor 4); not installing it" >&2
	APPARMOR=no
fi

# mode source destination: every file kiln installs.
files() {
	echo "755 $KILN $BINDIR/kiln"
	echo "644 docs/man/kiln.1 $MANDIR/man1/kiln.1"
	echo "644 docs/man/kiln-config.5 $MANDIR/man5/kiln-config.5"
	echo "644 server/completion/kiln.bash $DATADIR/bash-completion/completions/kiln"
	echo "644 server/completion/_kiln $ZSH_COMPDIR/_kiln"
	for f in $(cd editor-clients/nvim && find plugin lua doc -type f | LC_ALL=C sort); do
		echo "644 editor-clients/nvim/$f $NVIM_PACKDIR/$f"
	done
	echo "644 editor-clients/emacs/kiln.el $LISPDIR/kiln.el"
	[ "$APPARMOR" = yes ] && echo "644 server/sandbox/apparmor/kiln $SYSCONFDIR/apparmor.d/kiln"
	return 0
}

# The profile names the binary it lets make a user namespace: the installed one.
apparmor_profile() {
	sed "s|^profile kiln /usr/{local/,}bin/kiln |profile kiln $BINDIR/kiln |" "$1"
}

case "$verb" in
install)
	[ -x "$KILN" ] || { echo "install.sh: $KILN is not built (make)" >&2; exit 1; }
	files | while read -r mode src dst; do
		install -d -m 755 "$D$(dirname "$dst")"
		if [ "$src" = server/sandbox/apparmor/kiln ]; then
			apparmor_profile "$src" >"$D$dst.tmp" && chmod "$mode" "$D$dst.tmp" && mv "$D$dst.tmp" "$D$dst"
		else
			install -m "$mode" "$src" "$D$dst"
		fi
		echo "installed $D$dst"
	done
	if [ "$APPARMOR" = yes ] && [ -z "$D" ] && command -v apparmor_parser >/dev/null 2>&1 &&
		[ -d /sys/kernel/security/apparmor ]; then
		apparmor_parser -r "$SYSCONFDIR/apparmor.d/kiln" && echo "loaded the AppArmor profile $SYSCONFDIR/apparmor.d/kiln"
	fi
	;;
uninstall)
	if [ "$APPARMOR" = yes ] && [ -z "$D" ] && [ -f "$SYSCONFDIR/apparmor.d/kiln" ] &&
		command -v apparmor_parser >/dev/null 2>&1 && [ -d /sys/kernel/security/apparmor ]; then
		apparmor_parser -R "$SYSCONFDIR/apparmor.d/kiln" 2>/dev/null || true
	fi
	files | while read -r mode src dst; do
		if [ -e "$D$dst" ]; then
			rm -f "$D$dst"
			echo "removed $D$dst"
		fi
	done
	# The folders that are kiln's own: the Neovim package, and its
	# pack/kiln/start above it when that is where it went. Shared folders
	# (bin, man1, site-lisp, ...) stay, empty or not.
	if [ -d "$D$NVIM_PACKDIR" ]; then
		find "$D$NVIM_PACKDIR" -depth -type d -empty -delete
	fi
	case "$NVIM_PACKDIR" in
	*/pack/kiln/start/kiln)
		start=$(dirname "$NVIM_PACKDIR")
		rmdir "$D$start" 2>/dev/null && rmdir "$(dirname "$D$start")" 2>/dev/null
		;;
	esac
	true
	;;
*)
	echo "usage: install.sh install|uninstall (make install / make uninstall)" >&2
	exit 2
	;;
esac
