/* child_mount.c: the mount primitives of pid 1 (child.c) and of the
 * workspace's mounts (child_workspace.c): a path under the new root
 * opened without following any link, a mount attached there, a new
 * filesystem instance. System calls only, as everywhere between clone
 * and exec (child.h). */
#include "sandbox/box/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <unistd.h>

int child_open_beneath(int rootfd, const char *path, int flags)
{
	struct open_how how = {
	    .flags = (uint64_t)(flags | O_CLOEXEC | O_NOFOLLOW),
	    .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	return (int)syscall(SYS_openat2, rootfd, path, &how, sizeof(how));
}

/* Attach mount fd mfd on path under the new root (resolved without
 * following any symlink, so a swapped link cannot redirect the mount). */
int child_attach(int rootfd, int mfd, const char *path)
{
	int tgt = child_open_beneath(rootfd, path, O_PATH);
	if (tgt < 0)
		return -1;
	int r = move_mount(mfd, "", tgt, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH);
	int saved = errno;
	close(tgt);
	errno = saved;
	return r;
}

/* A new filesystem instance (fsopen/fsmount): returns the mount fd.
 * Every tmpfs gets an inode cap besides its size: an empty directory
 * costs no page of the size but about a KiB of kernel memory. */
int child_new_fs(const char *type, const char *size, const char *inodes, const char *mode,
                 unsigned attrs)
{
	int fs = fsopen(type, FSOPEN_CLOEXEC);
	if (fs < 0)
		return -1;
	if ((size && fsconfig(fs, FSCONFIG_SET_STRING, "size", size, 0) < 0) ||
	    (inodes && fsconfig(fs, FSCONFIG_SET_STRING, "nr_inodes", inodes, 0) < 0) ||
	    (mode && fsconfig(fs, FSCONFIG_SET_STRING, "mode", mode, 0) < 0) ||
	    fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0) {
		int saved = errno;
		close(fs);
		errno = saved;
		return -1;
	}
	int m = fsmount(fs, FSMOUNT_CLOEXEC, attrs);
	int saved = errno;
	close(fs);
	errno = saved;
	return m;
}
