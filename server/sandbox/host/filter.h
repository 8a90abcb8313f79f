/* filter.h: the seccomp filter every sandboxed program runs under,
 * compiled (with libseccomp) into a BPF program the clone()d child can
 * load with one prctl, without allocating. The build compiles it once
 * (server/tools/seccomp_bpf.c) and embeds the program: a box loads the
 * embedded one (sbx_filter_embedded), libseccomp's own compile is for the
 * generator and the test that both are the same. */
#pragma once

#include <linux/filter.h>
#include <stdbool.h>

/* The program the build compiled from this filter (zygote: the zygote's
 * filter), static: never freed, never written. */
void sbx_filter_embedded(bool zygote, struct sock_fprog *ret_prog);

/* Compile the filter into *ret_prog (free with sbx_filter_free). -errno. */
int sbx_filter_build(struct sock_fprog *ret_prog);
/* The filter of a zygote's box (zygote.h): the same, except that it
 * allows unshare, mount, umount2, keyctl and clone with namespace flags,
 * which the zygote needs to give each run a box of its own. Every child
 * stacks the full filter on it before any user code runs. -errno. */
int sbx_filter_build_zygote(struct sock_fprog *ret_prog);
void sbx_filter_free(struct sock_fprog *prog);
