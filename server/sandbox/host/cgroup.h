/* cgroup.h: cgroup v2 for runs. One parent cgroup per server ("the root",
 * D/kiln-<pid> under a cgroup kiln may write) and one cgroup per run under
 * it: clone3(CLONE_INTO_CGROUP) puts pid 1 there, cgroup.kill ends every
 * process of the run at once, and the memory, pids and cpu limits are
 * written when the hierarchy hands those controllers to kiln. */
#pragma once

#include <stddef.h>
#include <stdint.h>

enum sbx_cg_controllers {
	SBX_CG_MEMORY = 1 << 0,
	SBX_CG_PIDS = 1 << 1,
	SBX_CG_CPU = 1 << 2,
};

struct sbx_cgroup_root; /* kiln's own parent cgroup for its runs */
struct sbx_cgroup;      /* one run's cgroup */

/* setting: "auto" (or NULL), "off", or the absolute path of a cgroup v2
 * directory the user delegated to kiln.
 *
 * "auto" takes the cgroup2 mount from /proc/self/mountinfo and this
 * process's cgroup from the "0::" line of /proc/self/cgroup (D); it needs
 * write access to D and D/cgroup.procs, and, below the hierarchy root,
 * that systemd delegated D (the user.delegate or trusted.delegate xattr):
 * a cgroup that is writable but not delegated is systemd's to manage. It first removes empty
 * D/kiln-<pid> directories left by servers that no longer exist, then
 * makes D/kiln-<own pid>. When D is not the hierarchy root and kiln is the
 * only process in D, kiln moves itself into D/kiln-<pid>/server, a leaf,
 * because the kernel lets D hand controllers down only while D has no
 * process of its own. Then it enables what it can of memory, pids and cpu
 * in D and in its own directory; anything refused just means fewer
 * controllers. At the hierarchy root "auto" uses only the controllers
 * already enabled there: turning one on at the root would change
 * accounting for every process on the machine. A path setting is used as
 * D the same way (enabling included, also at the root).
 *
 * Returns 0 with *ret set when a cgroup is used, 0 with *ret = NULL when
 * none is ("off", no cgroup v2, nothing writable), and -EINVAL for a bad
 * setting (a relative path, a path that is not a cgroup v2 directory).
 * In every case why gets one sentence for the log (which directory and
 * controllers, or why there is none). Never fails for anything else. */
int sbx_cgroup_root_open(const char *setting, struct sbx_cgroup_root **ret, char *why,
                         size_t whysz);

/* Undo root_open: hand back the controllers kiln enabled, move kiln back
 * to D if it had moved, and rmdir what kiln made. Runs' cgroups must be
 * freed first. Whatever cannot be removed now (a run still alive) is an
 * empty directory the next server's start removes. NULL is a no-op. */
void sbx_cgroup_root_free(struct sbx_cgroup_root *root);

/* The SBX_CG_* bits a run's cgroup gets limits for. */
unsigned sbx_cgroup_root_controllers(const struct sbx_cgroup_root *root);
/* D/kiln-<pid>. */
const char *sbx_cgroup_root_path(const struct sbx_cgroup_root *root);

/* Make the run's cgroup name (one path component, e.g. "r12") under the
 * root. -EEXIST when it exists, -EINVAL for a name with a slash. */
int sbx_cgroup_new(struct sbx_cgroup_root *root, const char *name, struct sbx_cgroup **ret);

/* Write the limits for the controllers the root has: memory.max =
 * memory_bytes, memory.swap.max = 0 (where swap is accounted),
 * memory.oom.group = 1; pids.max = processes; cpu.max = "<cpu_cores *
 * 100000> 100000". A value of 0 leaves its controller unlimited. Every
 * controller is tried; 0 when all took their limit, otherwise the first
 * -errno (sbx_cgroup_enforced() says which did). */
int sbx_cgroup_set_limits(struct sbx_cgroup *cg, uint64_t memory_bytes, uint64_t processes,
                          uint64_t cpu_cores);

/* An O_DIRECTORY, close-on-exec fd of the run's cgroup for clone3's cgroup
 * field (CLONE_INTO_CGROUP). Owned by cg. */
int sbx_cgroup_fd(const struct sbx_cgroup *cg);

/* The SBX_CG_* bits whose limit sbx_cgroup_set_limits() wrote. */
unsigned sbx_cgroup_enforced(const struct sbx_cgroup *cg);

/* Every process in the cgroup gets SIGKILL (cgroup.kill; on kernels before
 * 5.14, each pid in cgroup.procs). Does not wait. */
int sbx_cgroup_kill(struct sbx_cgroup *cg);

struct sbx_cgroup_stats {
	uint64_t cpu_usec;          /* cpu.stat usage_usec */
	uint64_t memory_peak_bytes; /* memory.peak; 0: unknown */
	uint64_t oom_kills;         /* memory.events oom_kill */
	uint64_t pids_max_hits;     /* pids.events max: forks refused */
};

/* A file that is missing (no such controller) leaves its field 0; -errno
 * only when cpu.stat, which every cgroup v2 has, cannot be read. */
int sbx_cgroup_stats(const struct sbx_cgroup *cg, struct sbx_cgroup_stats *ret);

/* Kill what is left, wait (about a second at most) until cgroup.events
 * says "populated 0", rmdir, close. NULL is a no-op. */
void sbx_cgroup_free(struct sbx_cgroup *cg);

/* --- Exposed for tests (tests/unit/test_cgroup.c) ------------------------ */

/* The path of the "0::" line of /proc/self/cgroup text. -ENOENT when there
 * is none (cgroup v1 only), -EINVAL when the path is not usable (outside
 * the cgroup namespace: "/..", or " (deleted)"), -ENAMETOOLONG. */
int sbx_cgroup_parse_self(const char *text, char *ret_path, size_t size);

/* Where cgroup (a path from sbx_cgroup_parse_self) is seen in the file
 * system, from /proc/self/mountinfo text: the first cgroup2 mount whose
 * root contains it, with the mount point's \040-style escapes undone.
 * -ENOENT: no cgroup2 mount; -EXDEV: none of them shows cgroup. */
int sbx_cgroup_parse_mountinfo(const char *text, const char *cgroup, char *ret_dir, size_t size);

/* The two above on this process's /proc files: D of "auto". -errno with a
 * sentence in why. */
int sbx_cgroup_find_own(char *ret_dir, size_t size, char *why, size_t whysz);

/* root_open on dir, a plain directory made to look like a delegated cgroup
 * (cgroup.controllers, cgroup.subtree_control, cgroup.procs): files are
 * created when written, nothing is moved. Checks kiln's writes only. */
int sbx_cgroup_root_open_plain(const char *dir, struct sbx_cgroup_root **ret, char *why,
                               size_t whysz);

/* The len bytes at s, a field of /proc/self/mountinfo, with the kernel's
 * escapes undone (space, tab, newline and backslash are written \040,
 * \011, \012 and \134), into out: 0, or -ENAMETOOLONG when out is too
 * small. cgroup.c finds cgroup2's mount with it; sandbox.c a mount
 * inside the workspace. */
int sbx_mountinfo_unescape(const char *s, size_t len, char *out, size_t size);
