#!/bin/sh
# 30-sandbox.sh: the sandbox's tests. The UTF-8/limits unit checks, runs
# started while other threads allocate (tests/sandbox/test_threads.c), then
# the attack suite (tests/sandbox/attacks.py): every escape attempt of
# issue 3 run inside kiln's box, each followed by a check of the host; and
# a check that nothing under server/sandbox/ includes the protocol.
# As root it runs twice: as root, and as the unprivileged user nobody
# (setpriv), from a private copy of the binaries nobody can read; and
# once where no box can be built, where every case must fail; and the
# attacks again through the Python zygote (tests/sandbox/zygote.py), and
# the zygote's own cases (tests/sandbox/zygote_*.py, by topic), as root
# and as nobody; and runs and sessions that come while the zygote's spare
# is on its way (tests/sandbox/zygote_spare.py), likewise. Last line:
# "30-sandbox: N passed, N failed".
set -u
cd "$(dirname "$0")/../.."

name=30-sandbox
pass=0
fail=0

. tests/lib/suite.sh
find_kiln

tmp=$(mktemp -d /tmp/kiln-sandbox-suite.XXXXXX)
trap 'rm -rf "$tmp"' EXIT INT TERM
chmod 755 "$tmp"
log=$tmp/log

# The sandbox talks to a sink and gets the loop and its config: it knows
# nothing of the protocol or of the server's state (docs/sandbox.md).
bad=$(grep -l -E '#include "(rpc/|kiln\.h|config\.h|methods/)' $(find server/sandbox -name "*.[ch]"))
if [ -z "$bad" ]; then
	pass=$((pass + 1))
else
	echo "layering: not ok: these include rpc/, kiln.h, config.h or methods/: $bad"
	fail=$((fail + 1))
fi

# Unit checks of text.c, limits.c, the config check and artifact names
# against the sanitizer build.
CFLAGS_J=$(pkg-config --cflags json-c)
LIBS_J=$(pkg-config --libs json-c)
if [ -f build/asan/libkiln.a ] &&
	cc -O1 -g -fsanitize=address,undefined -std=gnu17 -Wall -Wextra -Werror -Iserver \
		-D_GNU_SOURCE $CFLAGS_J -o "$tmp/test_text" tests/sandbox/test_text.c \
		build/asan/libkiln.a $LIBS_J $(pkg-config --libs libseccomp) -lm >"$log" 2>&1; then
	"$tmp/test_text" >"$log" 2>&1
	add "$log" "unit: " $?
else
	cat "$log" 2>/dev/null
	echo "unit: cannot build tests/sandbox/test_text.c (needs build/asan/libkiln.a)"
	fail=$((fail + 1))
fi

# Runs and workers start safely while other threads allocate (no lock is
# taken between clone and exec).
if [ -f build/asan/libkiln.a ] &&
	cc -O1 -g -fsanitize=address,undefined -std=gnu17 -Wall -Wextra -Werror -Iserver \
		-D_GNU_SOURCE $CFLAGS_J -o "$tmp/test_threads" tests/sandbox/test_threads.c \
		build/asan/libkiln.a $LIBS_J $(pkg-config --libs libseccomp) -lpthread -lm \
		>"$log" 2>&1; then
	"$tmp/test_threads" >"$log" 2>&1
	add "$log" "threads: " $?
else
	cat "$log" 2>/dev/null
	echo "threads: cannot build tests/sandbox/test_threads.c"
	fail=$((fail + 1))
fi

# The attack program runs inside the box (dynamically linked: the box has
# the system's libc).
if ! cc -O1 -Wall -o "$tmp/attack" tests/sandbox/attack.c >"$log" 2>&1; then
	cat "$log"
	echo "$name: $pass passed, $((fail + 1)) failed"
	exit 1
fi
cp "$KILN" "$tmp/kiln"
# The release build too: a memory figure under ASan says little.
if [ ! -x build/kiln ]; then
	echo "$name: no build/kiln (run make build/kiln): the backpressure memory check needs it"
	echo "$name: $pass passed, $((fail + 1)) failed"
	exit 1
