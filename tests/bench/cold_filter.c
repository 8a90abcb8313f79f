/* cold_filter.c: writes kiln's own seccomp program (sbx_filter_build, the
 * one every run's box loads) to stdout as raw BPF, for bubblewrap's
 * --seccomp FD in tests/bench/cold.sh: the peer then loads exactly the
 * filter kiln's box does. Linked against build/libkiln.a. */
#include <stdio.h>
#include <unistd.h>

#include "sandbox/host/filter.h"

int main(void)
{
	struct sock_fprog prog;
	if (sbx_filter_build(&prog) < 0) {
		fputs("cold_filter: cannot build the filter\n", stderr);
		return 1;
	}
	size_t len = prog.len * sizeof(prog.filter[0]);
	int ok = fwrite(prog.filter, 1, len, stdout) == len;
	sbx_filter_free(&prog);
	return ok && fflush(stdout) == 0 ? 0 : 1;
}
