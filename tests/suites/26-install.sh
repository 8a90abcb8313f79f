#!/bin/sh
# 26-install.sh: kiln installs like a real tool (issue 37): `make install`
# and `make uninstall` with PREFIX and DESTDIR put the binary, kiln(1),
# kiln-config(5), the bash and zsh completions, the Neovim plugin, the
# Emacs package and the AppArmor profile where they are found, and take
# exactly those away again. The man pages are what their Markdown makes,
# render with no warning, and name every subcommand and option `--help`
# names; the completions offer each of them, tried in a real bash and a
# real zsh (in a tmux pty, as a person presses Tab). `make deb` makes a
# package lintian passes, that installs into a scratch root (where a
# normal user runs code with it) and is purged again. `make dist` makes a
# source tarball that builds in a network namespace with no network.
set -u
cd "$(dirname "$0")/../.."
kiln=${KILN_BIN:-build/kiln}
root=$PWD
pass=0
fail=0
tmp=$(mktemp -d)
sock=kiln-install-$$
cleanup() {
	tmux -L "$sock" kill-server 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

# check NAME COMMAND... (tests/lib/check.sh)
. tests/lib/check.sh

[ -x "$kiln" ] || make --no-print-directory "$kiln" >/dev/null

# Every subcommand `kiln --help` lists, and every option each one's --help
# names (long options, and the global ones), as the tests compare them.
subcommands() {
	"$kiln" --help | sed -n -E 's/^(Usage: |       )kiln ([a-z]{2,})( .*)?$/\2/p' | sort -u
}
options_of() { # subcommand, or "" for kiln itself
	if [ -z "$1" ]; then
		"$kiln" --help | sed -n '/^Options/,$p'
	else
		"$kiln" "$1" --help
	fi | grep -o -- '--[a-zA-Z][a-zA-Z-]*' | grep -v -x -- '--lang\b' | sort -u
}

# --- the man pages --------------------------------------------------------
man_current() { sh server/tools/man.sh --check; }
check "man: docs/man/kiln.1 and kiln-config.5 are what their Markdown makes" man_current

man_renders() {
	# The pages as the Markdown and the filter make them now.
	mkdir -p "$tmp/man" && sh server/tools/man.sh --out "$tmp/man" || return 1
	for page in "$tmp/man/kiln.1" "$tmp/man/kiln-config.5"; do
		w=$(MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null)
		[ -z "$w" ] || { echo "$page: $w"; return 1; }
		MANWIDTH=80 man -l "$page" 2>/dev/null | grep -q '^NAME' || { echo "$page: no NAME"; return 1; }
	done
}
check "man: both pages render with no groff warning" man_renders

man_names_all() {
	subs=$(subcommands)
	[ "$(echo "$subs" | wc -l)" -ge 6 ] || { echo "too few subcommands read from --help: $subs"; return 1; }
	page=$(MANWIDTH=200 man -l docs/man/kiln.1 2>/dev/null)
	for s in $subs; do
		echo "$page" | grep -q "^       kiln .*$s" || { echo "kiln(1)'s synopsis lacks $s"; return 1; }
		for o in $(options_of "$s"); do
			echo "$page" | grep -q -- "$o" || { echo "kiln(1) does not name $s's $o"; return 1; }
		done
	done
	for o in $(options_of ""); do
		echo "$page" | grep -q -- "$o" || { echo "kiln(1) does not name the option $o"; return 1; }
	done
}
check "man: kiln(1) names every subcommand and option --help names" man_names_all

config_page_has_sections() {
	mkdir -p "$tmp/man" && sh server/tools/man.sh --out "$tmp/man" || return 1
	page=$(MANWIDTH=200 man -l "$tmp/man/kiln-config.5" 2>/dev/null)
	for s in 'llm: the model server' 'sandbox: where code runs' 'validator: what code may do'; do
		echo "$page" | grep -q "^$s" || { echo "kiln-config(5) lacks the section '$s'"; return 1; }
	done
	# A table row became an entry: a key and its default.
	echo "$page" | grep -A3 '^       provider' | grep -q 'default: ollama'
}
check "man: kiln-config(5) is docs/configuration.md, its tables as entries" config_page_has_sections

# --- make install / uninstall -------------------------------------------
stage=$tmp/stage
install_stage() {
	make --no-print-directory install DESTDIR="$stage" PREFIX=/usr APPARMOR=yes >"$tmp/install.log" 2>&1 || {
		cat "$tmp/install.log"
		return 1
	}
}
install_ok() {
	install_stage || return 1
	for f in usr/bin/kiln usr/share/man/man1/kiln.1 usr/share/man/man5/kiln-config.5 \
		usr/share/bash-completion/completions/kiln usr/share/zsh/site-functions/_kiln \
		usr/share/nvim/site/pack/kiln/start/kiln/plugin/kiln.lua \
		usr/share/nvim/site/pack/kiln/start/kiln/lua/kiln/init.lua \
		usr/share/nvim/site/pack/kiln/start/kiln/doc/kiln.txt \
		usr/share/nvim/site/pack/kiln/start/kiln/doc/tags \
		usr/share/emacs/site-lisp/kiln.el etc/apparmor.d/kiln; do
		[ -f "$stage/$f" ] || { echo "not installed: $f"; return 1; }
	done
	[ "$(stat -c %a "$stage/usr/bin/kiln")" = 755 ] && [ "$(stat -c %a "$stage/usr/share/man/man1/kiln.1")" = 644 ] &&
		"$stage/usr/bin/kiln" --version | grep -q '^kiln '
}
check "install: DESTDIR and PREFIX: the binary (runs), both man pages, completions, Neovim, Emacs, AppArmor" install_ok

install_apparmor_names_binary() {
	[ -f "$stage/etc/apparmor.d/kiln" ] || install_stage || return 1
	grep -q '^profile kiln /usr/bin/kiln flags=(unconfined) {$' "$stage/etc/apparmor.d/kiln" &&
		grep -q '^  userns,$' "$stage/etc/apparmor.d/kiln"
}
check "install: the AppArmor profile names the installed binary's path" install_apparmor_names_binary

install_no_apparmor() {
	make --no-print-directory install DESTDIR="$tmp/noaa" PREFIX=/opt/kiln APPARMOR=no >/dev/null 2>&1 &&
		[ -x "$tmp/noaa/opt/kiln/bin/kiln" ] && [ ! -e "$tmp/noaa/etc/apparmor.d/kiln" ] &&
		[ -f "$tmp/noaa/opt/kiln/share/man/man1/kiln.1" ]
}
check "install: PREFIX moves everything; APPARMOR=no leaves the profile out" install_no_apparmor

install_nvim_loads() {
	[ -f "$stage/usr/bin/kiln" ] || install_stage || return 1
	out=$(HOME=$tmp XDG_DATA_DIRS=$stage/usr/share nvim --headless -u NONE -i NONE \
		-c 'set packpath^=' -c 'packloadall' -c 'lua io.stdout:write(tostring(vim.fn.exists(":KilnRun")))' \
		-c 'help kiln' -c 'lua io.stdout:write(" " .. vim.fn.expand("%:t"))' -c 'qa!' 2>&1)
	echo "$out"
	[ "$out" = "2 kiln.txt" ]
}
check "install: Neovim finds the installed plugin on its packpath, and :help kiln" install_nvim_loads

install_emacs_loads() {
	[ -f "$stage/usr/bin/kiln" ] || install_stage || return 1
	emacs --batch -Q -L "$stage/usr/share/emacs/site-lisp" --eval "(progn (require 'kiln) (princ (if (commandp 'kiln-run) \"ok\" \"no\")))" 2>&1 | tail -n 1 | grep -qx ok
}
check "install: Emacs requires the installed kiln.el" install_emacs_loads

uninstall_clean() {
	[ -f "$stage/usr/bin/kiln" ] || install_stage || return 1
	# Something of the person's own beside kiln's files stays.
	echo mine >"$stage/usr/share/emacs/site-lisp/mine.el"
	make --no-print-directory uninstall DESTDIR="$stage" PREFIX=/usr APPARMOR=yes >/dev/null 2>&1 || return 1
	left=$(cd "$stage" && find . -type f | sort)
	[ "$left" = "./usr/share/emacs/site-lisp/mine.el" ] || { echo "left: $left"; return 1; }
	[ ! -e "$stage/usr/share/nvim/site/pack/kiln" ] || { echo "pack/kiln left"; return 1; }
	[ -d "$stage/usr/bin" ] # shared folders stay
}
check "uninstall: every file install wrote is gone, the person's own stay" uninstall_clean

# --- make deb -------------------------------------------------------------
deb=
deb_build() {
	[ -n "$deb" ] && return 0
	deb=$(make --no-print-directory deb 2>"$tmp/deb.err" | tail -n 1) && [ -f "$deb" ] || {
		cat "$tmp/deb.err"
		deb=
		return 1
	}
}
deb_lintian() {
	deb_build || return 1
	lintian --pedantic "$deb" >"$tmp/lintian" 2>&1
	cat "$tmp/lintian"
	! grep -q '^[EW]: ' "$tmp/lintian"
}
check "deb: make deb builds a package lintian finds no error or warning in" deb_lintian

deb_depends_here() {
	deb_build || return 1
	deps=$(dpkg-deb -f "$deb" Depends)
	echo "Depends: $deps"
	# Every library the binary names (NEEDED), by the package that holds
	# it here; libcurl, which it dlopens; the box's python3.
	for lib in $(readelf -d build/kiln | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
		pkg=$(dpkg -S "*/$lib" 2>/dev/null | grep -v -e '-dev' -e 'i386' | head -n 1 | cut -d: -f1)
		[ -n "$pkg" ] || { echo "no package holds $lib"; return 1; }
		echo "$deps" | grep -q "\(^\|, \)$pkg\( \|,\|$\)" || { echo "Depends lacks $pkg ($lib)"; return 1; }
	done
	echo "$deps" | grep -q 'libjson-c5' && echo "$deps" | grep -q 'libcurl4' &&
		echo "$deps" | grep -q 'python3' || return 1
	for p in $(echo "$deps" | tr ',' '\n' | sed 's/(.*//; s/ //g'); do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
			{ echo "$p is not installed on this Debian"; return 1; }
	done
}
check "deb: Depends names the package of every library the binary needs, libcurl and python3, each installed here" deb_depends_here

droot=$tmp/droot
deb_install() {
	deb_build || return 1
	rm -rf "$droot" && mkdir -p "$droot/var/lib/dpkg/info" "$droot/var/lib/dpkg/updates" &&
		touch "$droot/var/lib/dpkg/status" || return 1
	# A scratch root: its dpkg database is empty, so the Depends (checked
	# above against this machine) are forced, and the scripts run with
	# DPKG_ROOT set rather than chrooted into a root with no shell.
	dpkg --root="$droot" --force-script-chrootless --force-depends -i "$deb" >"$tmp/dpkg.log" 2>&1 || {
		cat "$tmp/dpkg.log"
		return 1
	}
}
deb_runs_for_nobody() {
	deb_install || return 1
	dpkg --root="$droot" -s kiln | grep -q '^Status: install ok installed' || return 1
	for f in usr/bin/kiln usr/share/man/man1/kiln.1.gz usr/share/man/man5/kiln-config.5.gz \
		usr/share/doc/kiln/copyright usr/share/doc/kiln/changelog.gz \
		usr/share/bash-completion/completions/kiln usr/share/zsh/vendor-completions/_kiln \
		usr/share/nvim/site/pack/kiln/start/kiln/plugin/kiln.lua usr/share/emacs/site-lisp/kiln.el \
		usr/share/kiln/apparmor/kiln; do
		[ -f "$droot/$f" ] || { echo "not in the package: $f"; return 1; }
	done
	MANWIDTH=80 man -l "$droot/usr/share/man/man1/kiln.1.gz" 2>/dev/null | grep -q '^NAME' || return 1
	# A normal user runs code with the installed binary, in a project folder.
	mkdir -p "$tmp/nbhome/proj" && chmod -R 777 "$tmp/nbhome" && chmod 755 "$tmp" || return 1
	echo 'print(6 * 7)' >"$tmp/nbhome/proj/six.py"
	out=$(cd "$tmp/nbhome/proj" && setpriv --reuid=nobody --regid=nogroup --clear-groups \
		env HOME="$tmp/nbhome" "$droot/usr/bin/kiln" run six.py 2>&1)
	echo "$out"
	[ "$(echo "$out" | head -n 1)" = 42 ]
}
check "deb: installed in a scratch root, every piece in place, and nobody runs code with it" deb_runs_for_nobody

deb_removes() {
	[ -f "$droot/usr/bin/kiln" ] || deb_install || return 1
	dpkg --root="$droot" --force-script-chrootless -P kiln >"$tmp/dpkg.log" 2>&1 || { cat "$tmp/dpkg.log"; return 1; }
	left=$(cd "$droot" && find . -path ./var -prune -o -type f -print)
	[ -z "$left" ] || { echo "left: $left"; return 1; }
}
check "deb: dpkg -P removes every file it installed" deb_removes

# --- make dist ------------------------------------------------------------
dist_builds_offline() {
	tarball=$(make --no-print-directory dist 2>"$tmp/dist.err" | tail -n 1) && [ -f "$tarball" ] || { cat "$tmp/dist.err"; return 1; }
	mkdir -p "$tmp/dist" && tar -C "$tmp/dist" -xJf "$tarball" || return 1
	src=$(echo "$tmp"/dist/kiln-*)
	# Nothing built, nothing of node's, nothing of git's in it.
	[ ! -e "$src/build" ] && [ -z "$(find "$src" -name node_modules -o -name .git | head -n 1)" ] || { echo "build products in the tarball"; return 1; }
	# No network at all: a network namespace of its own, with only lo (down).
	unshare -n sh -c "cd '$src' && make -j2 build/kiln" >"$tmp/dist.log" 2>&1 || { tail -n 15 "$tmp/dist.log"; return 1; }
	grep -q 'fetched tree-sitter-python 0.23.6 (sha256 ok)' "$tmp/dist.log" || { echo "the grammars were not unpacked from the tarball"; return 1; }
	# The grammars are in: a bash syntax error is found by tree-sitter.
	printf 'if then fi\n' >"$tmp/broken.sh"
	"$src/build/kiln" validate "$tmp/broken.sh" >"$tmp/v.out" 2>&1
	rc=$?
	cat "$tmp/v.out"
	[ "$rc" = 2 ] && grep -q 'broken.sh:1:.*error' "$tmp/v.out"
}
check "dist: make dist's tarball builds with no network, the grammars from its vendor/ (sums checked)" dist_builds_offline

# --- completions ----------------------------------------------------------
# bash: bash-completion's own loader, then _kiln for a command line.
bash_complete() { # words...: prints the candidates for the last word
	KILN_COMPLETION=$root/server/completion/kiln.bash bash --norc --noprofile -c '
		. /usr/share/bash-completion/bash_completion
		. "$KILN_COMPLETION"
		COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
		COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
		_kiln kiln "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
		printf "%s\n" "${COMPREPLY[@]}"' kiln "$@"
}
bash_subcommands() {
	got=$(bash_complete kiln "" | sort)
	[ "$got" = "$(subcommands)" ] || { echo "offered: $got"; echo "--help: $(subcommands)"; return 1; }
}
check "bash: kiln <Tab> offers exactly the subcommands --help lists" bash_subcommands
bash_options() {
	for s in $(subcommands); do
		[ "$s" = cache ] && continue
		got=$(bash_complete kiln "$s" -- | sort)
		for o in $(options_of "$s"); do
			echo "$got" | grep -qx -- "$o" || { echo "kiln $s --<Tab> lacks $o: $got"; return 1; }
		done
	done
	got=$(bash_complete kiln -- | sort)
	for o in $(options_of ""); do
		echo "$got" | grep -q -- "^$o" || { echo "kiln --<Tab> lacks $o"; return 1; }
	done
}
check "bash: each subcommand's --<Tab> offers every option its --help names" bash_options
bash_values() {
	[ "$(bash_complete kiln run --lang py | tr '\n' ' ')" = "python py " ] &&
		[ "$(bash_complete kiln validate --profile s | tr '\n' ' ')" = "strict standard " ] &&
		[ "$(bash_complete kiln cache "" | tr '\n' ' ')" = "clear path " ] &&
		(cd "$tmp" && touch sales.csv && [ "$(bash_complete kiln run sa)" = sales.csv ])
}
check "bash: values: --lang, --profile, cache's actions, files for run" bash_values

# zsh: a real zsh in a tmux pty, compinit with the installed _kiln.
zsh_tab() { # line to type, pattern awaited: prints the screen after Tab
	tmux -L "$sock" kill-server 2>/dev/null
	mkdir -p "$tmp/zdot"
	cat >"$tmp/zdot/.zshrc" <<EOZ
fpath=($PWD/server/completion \$fpath)
PS1='%% '
autoload -Uz compinit && compinit -u -d $tmp/zdot/.zcompdump
zstyle ':completion:*' list-rows-first true
EOZ
	ZDOTDIR=$tmp/zdot tmux -L "$sock" -f /dev/null new-session -d -x 160 -y 30 "cd $tmp && zsh -i"
	for _ in $(seq 50); do
		tmux -L "$sock" capture-pane -p | grep -q '^%' && break
		sleep 0.1
	done
	tmux -L "$sock" send-keys -l "$1"
	tmux -L "$sock" send-keys Tab
	# Until the screen shows PATTERN (a busy machine is slow to draw), at
	# most 15 s; the screen as it is then.
	for _ in $(seq 150); do
		tmux -L "$sock" capture-pane -p | grep -q -- "$2" && break
		sleep 0.1
	done
	tmux -L "$sock" capture-pane -p
}
zsh_subcommand() {
	screen=$(zsh_tab "kiln ru" '^% kiln run *$')
	echo "$screen" | grep -q '^% kiln run *$' || { echo "$screen"; return 1; }
}
check "zsh: kiln ru<Tab> completes to kiln run" zsh_subcommand
zsh_option() {
	screen=$(zsh_tab "kiln run --ov" '^% kiln run --override *$')
	echo "$screen" | grep -q '^% kiln run --override *$' || { echo "$screen"; return 1; }
}
check "zsh: kiln run --ov<Tab> completes to --override" zsh_option
zsh_lists() {
	screen=$(zsh_tab "kiln " 'validate ')
	for s in $(subcommands); do
		echo "$screen" | grep -q "$s" || { echo "no $s in: $screen"; return 1; }
	done
}
check "zsh: kiln <Tab> lists every subcommand --help lists" zsh_lists

echo "26-install: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
