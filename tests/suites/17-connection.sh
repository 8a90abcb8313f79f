#!/bin/sh
# 17-connection.sh: the client connection end to end, against real server
# processes: a client that closes its read end mid-run, while output goes
# through the queue and while a clean run waits for room in its pipe (ASan
# build: no use-after-free, no spin, clean exit, no process left), a
# client that writes and never reads (bounded memory, healthy afterwards;
# release build, since ASan's quarantine would hide the figure), and a
# client process that dies while kiln's stdin stays open; and the form of
# every error message kiln sends over the transcripts.
# Last line: "connection: N passed, N failed".
set -u
cd "$(dirname "$0")/../.."
asan=build/asan/kiln
release=build/kiln
pass=0
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

check() { # name, then a command that must succeed (a program or a function)
	name=$1
	shift
	if command -v "$1" | grep -q / && cmd="timeout 300"; then :; else cmd=; fi
	if $cmd "$@" >"$tmp/out" 2>&1; then
		pass=$((pass + 1))
		echo "ok $name"
		sed 's/^/    /' "$tmp/out" | tail -3
	else
		fail=$((fail + 1))
		echo "not ok $name"
		sed 's/^/    /' "$tmp/out" | tail -40
	fi
}

for t in "$asan" "$release"; do
	if [ ! -x "$t" ]; then
		echo "$t is not built (run 'make asan build/kiln')"
		echo "connection: 0 passed, 1 failed"
		exit 1
	fi
done

check "client closes its read end while a run streams" \
	python3 tests/rpc/closed_output.py "$asan" lines
check "client closes its read end while a clean run waits for room in its pipe" \
	python3 tests/rpc/closed_output.py "$asan" room
check "client that never reads: input paused, memory bounded" \
	python3 tests/rpc/queue.py "$release"
check "client process dies: kiln exits (--clientProcessId, processId)" \
	python3 tests/rpc/client_gone.py "$asan"
help_names_client_options() {
	out=$("$asan" --help) || return 1
	for o in --stdio --clientProcessId; do
		echo "$out" | grep -q -- "$o" || { echo "--help does not mention $o"; return 1; }
	done
}
check "--help names --stdio and --clientProcessId" help_names_client_options
# The client's pipe is 512 KiB (server.c): two of a run's notifications,
# not more for the pages to go cold in (docs/performance-log.md, "Output,
# late evening").
client_pipe_512k() {
	python3 - "$release" <<'PY'
import fcntl, os, subprocess, sys
p = subprocess.Popen([sys.argv[1]], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
body = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{}}}'
p.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
p.stdin.flush()
got = os.read(p.stdout.fileno(), 65536)
size = fcntl.fcntl(p.stdout.fileno(), fcntl.F_GETPIPE_SZ)
p.stdin.close()
p.wait(timeout=30)
if not got or size != 512 * 1024:
    sys.exit("the client's pipe is %d bytes, not 512 KiB (reply %r)" % (size, got[:80]))
PY
}
check "the client's pipe is set to 512 KiB" client_pipe_512k
check "every error message in the transcripts starts with its code's standard text" \
	python3 tests/rpc/error_messages.py "$release"

echo "connection: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
