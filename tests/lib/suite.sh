# suite.sh: what the suites that gather sub-runs share (sourced, with
# $name set and the repository as the working directory).
#   add LOGFILE PREFIX [EXIT]  count a sub-run's "N passed, N failed" line
#                              into $pass and $fail, its output prefixed
#   find_kiln                  set $KILN (default build/asan/kiln, else
#                              build/kiln), or print the suite's failing
#                              summary and exit

pass=${pass:-0}
fail=${fail:-0}

add() {
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$1" | tail -n 1)
	rc=${3:-0}
	sed -e "s/^/$2/" "$1" | grep -v -E '^[^ ]* ?[0-9]+ passed, [0-9]+ failed'
	if [ -z "$line" ]; then
		echo "${2}no summary line: counted as 1 failure"
		fail=$((fail + 1))
		return
	fi
	p=${line%% passed*}
	f=${line#*passed, }
	f=${f%% failed*}
	pass=$((pass + p))
	fail=$((fail + f))
	# A sub-run that exits non-zero while its line says 0 failed stopped
	# early or crashed at exit (a sanitizer report): one more failure.
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "${2}exited $rc: counted as 1 failure"
		fail=$((fail + 1))
	fi
}

find_kiln() {
	KILN=${KILN:-}
	if [ -z "$KILN" ]; then
		if [ -x build/asan/kiln ]; then KILN=build/asan/kiln; else KILN=build/kiln; fi
	fi
	if [ ! -x "$KILN" ]; then
		echo "$name: no kiln binary (run make asan or make build/kiln first)"
		echo "$name: 0 passed, 1 failed"
		exit 1
	fi
}
