/* admit.c: which host folder may be a workspace (see admit.h): one the
 * box can show at its own path, that the box's user can read, and that
 * holds no mount, so that no run fails at its overlay. */
#include "sandbox/workspace/admit.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "core/util.h"
#include "sandbox/box/pid1.h"
#include "sandbox/host/cgroup.h"

/* Where a workspace cannot be shown: the box's own system paths (bound
 * read-only from the host, or made by kiln). */
static bool path_under(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

/* Whether nobody (the box's uid when kiln is root) has the permission
 * bits want (4 read, 1 search) on st, as the kernel would decide: the
 * owner's bits if it owns st, else the group's, else the others'. A
 * POSIX ACL may grant more: with one, the box is left to try. */
static bool nobody_may(const char *path, const struct stat *st, unsigned want)
{
	unsigned bits = st->st_uid == SBX_ROOT_MAPS_TO   ? (st->st_mode >> 6) & 7
	                : st->st_gid == SBX_ROOT_MAPS_TO ? (st->st_mode >> 3) & 7
	                                                 : st->st_mode & 7;
	return (bits & want) == want || getxattr(path, "system.posix_acl_access", NULL, 0) >= 0;
}

/* When kiln is root the box runs as nobody, who may not reach the folder
 * (a project under /root, a 0700 home): the first path that stops it in
 * ret (a prefix of real), or false when nothing does. */
static bool nobody_blocked(const char *real, char *ret, size_t retsz)
{
	char p[PATH_MAX];
	size_t n = strlen(real);
	if (n >= sizeof(p))
		return false;
	/* "/", then each longer prefix, up to real itself. */
	for (size_t i = 0; i <= n; i++) {
		if (i < n && real[i] != '/')
			continue;
		size_t len = i ? i : 1;
		memcpy(p, real, len);
		p[len] = '\0';
		struct stat st;
		bool last = i == n;
		if (stat(p, &st) < 0)
			continue;
		if (!nobody_may(p, &st, last ? 5 : 1)) {
			snprintf(ret, retsz, "%s", p);
			return true;
		}
	}
	return false;
}

/* The first mount point strictly inside real (a realpath) in this
 * process's mount namespace, which the box's copies, with its file
 * system type: false when there is none (or mountinfo cannot be read;
 * the run then says what failed). The box cannot show such a folder:
 * overlayfs clones its lower layer without the mounts under it, and in
 * the box's user namespace those mounts are locked to what they cover,
 * so the kernel refuses the clone (clone_private_mount(): EINVAL, "failed
 * to clone lowerpath" in the kernel's log). */
static bool mount_inside(const char *real, char *ret, size_t retsz, char *ret_type, size_t tsz)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return false;
	_cleanup_free_ char *line = NULL;
	size_t cap = 0;
	bool found = false;
	while (!found && getline(&line, &cap, f) > 0) {
		/* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - TYPE ... */
		char *save = NULL, *mp = NULL;
		char *tok = strtok_r(line, " \n", &save);
		for (int i = 0; tok && i < 4; i++)
			tok = strtok_r(NULL, " \n", &save);
		mp = tok;
		while (tok && strcmp(tok, "-") != 0)
			tok = strtok_r(NULL, " \n", &save);
		const char *type = tok ? strtok_r(NULL, " \n", &save) : NULL;
		if (!mp || !type)
			continue;
		char path[PATH_MAX];
		if (sbx_mountinfo_unescape(mp, strlen(mp), path, sizeof(path)) < 0)
			continue;
		if (strcmp(path, real) != 0 && path_under(path, real)) {
			snprintf(ret, retsz, "%s", path);
			snprintf(ret_type, tsz, "%s", type);
			found = true;
		}
	}
	fclose(f);
	return found;
}

int sbx_ws_admit(const char *path, bool as_root, char **ret, char *err, size_t errsz)
{
	static const char *const system_dirs[] = {
	    "/usr", "/etc",   "/proc",  "/dev",    "/sys",  "/bin",     "/sbin",
	    "/lib", "/lib32", "/lib64", "/libx32", "/code", "/kiln-ovl"};
	err[0] = '\0';
	char real[PATH_MAX];
	if (path[0] != '/') {
		snprintf(err, errsz, "the workspace folder must be an absolute path");
		return -EINVAL;
	}
	if (!realpath(path, real)) {
		int r = -errno;
		snprintf(err, errsz, "the workspace folder cannot be used: %s", strerror(-r));
		return r;
	}
	struct stat st;
	if (stat(real, &st) < 0 || !S_ISDIR(st.st_mode)) {
		snprintf(err, errsz, "the workspace is not a folder");
		return -ENOTDIR;
	}
	const char *home = getenv("HOME");
	char rhome[PATH_MAX];
	if (strcmp(real, "/") == 0 || strcmp(real, "/tmp") == 0 ||
	    strcmp(real, SBX_WORKSPACE) == 0 ||
	    (home && home[0] == '/' && realpath(home, rhome) && strcmp(rhome, real) == 0)) {
		snprintf(err, errsz,
		         "kiln does not show %s to code as a workspace (it is /, /tmp, /work or "
		         "the home folder itself); open a project folder instead",
		         real);
		return -EINVAL;
	}
	for (size_t i = 0; i < ARRAY_SIZE(system_dirs); i++)
		if (path_under(real, system_dirs[i])) {
			snprintf(
			    err, errsz,
			    "the workspace %s is inside %s, which the sandbox shows on its own",
			    real, system_dirs[i]);
			return -EINVAL;
		}
	if (strlen(real) > 1024 || strchr(real, '\n')) {
		snprintf(err, errsz, "the workspace path is too long or holds a newline");
		return -EINVAL;
	}
	/* Every run would fail at its overlay: runs go without the
	 * workspace, and the log and `kiln run` say why and what to do. */
	char stop[PATH_MAX];
	if (as_root && nobody_blocked(real, stop, sizeof(stop))) {
		snprintf(err, errsz,
		         "kiln runs as root, so its sandbox runs code as nobody (uid %d), who "
		         "cannot %s %s: runs go without the workspace %s. Run kiln as the "
		         "folder's owner, or let others read the folder (chmod o+rx on %s and "
		         "o+x on its parents); sandbox.workspace.mode \"none\" says this is meant",
		         SBX_ROOT_MAPS_TO, strcmp(stop, real) == 0 ? "read" : "enter", stop, real,
		         real);
		return -EACCES;
	}
	/* As above: every run would fail at its overlay. */
	char type[64];
	if (mount_inside(real, stop, sizeof(stop), type, sizeof(type))) {
		snprintf(err, errsz,
		         "a file system is mounted inside the workspace %s, at %s (%s): the "
		         "sandbox's overlay cannot show a folder with a mount inside it, so runs "
		         "go without the workspace. Unmount it, open a folder that holds no mount, "
		         "or set sandbox.workspace.mode \"none\" to say this is meant",
		         real, stop, type);
		return -EBUSY;
	}
	if (!(*ret = strdup(real)))
		return -ENOMEM;
	return 0;
}
