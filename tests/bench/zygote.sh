#!/bin/sh
# zygote.sh: Python runs forked from the zygote (sandbox.zygote, see
# docs/sandbox.md "The zygote") against bare python3 and against kiln's
# normal path (a warm box and a fresh interpreter): print(1), and
# `import numpy, pandas; print(1)`, through the server (snippet/run,
# request to response, a pause before each so the warm box or the zygote
# is ready, as between a person's runs). Ratios to bare. Then the same
# with a workspace (a project folder, as an editor has open): the zygote
# against the normal path, and, with KILN_OLD=path (a binary whose
# workspace runs take the normal path), old and new binaries in
# alternating turns. Not a test: nothing here fails on a number.
# Standalone: `sh tests/bench/zygote.sh` (needs hyperfine: `make
# deps-bench`). KILN=path overrides the binary; RUNS=N the repetitions.
# OLD=path: instead, KILN's and OLD's runs from the zygote (no workspace)
# and a bare python3, in turns in the same minutes
# (tests/bench/zygote_turns.py), spaced and back to back.
set -eu
cd "$(dirname "$0")/../.."
KILN=${KILN:-build/kiln}
RUNS=${RUNS:-30}
[ -x "$KILN" ] || make --no-print-directory build/kiln >/dev/null
command -v hyperfine >/dev/null || { echo "zygote bench: hyperfine missing (make deps-bench)"; exit 1; }
tmp=$(mktemp -d /tmp/kiln-bench-zygote.XXXXXX)
trap 'rm -rf "$tmp"' EXIT INT TERM
cp "$KILN" "$tmp/kiln"
KILN=$tmp/kiln
if [ -n "${OLD:-}" ]; then
	echo "zygote bench, $KILN and $OLD in turns ($RUNS turns, medians; $(nproc) cores, kernel $(uname -r))"
	for code in "print(1)" "import numpy, pandas; print(1)"; do
		echo "$code, 50 ms before each run:"
		python3 tests/bench/zygote_turns.py "$KILN" "$OLD" "$RUNS" "$code" 50
	done
	echo "print(1), back to back:"
	python3 tests/bench/zygote_turns.py "$KILN" "$OLD" "$RUNS" "print(1)" 0
	exit 0
fi
if [ -n "${KILN_OLD:-}" ]; then
	cp "$KILN_OLD" "$tmp/kiln-old"
	KILN_OLD=$tmp/kiln-old
fi
# The workspace: a small project with a secret to hide.
mkdir -p "$tmp/proj/src" "$tmp/proj/data"
chmod 755 "$tmp" "$tmp/proj" "$tmp/proj/src" "$tmp/proj/data"
printf 'x,y\n1,2\n' >"$tmp/proj/data/a.csv"
printf 'print(1)\n' >"$tmp/proj/src/main.py"
printf 'KEY=1\n' >"$tmp/proj/.env"
chmod 644 "$tmp/proj/data/a.csv" "$tmp/proj/src/main.py" "$tmp/proj/.env"
echo '{"sandbox": {"zygote": true}}' >"$tmp/zygote.json"
echo '{"sandbox": {"zygote": false}}' >"$tmp/normal.json"
PY=/usr/bin/python3

median() { # median COMMAND...: median milliseconds, from hyperfine ("nan" if it failed)
	if hyperfine -N --warmup 3 --runs "$RUNS" --export-json "$tmp/h.json" "$@" >/dev/null 2>&1; then
		python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["results"][0]["median"] * 1000)' "$tmp/h.json"
	else
		echo nan
	fi
}

