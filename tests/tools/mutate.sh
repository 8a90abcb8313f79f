#!/bin/sh
# mutate.sh [PATCH...]: the mutation gate (`make mutate`). Each patch in
# tests/mutations/ (or those named) is a deliberate bug, with the suites
# that must catch it on its "# expect: SUITE [ONLY...]" lines (ONLY names
# the cases of that suite to run, through KILN_TEST_ONLY: unit test
# binaries for 10-unit, attack cases for 30-sandbox, helpers for
# 40-validate). One at a time, in a scratch copy of the tree (taken as
# it is, uncommitted changes and build/ included, so each mutation
# rebuilds only what it touches), the patch is applied, kiln rebuilt, the
# named suites run; the mutation is killed when every one of them fails
# (each expect line is a claim that that suite catches it). Then the
# patch is reverted. Prints one line a mutation and a last line
# "mutate: N killed, N survived"; exits 1 when any survived or could not
# be tried. Not part of `make test`: it rebuilds and reruns for minutes.
set -u
cd "$(dirname "$0")/../.."
root=$PWD
if [ $# -eq 0 ]; then
	set -- "$root"/tests/mutations/*.patch
fi

scratch=$(mktemp -d /tmp/kiln-mutate.XXXXXX)
trap 'rm -rf "$scratch"' EXIT INT TERM
chmod 755 "$scratch"
# The fuzz build is not needed; .git stays behind (nothing here runs git).
tar -C "$root" --exclude=./.git --exclude=./build/fuzz -cf - . | tar -C "$scratch" -xf -
cd "$scratch" || exit 1
log=$scratch/.mutate-log
if ! make -s asan build/kiln unit-build >"$log" 2>&1; then
	cat "$log"
	echo "mutate: the unmutated tree does not build"
	exit 1
fi

killed=0
survived=0
survivors=""
for patch in "$@"; do
	name=$(basename "$patch" .patch)
	what=$(sed -n 's/^# mutation: //p' "$patch" | head -n 1)
	expects=$(sed -n 's/^# expect: //p' "$patch")
	if [ -z "$expects" ] || ! patch -p1 -s --dry-run <"$patch" >"$log" 2>&1; then
		cat "$log"
		echo "ERROR $name: no '# expect:' line, or the patch does not apply"
		survived=$((survived + 1))
		survivors="$survivors $name"
		continue
	fi
	patch -p1 -s <"$patch"
	targets="asan build/kiln"
	echo "$expects" | grep -q '^10-unit' && targets="$targets unit-build"
	# shellcheck disable=SC2086
	if ! make -s $targets >"$log" 2>&1; then
		tail -n 20 "$log"
		echo "ERROR $name: the mutated tree does not build (fix the patch)"
		survived=$((survived + 1))
		survivors="$survivors $name"
		patch -p1 -R -s <"$patch"
		continue
	fi
	echo "$expects" | {
		while read -r suite only; do
			out="$scratch/.mutate-$name-$suite.log"
			KILN_TEST_ONLY="$only" timeout 1800 sh "tests/suites/$suite.sh" >"$out" 2>&1
			rc=$?
			if [ "$rc" -ne 0 ]; then
				echo "  caught by $suite${only:+ ($only)}: $(grep -E -m 3 '^(not ok|FAIL|ESCAPED|[^ ]*: not ok|[^ ]*: ESCAPED)|:[FE]:|\] FAIL' "$out" | tr '\n' ' ' | cut -c1-300)"
			else
				echo "  MISSED by $suite${only:+ ($only)}: $(tail -n 1 "$out")"
				echo "$suite" >>"$scratch/.missed-$name"
			fi
		done
	}
	patch -p1 -R -s <"$patch"
	if [ -s "$scratch/.missed-$name" ]; then
		echo "SURVIVED $name: $what"
		survived=$((survived + 1))
		survivors="$survivors $name"
	else
		echo "killed $name: $what"
		killed=$((killed + 1))
	fi
done
# The tree is as it was: rebuild so a later run starts clean (cheap).
make -s asan build/kiln >/dev/null 2>&1
[ -n "$survivors" ] && echo "survivors:$survivors"
echo "mutate: $killed killed, $survived survived"
[ "$survived" -eq 0 ]
