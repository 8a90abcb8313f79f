#!/bin/sh
# workspace.sh: what each step of the workspace costs a run, against the
# same run without that step, in turns in the same minutes (issue 34):
# the workspace itself (overlay, hide list, diff) against none; the
# secrets' masks (20 secret files at depths 0-4) against a folder of the
# same files under plain names; as root, the idmapped lower layer
# against none (KILN_BENCH_NO_IDMAP=1, a bench-only knob: host.h); a
# 10 MiB binary change kept in the run's folder against the same bytes
# written to the box's scratch /work (a tmpfs, as the upper layer), and workspace/applyChanges of it against
# `cp`. Each for Python from the zygote (the default path) and, for the
# box's own steps, /bin/true in a warm box and in a cold one (built at
# the request, so steps made ahead show). Runs by
# tests/bench/workspace_turns.py. Not a test: nothing here fails on a
# number. Standalone: `sh tests/bench/workspace.sh`. KILN=path overrides
# the binary; RUNS=N the turns (30), KEEP_RUNS=N the 10 MiB turns (20,
# at most 31: the server keeps the changes of its last 32 runs).
set -eu
cd "$(dirname "$0")/../.."
KILN=${KILN:-build/kiln}
RUNS=${RUNS:-30}
KEEP_RUNS=${KEEP_RUNS:-20}
[ "$KEEP_RUNS" -le 31 ] || KEEP_RUNS=31
[ -x "$KILN" ] || make --no-print-directory build/kiln >/dev/null
tmp=$(mktemp -d /tmp/kiln-bench-ws.XXXXXX)
trap 'rm -rf "$tmp"' EXIT INT TERM
# A private copy, so a rebuild of build/ meanwhile cannot disturb a run.
cp "$KILN" "$tmp/kiln"
KILN=$tmp/kiln
cat >"$tmp/warm.json" <<JSON
{"sandbox": {"artifactDir": "$tmp/art", "languages": {"true": {"argv": ["/bin/true"], "file": "x"}}}}
JSON
cat >"$tmp/cold.json" <<JSON
{"sandbox": {"warmBoxes": false, "artifactDir": "$tmp/art", "languages": {"true": {"argv": ["/bin/true"], "file": "x"}}}}
JSON

# Two folders of the same tree (10 folders of 3 of 2, 600 small files,
# a sales.csv): in secrets/, 20 of the files at depths 0-4 have names the
# default hide list matches; in plain/ the same files have plain names.
python3 - "$tmp" <<'PY'
import os, sys
tmp = sys.argv[1]
secret = [".env", "id_rsa", "server.pem", "credentials.json", ".npmrc", "id_ed25519",
          "prod.key", ".env.local", "deploy.p12", "terraform.tfstate"]
dirs = [""]
for a in range(10):
    dirs.append("src%d" % a)
    for b in range(3):
        dirs.append("src%d/m%d" % (a, b))
        for c in range(2):
            dirs.append("src%d/m%d/d%d" % (a, b, c))
deep = [d for d in dirs if d.count("/") == 2]
for d in deep[:10]:
    dirs.append(d + "/x")
listed = []
for i in range(20):
    depth = i % 5
    d = [x for x in dirs if (x.count("/") + 1 if x else 0) == depth][i // 5 if depth else 0]
    # (four at the top: four different names)
    listed.append((os.path.join(d, "notes%d.txt" % i),
                   os.path.join(d, secret[(i + i // 10) % 10])))
with open(os.path.join(tmp, "listed"), "w") as f:
    for p, s in listed:
        f.write("%s %s\n" % (p, s))
for top, which in (("plain", 0), ("secrets", 1)):
    root = os.path.join(tmp, top)
    for d in dirs:
        os.makedirs(os.path.join(root, d), exist_ok=True)
    n = 0
    for d in dirs:
        for k in range(600 // len(dirs) + 1):
            if n == 600 - 20:
                break
            with open(os.path.join(root, d, "f%d.py" % k), "w") as f:
                f.write("x = %d\n" % n)
            n += 1
    for pair in listed:
        with open(os.path.join(root, pair[which]), "w") as f:
            f.write("KEY=%s\n" % ("x" * 32))
    with open(os.path.join(root, "sales.csv"), "w") as f:
        f.write("month,total\nJan,10\nFeb,20\n")
PY
chmod -R a+rX "$tmp"
nfiles=$(find "$tmp/plain" -type f | wc -l)
ndirs=$(find "$tmp/plain" -type d | wc -l)

failed=""
T() { # T MODE ARGS...: one workspace_turns.py bench; a failure is said and remembered
	python3 tests/bench/workspace_turns.py "$@" || {
		echo "  this bench failed to run"
		failed=1
	}
}
echo "workspace bench ($RUNS turns, medians; $(nproc) cores, kernel $(uname -r), load average $(cut -d' ' -f1-3 /proc/loadavg))"
echo "the workspace and its masks (a folder of $nfiles files in $ndirs folders; 20 secrets; 50 ms before each run):"
echo " python3 pass, from the zygote:"
T cost "$KILN" "$tmp/warm.json" python pass "$RUNS" 0.05 "$tmp/plain" "$tmp/secrets" "$tmp/listed"
echo " /bin/true, warm box:"
T cost "$KILN" "$tmp/warm.json" true "" "$RUNS" 0.05 "$tmp/plain" "$tmp/secrets" "$tmp/listed"
echo " /bin/true, cold box (built at the request):"
T cost "$KILN" "$tmp/cold.json" true "" "$RUNS" 0.05 "$tmp/plain" "$tmp/secrets" "$tmp/listed"

if [ "$(id -u)" = 0 ]; then
	echo "the idmapped lower layer (a root server; the folder above, root's):"
	echo " python3 pass, from the zygote:"
	T idmap "$KILN" "$tmp/warm.json" python pass "$RUNS" 0.05 "$tmp/plain"
	echo " /bin/true, warm box:"
	T idmap "$KILN" "$tmp/warm.json" true "" "$RUNS" 0.05 "$tmp/plain"
	echo " /bin/true, cold box (built at the request):"
	T idmap "$KILN" "$tmp/cold.json" true "" "$RUNS" 0.05 "$tmp/plain"
else
	echo "the idmapped lower layer: skipped: this bench runs as uid $(id -u), not root; only"
	echo "  a root server makes it (its box runs as nobody); a user's server runs its box as"
	echo "  that user, who owns the folder already"
fi

echo "a 10 MiB binary change ($KEEP_RUNS turns; python3 from the zygote, the folder above):"
T keep "$KILN" "$tmp/warm.json" "$KEEP_RUNS" 0.05 "$tmp/plain"
[ -z "$failed" ]