# client CONFIG CODE [ROOT KILN EXPECT]: the median ms of RUNS snippet/runs
# of CODE, after the zygote (when the config has one; EXPECT "False": a
# binary whose runs in ROOT never use it) serves runs; "nan" if it never
# does. ROOT: the workspace folder (rootUri).
client() {
	python3 - "${4:-$KILN}" "$1" "$2" "$RUNS" "${3:-}" "${5:-}" <<'PY' || echo nan
import json, os, statistics, subprocess, sys, time
sys.path.insert(0, os.path.join(os.getcwd(), "tests", "lib"))
import kilnrpc
kiln, config, code, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
root, expect = sys.argv[5], sys.argv[6]
zygote = json.load(open(config))["sandbox"]["zygote"] and expect != "False"
p = subprocess.Popen([kiln, "--config", config], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
params = {"rootUri": "file://" + root} if root else {}
kilnrpc.send(p, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params})
kilnrpc.recv(p.stdout)
rid = 0
def run(c):
    global rid
    rid += 1
    t0 = time.perf_counter()
    kilnrpc.send(p, {"jsonrpc": "2.0", "id": rid, "method": "snippet/run",
                     "params": {"language": "python", "code": c}})
    out = ""
    while True:
        m = kilnrpc.recv(p.stdout)
        if m is None:
            raise SystemExit(1)
        if m.get("method") == "run/output":
            out += m["params"]["text"]
        elif m.get("id") == rid:
            if "error" in m:
                raise SystemExit(1)
            return time.perf_counter() - t0, out
probe = "import sys\nprint('kiln_zygote' in sys.modules)\n"
deadline = time.time() + 120
while True:
    _, out = run(probe)
    if out.strip() == str(zygote) or time.time() > deadline:
        break
    time.sleep(0.5)
if not zygote:
    time.sleep(3)  # a zygote that would be built is, and is not used
if out.strip() != str(zygote):
    raise SystemExit(1)
times = []
for _ in range(n):
    time.sleep(0.05)
    times.append(run(code)[0])
print(statistics.median(times) * 1000)
p.stdin.close()
p.wait()
PY
}

row() { # row LABEL BARE_MS MS [FIGURE]: FIGURE names the ratio for run.sh's baseline
	python3 -c 'import sys; l, b, m = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]); print("  %-44s %8.2f ms  %6.2fx bare" % (l, m, m / b))' "$1" "$2" "$3"
	[ -z "${4:-}" ] || python3 tests/bench/figures.py add "$4" \
		"$(python3 -c 'import sys; print(float(sys.argv[2]) / float(sys.argv[1]))' "$2" "$3")" \
		lower-is-better "$(printf '%.2f ms' "$3")" "bare \`python3 -c\`, $(printf '%.1f ms' "$2")"
}
fig() { # the figure name of a code's row: print1 or numpy_pandas
	case "$1" in "print(1)") echo print1 ;; *) echo numpy_pandas ;; esac
}

echo "zygote bench ($RUNS runs each, medians; $(nproc) cores, kernel $(uname -r))"
for code in "print(1)" "import numpy, pandas; print(1)"; do
	echo "$code:"
	bare=$(median "$PY -c '$code'")
	row "bare python3 -c" "$bare" "$bare"
	row "kiln server, normal path (warm box)" "$bare" "$(client "$tmp/normal.json" "$code")"
	row "kiln server, from the zygote" "$bare" "$(client "$tmp/zygote.json" "$code")" "zygote.$(fig "$code")"
done
for code in "print(1)" "import numpy, pandas; print(1)"; do
	echo "$code, with a workspace (overlay, secrets masked):"
	bare=$(median "$PY -c '$code'")
	row "bare python3 -c" "$bare" "$bare"
	row "kiln server, normal path (warm box)" "$bare" \
		"$(client "$tmp/normal.json" "$code" "$tmp/proj")"
	if [ -n "${KILN_OLD:-}" ]; then
		for turn in 1 2; do
			row "turn $turn: old binary, zygote on" "$bare" \
				"$(client "$tmp/zygote.json" "$code" "$tmp/proj" "$KILN_OLD" False)"
			row "turn $turn: new binary, from the zygote" "$bare" \
				"$(client "$tmp/zygote.json" "$code" "$tmp/proj")"
		done
	else
		row "kiln server, from the zygote" "$bare" \
			"$(client "$tmp/zygote.json" "$code" "$tmp/proj")" "zygote.$(fig "$code").workspace"
	fi
done
