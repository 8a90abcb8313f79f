#!/bin/sh
# 06-mutations.sh: the deliberate bugs of `make mutate` (tests/mutations/,
# run by tests/tools/mutate.sh, not part of `make test`) still are bugs
# of this tree. A patch that no longer applies (the code it changes was
# edited since) is a mutation nobody tries: mutate.sh reports it, but only
# when someone runs it, and it was found by hand twice. One check per
# patch: it applies (`git apply --check`, which needs no repository), it
# names at least one suite that must catch it ("# expect: SUITE [ONLY...]"),
# every suite it names exists, and every case it names (an attack case, a
# unit test binary, a helper) occurs somewhere under tests/ outside the
# patches, or in an editor client's tests (62-vscode's words of test
# names; 60-nvim's), or is a transcript of protocol/transcripts
# (50-intent's names), or an ERT test of
# editor-clients/emacs/test/kiln-test.el (66's): a renamed case would make
# KILN_TEST_ONLY run nothing there.
# zygote.py runs attacks.py's cases under the same names but for a few it
# prefixes with "zygote-" (its case()): those are looked up without it.
set -u
cd "$(dirname "$0")/../.."
pass=0
fail=0
for p in tests/mutations/*.patch; do
	why=""
	if ! out=$(git apply --check "$p" 2>&1); then
		why="does not apply: $(echo "$out" | head -n 2 | tr '\n' ' ')"
	fi
	expects=$(grep -c '^# expect: ' "$p")
	if [ -z "$why" ] && [ "$expects" -eq 0 ]; then
		why="names no suite (# expect: SUITE [ONLY...])"
	fi
	if [ -z "$why" ]; then
		why=$(grep '^# expect: ' "$p" | while read -r _ _ suite names; do
			if [ ! -f "tests/suites/$suite.sh" ]; then
				echo "names a suite that does not exist: $suite"
				break
			fi
			for n in $names; do
				bare=${n#zygote-}
				# 62-vscode's cases are the extension's own tests.
				if ! grep -rqF --exclude-dir=mutations -- "$n" tests/ &&
					! grep -rqF -- "$n" editor-clients/*/test/ editor-clients/*/tests/ &&
					! grep -rqF --exclude-dir=mutations -- "\"$bare\"" tests/sandbox/ &&
					! grep -qF -- "(ert-deftest $n " editor-clients/emacs/test/kiln-test.el &&
					[ -z "$(find protocol/transcripts -name "$n.test*" -type f)" ]; then
					echo "names a case of $suite found nowhere under tests/: $n"
					break 2
				fi
			done
		done)
	fi
	if [ -z "$why" ]; then
		pass=$((pass + 1))
	else
		echo "not ok $p: $why"
		fail=$((fail + 1))
	fi
done
echo "mutations: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
