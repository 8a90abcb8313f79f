#!/bin/sh
# validate.sh: the validator's bench (not a test; tests/bench/run.sh calls
# it). Per Python snippet of 20 and of 200 lines it times, side by side:
# kiln's validator in process (tree-sitter and rules alone, and with the
# CPython syntax worker), a fresh `python3 -c 'import ast...'` process, and
# bandit (Debian's python3-bandit), and prints the ratios. Then it counts
# findings on the hostile Python corpus for kiln and for bandit, and the
# warnings on the system corpus of benign real code.
# Needs build/libkiln.a (make build/kiln); bandit is optional.
set -eu
cd "$(dirname "$0")/../.."

ITER=${ITER:-2000}   # in-process calls per snippet
FRESH=${FRESH:-40}   # fresh python3 processes per snippet
BANDIT=${BANDIT:-5}  # bandit runs per snippet
CG_ITER=${CG_ITER:-20} # calls counted under callgrind, when valgrind is installed
PY=${PY:-/usr/bin/python3} # the CPython a fresh `import ast` process runs (not a pyenv shim)
out=build/bench
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Built by server/validate/module.mk with the same libraries as kiln.
make -s build/bench/validate_bench

# Snippets: benign data work from the corpus, cut to 20 and 200 lines.
cat tests/validate/corpus/benign/*.py >"$tmp/all.py"
while [ "$(wc -l <"$tmp/all.py")" -lt 200 ]; do cat "$tmp/all.py" "$tmp/all.py" >"$tmp/x" && mv "$tmp/x" "$tmp/all.py"; done
# Cut at a top-level line so both snippets are valid Python.
cut_at() { awk -v n="$1" 'NR > n && /^[a-z]/ { exit } { print }' "$tmp/all.py"; }
cut_at 20 >"$tmp/s20.py"
cut_at 200 >"$tmp/s200.py"

now_ns() { date +%s%N; }
per_run_ms() { # N CMD...: mean wall time of N runs, in ms
	n=$1
	shift
	t0=$(now_ns)
	i=0
	while [ "$i" -lt "$n" ]; do "$@" >/dev/null 2>&1 || true; i=$((i + 1)); done
	t1=$(now_ns)
	echo "$t0 $t1 $n" | awk '{ printf "%.3f", ($2 - $1) / $3 / 1e6 }'
}

have_bandit=0
if command -v bandit >/dev/null 2>&1; then have_bandit=1; fi

echo "validator bench: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-8s %6s %14s %14s %14s %14s %10s %10s\n' snippet lines "kiln-ts(us)" "kiln+py(us)" \
	"py-ast(ms)" "bandit(ms)" "ast/kiln" "bandit/kiln"
for s in s20 s200; do
	f="$tmp/$s.py"
	lines=$(wc -l <"$f")
	ts=$(build/bench/validate_bench python "$f" "$ITER" nopython | cut -d' ' -f1)
	py=$(build/bench/validate_bench python "$f" "$ITER" python | cut -d' ' -f1)
	ast=$(per_run_ms "$FRESH" "$PY" -c 'import ast, sys; ast.parse(open(sys.argv[1]).read())' "$f")
	if [ "$have_bandit" = 1 ]; then
		bandit=$(per_run_ms "$BANDIT" bandit -q "$f")
	else
		bandit=nan
	fi
	echo "$s $lines $ts $py $ast $bandit" | awk '{
		r1 = $5 * 1000 / $4
		r2 = ($6 == "nan") ? "n/a" : sprintf("%.0fx", $6 * 1000 / $4)
		printf "%-8s %6d %14.1f %14.1f %14.2f %14s %9.0fx %10s\n", $1, $2, $3, $4, $5, $6, r1, r2
	}'
	# The bandit ratio (how many times faster) for run.sh's baseline.
	[ "$bandit" = nan ] || python3 tests/bench/figures.py add "validate.$s.bandit" \
		"$(echo "$bandit $py" | awk '{ print $1 * 1000 / $2 }')" higher-is-better \
		"$(echo "$py $ts" | awk '{ printf "%.3f ms (%.3f ms without CPython)", $1 / 1000, $2 / 1000 }')" \
		"bandit, $(printf '%.0f ms' "$bandit")"
done
echo "(kiln-ts: tree-sitter and rules; kiln+py: also CPython's compile in the persistent"
echo " worker; ratios use kiln+py, the full check. Medians of $ITER calls; fresh"
echo " processes are means of $FRESH (python3) and $BANDIT (bandit) runs.)"

# Instructions per check, tree-sitter and rules (valgrind's callgrind
# counts the timed calls only): the figure to compare before and after a
# change on a shared machine, where times move with the load.
if command -v valgrind >/dev/null 2>&1; then
	echo
	echo "instructions per check (callgrind, $CG_ITER calls, tree-sitter and rules):"
	for s in s20 s200; do
		rm -f "$tmp"/cg.*
		valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.%p" \
			build/bench/validate_bench python "$tmp/$s.py" "$CG_ITER" nopython >/dev/null 2>&1 || true
		ir=$(cat "$tmp"/cg.*.1 2>/dev/null | sed -n 's/^summary: //p' | head -n 1)
		echo "$s ${ir:-0} $CG_ITER" | awk '{ printf "  %-5s %10.0f\n", $1, $2 / $3 }'
	done
fi

# Findings on the hostile Python corpus.
hostile=tests/validate/corpus/hostile
kiln_findings=$(build/kiln validate --format json "$hostile"/*.py | python3 -c '
import json, sys
n = files = 0
for line in sys.stdin:
    d = [x for x in json.loads(line)["diagnostics"] if x["severity"] <= 2 and x.get("code") != "syntax"]
    n += len(d)
    files += bool(d)
print(n, files)')
total=$(ls "$hostile"/*.py | wc -l)
echo
echo "hostile Python corpus: $total snippets"
echo "  kiln:   $(echo "$kiln_findings" | cut -d' ' -f1) findings, $(echo "$kiln_findings" | cut -d' ' -f2) snippets flagged"
if [ "$have_bandit" = 1 ]; then
	bandit -q -f json "$hostile"/*.py 2>/dev/null >"$tmp/bandit.json" || true
	python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
files = {i["filename"] for i in r.get("results", [])}
res, errs = r.get("results", []), r.get("errors", [])
print(f"  bandit: {len(res)} findings, {len(files)} snippets flagged, "
      f"{len(errs)} files it could not check")' "$tmp/bandit.json"
else
	echo "  bandit: not installed (make deps-bench installs python3-bandit)"
fi

# Warnings on benign real code from the system (tests/validate/system-corpus.list):
# the standard profile must deny none of it (40-validate checks that); how
# many warnings it gives is the figure to watch.
# The reach rules (issue 35) took it from 14 warnings to 186 (Python 13 to
# 185, mostly imports of the tools' own packages): docs/validator.md.
echo
echo "system corpus (benign real code read from Debian packages), profile standard:"
python3 tests/validate/system_corpus.py build/kiln standard | grep -E '^(info|system:)' | sed 's/^info /  /'