fi
cp build/kiln "$tmp/kiln-release"
# The zygote's files: the attacks through it (zygote.py, which the others
# import), then its own cases by topic, each against a server of its own.
zygote_files="zygote.py zygote_fork.py zygote_workspace.py zygote_runs.py zygote_end.py"
cp tests/sandbox/attacks.py tests/sandbox/rpc.py tests/sandbox/zygote_spare.py tests/lib/kilnrpc.py "$tmp/"
for z in $zygote_files; do
	cp "tests/sandbox/$z" "$tmp/"
	chmod 755 "$tmp/$z"
done
chmod 755 "$tmp/kiln" "$tmp/kiln-release" "$tmp/attack" "$tmp/attacks.py" "$tmp/rpc.py" \
	"$tmp/zygote_spare.py"
chmod 644 "$tmp/kilnrpc.py"

# KILN_TEST_ONLY="case case..." (make mutate): those attack cases, as root
# (zygote-* are the zygote files'; each runs those of its own; spare-*
# zygote_spare.py's).
only=
zonly=
sonly=
for c in ${KILN_TEST_ONLY:-}; do
	case $c in
	zygote-*) zonly="$zonly --only $c" ;;
	spare-*) sonly="$sonly --only $c" ;;
	*) only="$only --only $c" ;;
	esac
done

run_as() { # run_as LABEL [WRAPPER...]
	label=$1
	shift
	"$@" env -i PATH=/usr/bin:/bin HOME=/tmp LANG=C.UTF-8 \
		ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}" \
		python3 "$tmp/attacks.py" --kiln "$tmp/kiln" --attack "$tmp/attack" \
		--kiln-release "$tmp/kiln-release" ${attack_args:-} $only \
		>"$log" 2>&1 </dev/null
	add "$log" "$label: " $?
}

# The same attacks through the Python zygote (sandbox.zygote), and its own
# cases (tests/sandbox/zygote*.py, one process a file): as root and as
# nobody.
zygote_as() { # zygote_as LABEL [WRAPPER...]
	label=$1
	shift
	for z in $zygote_files; do
		"$@" env -i PATH=/usr/bin:/bin HOME=/tmp LANG=C.UTF-8 \
			ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}" \
			python3 "$tmp/$z" --kiln "$tmp/kiln" --attack "$tmp/attack" ${zonly:-} \
			>"$log" 2>&1 </dev/null
		add "$log" "$label ${z%.py}: " $?
	done
}

# A run or session while the zygote's spare is on its way: it waits off
# the loop (tests/sandbox/zygote_spare.py).
spare_as() { # spare_as LABEL [WRAPPER...]
	label=$1
	shift
	"$@" env -i PATH=/usr/bin:/bin HOME=/tmp LANG=C.UTF-8 \
		ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}" \
		python3 "$tmp/zygote_spare.py" --kiln "$tmp/kiln" ${sonly:-} \
		>"$log" 2>&1 </dev/null
	add "$log" "$label spare: " $?
}

if [ -n "$only$zonly$sonly" ]; then
	[ -n "$only" ] && run_as "$(id -un)"
	[ -n "$zonly" ] && zygote_as "$(id -un)"
	[ -n "$sonly" ] && spare_as "$(id -un)"
elif [ "$(id -u)" = 0 ]; then
	run_as root
	zygote_as root
	spare_as root
	# Where no box can be built (a user namespace of the suite's own
	# whose user.max_user_namespaces is 0), every case that needs a box
	# must fail: one that passes there would pass with the sandbox gone.
	attack_args=--no-box
	run_as no-box unshare --user --map-root-user \
		sh -c 'echo 0 >/proc/sys/user/max_user_namespaces && exec "$@"' sh
	attack_args=
	if command -v setpriv >/dev/null 2>&1; then
		run_as nobody setpriv --reuid=65534 --regid=65534 --clear-groups
		zygote_as nobody setpriv --reuid=65534 --regid=65534 --clear-groups
		spare_as nobody setpriv --reuid=65534 --regid=65534 --clear-groups
	else
		echo "nobody: setpriv (util-linux) is missing: cannot test unprivileged"
		fail=$((fail + 1))
	fi
else
	run_as "$(id -un)"
	zygote_as "$(id -un)"
	spare_as "$(id -un)"
fi

echo "$name: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
