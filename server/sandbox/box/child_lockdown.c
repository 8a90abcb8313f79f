/* child_lockdown.c: what the box takes away for good, between clone and
 * exec (child.h): the capabilities (locked securebits, bounding and
 * ambient sets; then the rest), the program's Landlock rules, and the
 * namespace and inotify limits of the box's user namespace. pid 1
 * (child.c) and the program's process (child_program.c) call these in
 * their order. */
#include "sandbox/box/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/landlock.h>
#include <linux/securebits.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Landlock bits newer than this system's headers. */
#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13)
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif
#define KILN_LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define KILN_LANDLOCK_SCOPE_SIGNAL               (1ULL << 1)

/* struct landlock_ruleset_attr as of ABI 6; older kernels get a prefix. */
struct kiln_landlock_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net;
	uint64_t scoped;
};

/* Forbid every namespace in the box's user namespace (its children would
 * be counted against these), a layer under the seccomp filter, and make
 * its inotify quotas small. Best
 * effort: older kernels lack some of these files. With a workspace, the
 * mount namespace limit is left for later: each mask pid 1 mounts after
 * GO is an open_tree() clone, which makes an anonymous mount namespace;
 * its file stays open at FD_MAXMNT and pid 1 writes 0 after the masks. */
void child_forbid_namespaces(bool keep_mnt)
{
	static const char *const names[] = {
	    "/proc/sys/user/max_mnt_namespaces",    "/proc/sys/user/max_user_namespaces",
	    "/proc/sys/user/max_net_namespaces",    "/proc/sys/user/max_pid_namespaces",
	    "/proc/sys/user/max_ipc_namespaces",    "/proc/sys/user/max_uts_namespaces",
	    "/proc/sys/user/max_cgroup_namespaces", "/proc/sys/user/max_time_namespaces",
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		int fd = open(names[i], O_WRONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (i == 0 && keep_mnt) {
			if (fd != FD_MAXMNT && dup3(fd, FD_MAXMNT, O_CLOEXEC) >= 0)
				close(fd);
			continue;
		}
		ssize_t w = write(fd, "0\n", 2);
		(void)w;
		close(fd);
	}
	/* inotify counts per user up to the host's own limit (128
	 * instances here): a box that took them all would leave its owner's
	 * editor without file watchers. */
	static const struct {
		const char *path, *value;
	} quotas[] = {
	    {"/proc/sys/user/max_inotify_instances", SBX_INOTIFY_INSTANCES},
	    {"/proc/sys/user/max_inotify_watches", SBX_INOTIFY_WATCHES},
	};
	for (size_t i = 0; i < sizeof(quotas) / sizeof(quotas[0]); i++) {
		int fd = open(quotas[i].path, O_WRONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		ssize_t w = write(fd, quotas[i].value, strlen(quotas[i].value));
		(void)w;
		close(fd);
	}
}

/* The mount namespace limit kept open by child_forbid_namespaces: 0 now. */
void child_forbid_mnt_namespaces(void)
{
	ssize_t w = write(FD_MAXMNT, "0\n", 2);
	(void)w;
	close(FD_MAXMNT);
}

/* Effective, permitted and inheritable: empty. */
int child_clear_caps(void)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2];
	memset(d, 0, sizeof(d));
	return (int)syscall(SYS_capset, &h, d);
}

/* No capability can come back: locked securebits (no root privileges,
 * no setuid fixups, no ambient raise), the bounding set and the ambient
 * set emptied. The effective set stays: pid 1 calls this before its
 * last mounts, and child_clear_caps() after them. */
int child_lock_caps(void)
{
	if (prctl(PR_SET_SECUREBITS, SECBIT_KEEP_CAPS_LOCKED | SECBIT_NO_SETUID_FIXUP |
	                                 SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_NOROOT |
	                                 SECBIT_NOROOT_LOCKED | SECBIT_NO_CAP_AMBIENT_RAISE |
	                                 SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED) < 0)
		return -1;
	for (unsigned long cap = 0; cap < 64; cap++) {
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0) {
			if (errno == EINVAL)
				break; /* past the kernel's last capability */
			return -1;
		}
	}
	return prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
}

static int landlock_add(int rs, const char *path, uint64_t access)
{
	int fd = open(path, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -1;
	struct landlock_path_beneath_attr pb = {.allowed_access = access, .parent_fd = fd};
	long r = syscall(SYS_landlock_add_rule, rs, LANDLOCK_RULE_PATH_BENEATH, &pb, 0);
	int saved = errno;
	close(fd);
	errno = saved;
	return r < 0 ? -1 : 0;
}

/* Reads everywhere, writes only to /work, /tmp and the /dev nodes; with
 * ABI 6, no signals or abstract sockets beyond the program's own domain
 * (so pid 1 cannot be signalled from inside). */
int child_apply_landlock(int abi, const char *ws)
{
	if (abi <= 0)
		return 0;
	uint64_t all = (1ULL << 13) - 1;
	if (abi >= 2)
		all |= LANDLOCK_ACCESS_FS_REFER;
	if (abi >= 3)
		all |= LANDLOCK_ACCESS_FS_TRUNCATE;
	if (abi >= 5)
		all |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
	uint64_t read =
	    LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
	uint64_t dev = read | LANDLOCK_ACCESS_FS_WRITE_FILE;
	if (abi >= 3)
		dev |= LANDLOCK_ACCESS_FS_TRUNCATE;
	struct kiln_landlock_attr attr = {.handled_access_fs = all};
	size_t size = sizeof(uint64_t);
	if (abi >= 6) {
		attr.scoped = KILN_LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | KILN_LANDLOCK_SCOPE_SIGNAL;
		size = sizeof(attr);
	}
	int rs = (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0);
	if (rs < 0)
		return -1;
	if (landlock_add(rs, "/", read) < 0 || landlock_add(rs, SBX_WORKSPACE, all) < 0 ||
	    landlock_add(rs, "/tmp", all) < 0 || landlock_add(rs, "/dev", dev) < 0 ||
	    (ws && landlock_add(rs, ws, all) < 0) ||
	    syscall(SYS_landlock_restrict_self, rs, 0) < 0) {
		int saved = errno;
		close(rs);
		errno = saved;
		return -1;
	}
	close(rs);
	return 0;
}
