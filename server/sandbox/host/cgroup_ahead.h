/* cgroup_ahead.h: the next box's cgroup, made ahead off the event loop
 * by one thread of the base's own (cgroup_ahead.c). */
#pragma once

struct sbx_base;
struct sbx_cgroup;

/* A new cgroup under b->cgroups (which must be set) for a box: the one
 * made ahead if it is there, else one made now; then the next one is
 * made by a thread of the base's own. A mkdir under cgroupfs waits for
 * the kernel's cgroup lock while any process on the machine moves
 * between cgroups (an RCU grace period or more: p90 2-19 ms, up to 144
 * ms here under such moves, 55 us without; docs/performance-log.md, "The
 * box's cgroup, made ahead"), so the loop makes none unless a box comes
 * before the last one's successor is ready (the first two boxes, or two
 * in a row). 0, or -errno with *ret NULL. (cgroup_ahead.c) */
int sbx_cgroup_take(struct sbx_base *b, struct sbx_cgroup **ret);
/* The thread that makes cgroups ahead ends; what it made, and the cgroup
 * made ahead and not taken, are removed (before the root). */
void sbx_cgroup_ahead_stop(struct sbx_base *b);
