#!/bin/sh
# 70-session.sh: sessions that keep state (docs/sandbox.md, "Sessions"),
# through the real server: one-shot Python's displays,
# each session run's own workspaceChanges, names kept between runs,
# displays of the last
# expression, of DataFrames and of matplotlib figures (skipped, saying
# why, when Debian's python3-pandas or python3-matplotlib is missing),
# interrupts at the wall clock, a session whose program dies, reset,
# close, idle close, isolation, a forged channel frame, and no process
# left behind (tests/sandbox/session.py), then the same with
# sandbox.zygote on, each session's driver forked from the Python zygote
# (session.py --zygote); declined and accepted workspace changes of a
# session's runs (tests/sandbox/session_decline.py, with and without the
# zygote); then `kiln shell` on a pty with
# its session, saved displays, inline images (kitty, iTerm2) and OSC 8
# links, no to a session run's changes, :reset/:new, Ctrl-C at the prompt, the line history, the edit
# path, the code streamed on the status line, and kiln ask
# (tests/cli/shell_session.py). As root, the session checks (with and
# without the zygote) run again as the unprivileged user nobody
# (setpriv), from a private copy of the binaries. Last line:
# "70-session: N passed, N failed". KILN_TEST_ONLY="session_decline
# shell_session ..." (make mutate) runs only those scripts (their names
# without .py), in every variant.
set -u
cd "$(dirname "$0")/../.."

name=70-session
. tests/lib/suite.sh
find_kiln

pass=0
fail=0
count() { # count LABEL OUTPUT: add a script's summary line
	echo "$2" | grep -v -E '^[0-9]+ passed, [0-9]+ failed' | sed -e "s/^/$1/"
	line=$(echo "$2" | grep -E '^[0-9]+ passed, [0-9]+ failed' | tail -n 1)
	if [ -z "$line" ]; then
		echo "${1}no summary line: counted as 1 failure"
		fail=$((fail + 1))
		return
	fi
	p=${line%% passed*}
	f=${line#*passed, }
	f=${f%% failed*}
	pass=$((pass + p))
	fail=$((fail + f))
}
wanted() { # wanted SCRIPT: whether KILN_TEST_ONLY (empty: all) names it
	[ -z "${KILN_TEST_ONLY:-}" ] && return 0
	case " $KILN_TEST_ONLY " in *" $(basename "$1" .py) "*) return 0 ;; esac
	return 1
}
for script in tests/sandbox/session.py tests/sandbox/session_decline.py \
	tests/cli/shell_session.py; do
	wanted "$script" || continue
	count "" "$(timeout 600 /usr/bin/python3 "$script" "$KILN" 2>&1)"
done
for script in tests/sandbox/session.py tests/sandbox/session_decline.py; do
	wanted "$script" || continue
	count "zygote: " "$(timeout 600 /usr/bin/python3 "$script" "$KILN" --zygote 2>&1)"
done

if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null 2>&1; then
	tmp=$(mktemp -d /tmp/kiln-session-suite.XXXXXX)
	trap 'rm -rf "$tmp"' EXIT INT TERM
	mkdir -p "$tmp/sandbox" "$tmp/lib" "$tmp/fake-model"
	cp "$KILN" "$tmp/kiln"
	cp tests/sandbox/session.py tests/sandbox/session_decline.py "$tmp/sandbox/"
	cp tests/lib/kilnrpc.py "$tmp/lib/"
	cp tests/fake-model/fake_model.py "$tmp/fake-model/"
	chmod -R a+rX "$tmp"
	for zygote in "" --zygote; do
		for script in session.py session_decline.py; do
			wanted "$script" || continue
			count "nobody${zygote:+ zygote}: " "$(setpriv --reuid=65534 --regid=65534 \
				--clear-groups env -i PATH=/usr/bin:/bin HOME=/tmp LANG=C.UTF-8 \
				ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}" \
				timeout 600 /usr/bin/python3 "$tmp/sandbox/$script" "$tmp/kiln" $zygote \
				2>&1 </dev/null)"
		done
	done
fi
echo "$name: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
