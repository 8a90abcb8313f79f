#!/bin/sh
# 66-emacs-package.sh: the Emacs package (editor-clients/emacs/kiln.el).
# First its quality checks on Debian's Emacs 28 (byte-compile with
# byte-compile-error-on-warn, checkdoc, Debian's package-lint; and the
# byte-compile on Emacs 30 too), then its ERT tests
# (editor-clients/emacs/test/kiln-test.el) in `emacs --batch` against the
# real server (build/asan/kiln; $KILN_BIN overrides it) and the fake model
# server of tests/fake-model, on Emacs 28 and on Emacs 30 from
# bookworm-backports (tests/tools/emacs-30.sh, unpacked under build/; its
# run is counted as skipped, never failed, when the packages cannot be
# fetched); the image tests also on Debian's graphical Emacs 28
# (tests/tools/emacs-lucid.sh, unpacked the same way), since emacs-nox
# cannot make images. One count per check and per ERT test and Emacs.
# KILN_TEST_ONLY="kiln-a kiln-b" (make mutate) runs only those ERT tests,
# on Emacs 28 and 30, after the lint.
set -u
cd "$(dirname "$0")/../.."
pkg=editor-clients/emacs
test_file=$pkg/test/kiln-test.el
ntests=$(grep -c '^(ert-deftest ' $test_file)
only=
if [ -n "${KILN_TEST_ONLY:-}" ]; then
	# An ERT selector matching exactly those names.
	alts=$(printf '%s' "$KILN_TEST_ONLY" | tr -s ' ' '\n' | sed '/^$/d' | paste -sd '|' - |
		sed 's/|/\\\\|/g')
	only=$(printf '"\\\\`\\\\(%s\\\\)\\\\'"'"'"' "$alts")
	ntests=$(printf '%s' "$KILN_TEST_ONLY" | wc -w)
fi
KILN_BIN=${KILN_BIN:-$PWD/build/asan/kiln}
export KILN_BIN
pass=0
fail=0
skip=0

if [ ! -x "$KILN_BIN" ]; then
	echo "no $KILN_BIN: run 'make asan' first"
	echo "emacs-package: 0 passed, $((ntests * 2 + 4)) failed"
	exit 1
fi
if ! command -v emacs >/dev/null 2>&1; then
	echo "no emacs on PATH (Debian's emacs-nox: make deps installs it)"
	echo "emacs-package: 0 passed, $((ntests * 2 + 4)) failed"
	exit 1
fi

# The compiled files go to a temporary place: nothing is left in the tree
# for a later `load' to prefer over the source.
lint() {
	label=$1
	emacs_bin=$2
	shift 2
	log=$(mktemp)
	timeout -k 5 300 "$emacs_bin" --batch -Q -l $pkg/test/kiln-lint.el \
		-f kiln-lint-batch "$@" </dev/null >"$log" 2>&1
	grep -av '^Warning: Lisp directory' "$log" | sed "s/^/[$label] /"
	for check in "$@"; do
		if grep -q "^kiln-lint: $check ok$" "$log"; then
			pass=$((pass + 1))
		else
			fail=$((fail + 1))
		fi
	done
	rm -f "$log"
}

# "Ran 19 tests, 18 results as expected, 0 unexpected, 1 skipped (...)"
ert() {
	label=$1
	emacs_bin=$2
	selector=${3:-t}
	log=$(mktemp)
	timeout -k 10 900 "$emacs_bin" --batch -Q --eval '(setq load-prefer-newer t)' \
		-L $pkg -l ert -l $test_file --eval "(ert-run-tests-batch-and-exit '$selector)" \
		</dev/null >"$log" 2>&1
	rc=$?
	# ERT's own lines (each test's name and result, what failed), not
	# jsonrpc.el's "[jsonrpc] Server exited" chatter.
	grep -av '^\[jsonrpc\] \|^Warning: Lisp directory' "$log" | sed "s/^/[$label] /"
	summary=$(grep -a '^Ran [0-9]* tests*, ' "$log" | tail -n 1)
	p=$(echo "$summary" | sed -nE 's/^Ran [0-9]+ tests?, ([0-9]+) results? as expected.*/\1/p')
	f=$(echo "$summary" | sed -nE 's/.*, ([0-9]+) unexpected.*/\1/p')
	s=$(echo "$summary" | sed -nE 's/.*, ([0-9]+) skipped.*/\1/p')
	if [ -z "$p" ] || [ -z "$f" ]; then
		echo "[$label] emacs exited with $rc before ERT's summary"
		p=0
		f=$ntests
	elif [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "[$label] emacs exited with $rc"
		f=1
	fi
	pass=$((pass + p))
	fail=$((fail + f))
	skip=$((skip + ${s:-0}))
	rm -f "$log"
}

e28=$(emacs --batch -Q --eval '(princ emacs-version)' 2>/dev/null)
lint "$e28" emacs compile checkdoc package-lint
ert "$e28" emacs ${only:-t}

# emacs-nox cannot make images: the image tests again on Debian's graphical
# build, where create-image works in batch too.
nimage=$(grep -cE '^\(ert-deftest kiln-run-(image|display)' $test_file)
lucid=$(sh tests/tools/emacs-lucid.sh)
rc=$?
if [ -n "$only" ]; then
	echo "[$e28 lucid] not run: KILN_TEST_ONLY"
elif [ "$rc" -eq 0 ]; then
	ert "$e28 lucid" "$lucid" '"kiln-run-\\(image\\|display\\)"'
elif [ "$rc" -eq 77 ]; then
	echo "[$e28 lucid] skipped: $nimage tests (emacs-lucid could not be fetched or started, see above)"
	skip=$((skip + nimage))
else
	echo "[$e28 lucid] tests/tools/emacs-lucid.sh failed ($rc)"
	fail=$((fail + 1))
fi

e30=$(sh tests/tools/emacs-30.sh)
rc=$?
if [ "$rc" -eq 0 ]; then
	v=$("$e30" --batch -Q --eval '(princ emacs-version)' 2>/dev/null)
	lint "$v" "$e30" compile
	ert "$v" "$e30" ${only:-t}
elif [ "$rc" -eq 77 ]; then
	echo "[30] skipped: $((ntests + 1)) checks (Emacs 30 could not be fetched from bookworm-backports, see above)"
	skip=$((skip + ntests + 1))
else
	echo "[30] tests/tools/emacs-30.sh failed ($rc)"
	fail=$((fail + 1))
fi

line="emacs-package: $pass passed, $fail failed"
[ "$skip" -gt 0 ] && line="$line, $skip skipped"
echo "$line"
[ "$fail" -eq 0 ]
