# check.sh: the one-line checks of the shell suites (25-cli, 26-install),
# sourced with $tmp (a scratch folder), $pass and $fail set.
#   check NAME COMMAND...  run COMMAND (usually a helper function): "ok
#                          NAME" when it succeeds, else "not ok NAME" and
#                          the first 20 lines it printed, indented.
# KILN_TEST_ONLY="helper..." (make mutate): only the checks whose command
# (a helper function) is named run.

check() {
	name=$1
	shift
	if [ -n "${KILN_TEST_ONLY:-}" ]; then
		case " $KILN_TEST_ONLY " in *" $1 "*) ;; *) return 0 ;; esac
	fi
	if "$@" >"$tmp/out" 2>&1; then
		pass=$((pass + 1))
		echo "ok $name"
	else
		fail=$((fail + 1))
		echo "not ok $name"
		sed 's/^/    /' "$tmp/out" | head -20
	fi
}
