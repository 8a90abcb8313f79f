/* filter.h: the seccomp filter every sandboxed program runs under,
 * compiled once (with libseccomp) into a BPF program the clone()d child
 * can load with one prctl, without allocating. */
#pragma once

#include <linux/filter.h>

/* Compile the filter into *ret_prog (free with sbx_filter_free). -errno. */
int sbx_filter_build(struct sock_fprog *ret_prog);
/* The filter of a zygote's box (zygote.h): the same, except that it
 * allows unshare, mount, umount2, keyctl and clone with namespace flags,
 * which the zygote needs to give each run a box of its own. Every child
 * stacks the full filter on it before any user code runs. -errno. */
int sbx_filter_build_zygote(struct sock_fprog *ret_prog);
void sbx_filter_free(struct sock_fprog *prog);
