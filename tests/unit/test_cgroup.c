/* test_cgroup.c: cgroup v2 for runs (sandbox/host/cgroup.c). The /proc parsers
 * on real texts; kiln's controller writes against a plain directory; and
 * the rest against the real kernel, as root: finding the hierarchy,
 * clone3(CLONE_INTO_CGROUP), cgroup.kill, cpu.stat, stale directories,
 * moving kiln out of a cgroup it has to itself, and an unprivileged user.
 *
 * Everything a test makes is written to a ledger first; the suite's
 * unchecked teardown (run by the runner's own process after the tests,
 * pass or fail) kills and removes all of it. */
#include "sandbox/host/cgroup.h"

#include <dirent.h>
#include <grp.h>
#include <limits.h>
#include <linux/magic.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include "unit.h"

#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif

static char ledger[64];
static char start_cgroup[PATH_MAX]; /* the runner's own cgroup directory */

/* --- helpers ------------------------------------------------------------------------ */

static bool is_cgroup2(const char *path)
{
	struct statfs sf;
	return statfs(path, &sf) == 0 && sf.f_type == CGROUP2_SUPER_MAGIC;
}

static bool exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

/* snprintf into a PATH_MAX buffer; a path that does not fit fails the test. */
__attribute__((format(printf, 2, 3))) static void pathf(char *out, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(out, PATH_MAX, fmt, ap);
	va_end(ap);
	ck_assert_int_lt(n, PATH_MAX);
}

/* Record path for the teardown before anything can fail. */
static void track(const char *path)
{
	FILE *f = fopen(ledger, "a");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "%s\n", path);
	fclose(f);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	ck_assert_msg(f != NULL, "cannot write %s: %s", path, strerror(errno));
	fputs(text, f);
	ck_assert_int_eq(fclose(f), 0);
}

/* The file's text, or "<missing>". */
static const char *slurp(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return "<missing>";
	size_t len = 0;
	ssize_t n;
	while (len < size - 1 && (n = read(fd, buf + len, size - 1 - len)) > 0)
		len += (size_t)n;
	close(fd);
	buf[len] = '\0';
	return buf;
}

__attribute__((format(printf, 3, 4))) static const char *slurpf(char *buf, size_t size,
                                                                const char *fmt, ...)
{
	char path[PATH_MAX];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	ck_assert_int_lt(n, PATH_MAX);
	return slurp(path, buf, size);
}

static bool populated(const char *dir)
{
	char path[PATH_MAX], text[256];
	pathf(path, "%s/cgroup.events", dir);
	return strstr(slurp(path, text, sizeof(text)), "populated 1") != NULL;
}

static bool wait_unpopulated(const char *dir, int ms)
{
	for (int i = 0; i < ms / 10; i++) {
		if (!populated(dir))
			return true;
		usleep(10000);
	}
	return !populated(dir);
}

/* Kill and remove a cgroup tree bottom-up; rm -rf anything else. */
static void remove_tree(const char *path)
{
	struct stat st;
	if (lstat(path, &st) < 0)
		return;
	if (!is_cgroup2(path)) {
		char cmd[PATH_MAX];
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
		if (system(cmd) != 0)
			fprintf(stderr, "test_cgroup: could not remove %s\n", path);
		return;
	}
	char sub[PATH_MAX];
	pathf(sub, "%s/cgroup.kill", path);
	int fd = open(sub, O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (write(fd, "1", 1) < 0)
			fprintf(stderr, "test_cgroup: cgroup.kill of %s: %s\n", path,
			        strerror(errno));
		close(fd);
	}
	DIR *d = opendir(path);
	if (d) {
		for (struct dirent *e; (e = readdir(d));) {
			if (e->d_type != DT_DIR || !strcmp(e->d_name, ".") ||
			    !strcmp(e->d_name, ".."))
				continue;
			pathf(sub, "%s/%s", path, e->d_name);
			remove_tree(sub);
		}
		closedir(d);
	}
	wait_unpopulated(path, 2000);
	if (rmdir(path) < 0 && errno != ENOENT)
		fprintf(stderr, "test_cgroup: could not remove %s: %s\n", path, strerror(errno));
}

/* The runner's process: make the ledger (forked tests inherit its name). */
static void suite_setup(void)
{
	snprintf(ledger, sizeof(ledger), "/tmp/kiln-test-cgroup-ledger-XXXXXX");
	int fd = mkstemp(ledger);
	ck_assert_int_ge(fd, 0);
	close(fd);
	char why[256];
	if (sbx_cgroup_find_own(start_cgroup, sizeof(start_cgroup), why, sizeof(why)) < 0)
		start_cgroup[0] = '\0';
}

static void suite_teardown(void)
{
	/* Back home first, in case tests ran in this process (CK_FORK=no) and
	 * one failed while moved into a cgroup about to be killed. */
	if (start_cgroup[0]) {
		char procs[PATH_MAX], pid[24];
		pathf(procs, "%s/cgroup.procs", start_cgroup);
		snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
		int fd = open(procs, O_WRONLY | O_CLOEXEC);
		if (fd >= 0) {
			if (write(fd, pid, strlen(pid)) < 0 && errno != EBUSY)
				fprintf(stderr, "test_cgroup: cannot move back: %s\n",
				        strerror(errno));
			close(fd);
		}
	}
	char lines[64][PATH_MAX];
	int n = 0;
	FILE *f = fopen(ledger, "r");
	if (f) {
		while (n < 64 && fgets(lines[n], sizeof(lines[n]), f)) {
			lines[n][strcspn(lines[n], "\n")] = '\0';
			n++;
		}
		fclose(f);
	}
	while (n-- > 0)
		remove_tree(lines[n]);
	unlink(ledger);
}

/* D of the real tests: the module's own answer, which must lie in the
 * cgroup2 hierarchy at /sys/fs/cgroup/unified (this machine: cgroup v1 for
 * every controller, a controllerless v2 beside it) or, on a machine where
 * /sys/fs/cgroup is itself cgroup2, there. Never a silent skip. */
static void real_dir(char *dir, size_t size)
{
	ck_assert_msg(geteuid() == 0, "the real cgroup tests run as root (euid is %u)",
	              (unsigned)geteuid());
	const char *hier = is_cgroup2("/sys/fs/cgroup/unified") ? "/sys/fs/cgroup/unified"
	                   : is_cgroup2("/sys/fs/cgroup")       ? "/sys/fs/cgroup"
	                                                        : NULL;
	ck_assert_msg(hier != NULL, "no cgroup2 hierarchy at /sys/fs/cgroup/unified nor at "
	                            "/sys/fs/cgroup: these tests need one");
	char why[512] = "";
	int r = sbx_cgroup_find_own(dir, size, why, sizeof(why));
	ck_assert_msg(r == 0, "cgroup2 is mounted at %s but kiln cannot find its cgroup: %s", hier,
	              why);
	ck_assert_msg(strncmp(dir, hier, strlen(hier)) == 0,
	              "kiln found %s, outside the cgroup2 hierarchy at %s", dir, hier);
}

/* This process's cgroup path, from /proc/self/cgroup. */
static void self_cgroup(char *path, size_t size)
{
	char text[4096];
	ck_assert_int_eq(
	    sbx_cgroup_parse_self(slurp("/proc/self/cgroup", text, sizeof(text)), path, size), 0);
}

static struct sbx_cgroup_root *open_auto(void)
{
	struct sbx_cgroup_root *root = NULL;
	char why[512] = "";
	ck_assert_int_eq(sbx_cgroup_root_open("auto", &root, why, sizeof(why)), 0);
	ck_assert_msg(root != NULL, "auto found no cgroup: %s", why);
	track(sbx_cgroup_root_path(root));
	return root;
}

struct clone_args_k {
	uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls, set_tid,
	    set_tid_size, cgroup;
};

/* clone3 into the cgroup cgfd; the child runs argv (or, argv NULL, burns
 * 50 ms of CPU). Only exec and raw system calls in the child. */
static pid_t spawn_in(int cgfd, char *const argv[])
{
	struct clone_args_k ca = {
	    .flags = CLONE_INTO_CGROUP, .exit_signal = SIGCHLD, .cgroup = (uint64_t)cgfd};
	long pid = syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid == 0) {
		if (argv) {
			execv(argv[0], argv);
			_exit(127);
		}
		struct timespec ts;
		do
			clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
		while (ts.tv_sec == 0 && ts.tv_nsec < 50 * 1000000);
		_exit(0);
	}
	ck_assert_msg(pid > 0, "clone3(CLONE_INTO_CGROUP): %s", strerror(errno));
	return (pid_t)pid;
}

static char *sleeper[] = {"/bin/sleep", "600", NULL};

/* --- parsing /proc text ------------------------------------------------------------- */

START_TEST(parse_self_formats)
{
	char p[PATH_MAX];
	/* This machine: v1 for every controller, v2 at the root. */
	ck_assert_int_eq(sbx_cgroup_parse_self("9:name=systemd:/\n8:pids:/\n4:memory:/process_api/"
	                                       "9babd14254140855d8f8f11f4b22521f\n1:cpu:/\n0::/\n",
	                                       p, sizeof(p)),
	                 0);
	ck_assert_str_eq(p, "/");
	/* systemd, cgroup v2 only. */
	ck_assert_int_eq(
	    sbx_cgroup_parse_self("0::/user.slice/user-1000.slice/session-2.scope\n", p, sizeof(p)),
	    0);
	ck_assert_str_eq(p, "/user.slice/user-1000.slice/session-2.scope");
	/* No trailing newline; spaces are not escaped in this file. */
	ck_assert_int_eq(sbx_cgroup_parse_self("0::/a b/c", p, sizeof(p)), 0);
	ck_assert_str_eq(p, "/a b/c");
	/* Odd lines before it are skipped; "0:cpu:" is v1, "10::" a named v1. */
	ck_assert_int_eq(
	    sbx_cgroup_parse_self("garbage\n\n5:\n0:cpu:/x\n10::/named\n0::/ok\n", p, sizeof(p)),
	    0);
	ck_assert_str_eq(p, "/ok");
	ck_assert_int_eq(sbx_cgroup_parse_self("0::/..x/y\n", p, sizeof(p)), 0);
	ck_assert_str_eq(p, "/..x/y");
	/* Failures leave the output alone. */
	pathf(p, "untouched");
	ck_assert_int_eq(
	    sbx_cgroup_parse_self("12:pids:/\n1:name=systemd:/init.scope\n", p, sizeof(p)),
	    -ENOENT);
	ck_assert_int_eq(sbx_cgroup_parse_self("", p, sizeof(p)), -ENOENT);
	ck_assert_int_eq(sbx_cgroup_parse_self("0::/../../outside\n", p, sizeof(p)), -EINVAL);
	ck_assert_int_eq(sbx_cgroup_parse_self("0::/a/..\n", p, sizeof(p)), -EINVAL);
	ck_assert_int_eq(sbx_cgroup_parse_self("0::/gone (deleted)\n", p, sizeof(p)), -EINVAL);
	ck_assert_int_eq(sbx_cgroup_parse_self("0::\n", p, sizeof(p)), -EINVAL);
	ck_assert_int_eq(sbx_cgroup_parse_self("0::relative\n", p, sizeof(p)), -EINVAL);
	char small[8];
	ck_assert_int_eq(sbx_cgroup_parse_self("0::/longer/than/eight\n", small, sizeof(small)),
	                 -ENAMETOOLONG);
	ck_assert_str_eq(p, "untouched");
}
END_TEST

/* This machine's cgroup lines, verbatim. */
static const char machine_mountinfo[] =
    "21 1 253:0 / / rw,relatime - ext4 /dev/vda rw\n"
    "30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "31 30 0:28 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "34 30 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    "39 30 0:36 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
    "40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

START_TEST(parse_mountinfo_formats)
{
	char d[PATH_MAX];
	ck_assert_int_eq(sbx_cgroup_parse_mountinfo(machine_mountinfo, "/", d, sizeof(d)), 0);
	ck_assert_str_eq(d, "/sys/fs/cgroup/unified");
	ck_assert_int_eq(sbx_cgroup_parse_mountinfo(machine_mountinfo, "/a/b", d, sizeof(d)), 0);
	ck_assert_str_eq(d, "/sys/fs/cgroup/unified/a/b");
	/* systemd: optional fields before the separator. */
	const char *systemd = "25 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw\n"
	                      "35 24 0:30 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime "
	                      "shared:9 master:3 - cgroup2 cgroup2 rw,nsdelegate,"
	                      "memory_recursiveprot\n";
	ck_assert_int_eq(sbx_cgroup_parse_mountinfo(systemd, "/user.slice/s.scope", d, sizeof(d)),
	                 0);
	ck_assert_str_eq(d, "/sys/fs/cgroup/user.slice/s.scope");
	/* Escapes in the mount point and in the root. */
	ck_assert_int_eq(sbx_cgroup_parse_mountinfo(
	                     "50 1 0:40 /my\\040jobs /mnt/cg\\040v2\\011x rw - cgroup2 none rw\n",
	                     "/my jobs/r1", d, sizeof(d)),
	                 0);
	ck_assert_str_eq(d, "/mnt/cg v2\tx/r1");
	ck_assert_int_eq(sbx_cgroup_parse_mountinfo("50 1 0:40 / /a\\134b rw - cgroup2 none rw",
	                                            "/", d, sizeof(d)),
	                 0);
	ck_assert_str_eq(d, "/a\\b");
	/* A mount of a subtree (a container's): the cgroup must lie inside. */
	const char *sub = "60 1 0:40 /kiln.slice /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";
	ck_assert_int_eq(sbx_cgroup_parse_mountinfo(sub, "/kiln.slice/r", d, sizeof(d)), 0);
	ck_assert_str_eq(d, "/sys/fs/cgroup/r");
	ck_assert_int_eq(sbx_cgroup_parse_mountinfo(sub, "/kiln.slice", d, sizeof(d)), 0);
	ck_assert_str_eq(d, "/sys/fs/cgroup");
	pathf(d, "untouched");
	ck_assert_int_eq(sbx_cgroup_parse_mountinfo(sub, "/kiln.slicex", d, sizeof(d)), -EXDEV);
	ck_assert_int_eq(sbx_cgroup_parse_mountinfo(sub, "/other", d, sizeof(d)), -EXDEV);
	/* cgroup v1 only; odd lines; "cgroup2" as a mount point or a source. */
	ck_assert_int_eq(
	    sbx_cgroup_parse_mountinfo(
	        "31 30 0:28 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n", "/", d, sizeof(d)),
	    -ENOENT);
	ck_assert_int_eq(sbx_cgroup_parse_mountinfo("\n1 2\n1 2 3 4 5 6 7 8\n"
	                                            "7 1 0:5 / /cgroup2 rw - tmpfs cgroup2 rw\n"
	                                            "8 1 0:6 / /x rw -\n",
	                                            "/", d, sizeof(d)),
	                 -ENOENT);
	ck_assert_str_eq(d, "untouched");
	/* The first cgroup2 mount that shows the cgroup wins. */
	ck_assert_int_eq(sbx_cgroup_parse_mountinfo("1 0 0:40 /other /o rw - cgroup2 c rw\n"
	                                            "2 0 0:40 / /first rw - cgroup2 c rw\n"
	                                            "3 0 0:40 / /second rw - cgroup2 c rw\n",
	                                            "/x", d, sizeof(d)),
	                 0);
	ck_assert_str_eq(d, "/first/x");
	char small[8];
	ck_assert_int_eq(sbx_cgroup_parse_mountinfo(machine_mountinfo, "/", small, sizeof(small)),
	                 -ENAMETOOLONG);
}
END_TEST

/* --- kiln's writes, against a plain directory -------------------------------------
 *
 * This machine's memory, pids and cpu controllers are bound to cgroup v1, so
 * memory.max, pids.max and cpu.max cannot exist in its cgroup v2 hierarchy.
 * These tests check only what kiln writes, and where, in a temporary
 * directory laid out like a delegated cgroup; they say nothing about the
 * kernel enforcing it. */

static char plain[64];

static void plain_setup(void)
{
	snprintf(plain, sizeof(plain), "/tmp/kiln-test-cgroup-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(plain));
	track(plain);
}

static void write_in(const char *dir, const char *name, const char *text)
{
	char path[PATH_MAX];
	pathf(path, "%s/%s", dir, name);
	write_file(path, text);
}

START_TEST(plain_writes_limits)
{
	char t[512];
	write_in(plain, "cgroup.controllers", "cpuset cpu io memory hugetlb pids rdma misc\n");
	write_in(plain, "cgroup.subtree_control", "");
	write_in(plain, "cgroup.procs", "");
	struct sbx_cgroup_root *root = NULL;
	char why[512] = "";
	ck_assert_int_eq(sbx_cgroup_root_open_plain(plain, &root, why, sizeof(why)), 0);
	ck_assert_msg(root != NULL, "%s", why);
	ck_assert_uint_eq(sbx_cgroup_root_controllers(root),
	                  SBX_CG_MEMORY | SBX_CG_PIDS | SBX_CG_CPU);
	char path[PATH_MAX];
	pathf(path, "%s/kiln-%d", plain, (int)getpid());
	ck_assert_str_eq(sbx_cgroup_root_path(root), path);
	ck_assert_ptr_nonnull(strstr(why, "controllers: memory pids cpu"));
	/* Enabled in D, then in kiln's own directory, one controller a write. */
	ck_assert_str_eq(slurpf(t, sizeof(t), "%s/%s", plain, "cgroup.subtree_control"),
	                 "+memory\n+pids\n+cpu\n");
	ck_assert_str_eq(slurpf(t, sizeof(t), "%s/%s", path, "cgroup.subtree_control"),
	                 "+memory\n+pids\n+cpu\n");

	struct sbx_cgroup *r1 = NULL, *r2 = NULL;
	ck_assert_int_eq(sbx_cgroup_new(root, "r1", &r1), 0);
	ck_assert_int_ge(sbx_cgroup_fd(r1), 0);
	ck_assert_int_eq(sbx_cgroup_set_limits(r1, 1073741824, 64, 2), 0);
	ck_assert_uint_eq(sbx_cgroup_enforced(r1), SBX_CG_MEMORY | SBX_CG_PIDS | SBX_CG_CPU);
	ck_assert_str_eq(slurpf(t, sizeof(t), "%s/r1/%s", path, "memory.max"), "1073741824\n");
	ck_assert_str_eq(slurpf(t, sizeof(t), "%s/r1/%s", path, "memory.swap.max"), "0\n");
	ck_assert_str_eq(slurpf(t, sizeof(t), "%s/r1/%s", path, "memory.oom.group"), "1\n");
	ck_assert_str_eq(slurpf(t, sizeof(t), "%s/r1/%s", path, "pids.max"), "64\n");
	ck_assert_str_eq(slurpf(t, sizeof(t), "%s/r1/%s", path, "cpu.max"), "200000 100000\n");

	/* 0 leaves a controller unlimited: nothing written, not enforced. */
	ck_assert_int_eq(sbx_cgroup_new(root, "r2", &r2), 0);
	ck_assert_int_eq(sbx_cgroup_set_limits(r2, 0, 32, 0), 0);
	ck_assert_uint_eq(sbx_cgroup_enforced(r2), SBX_CG_PIDS);
	ck_assert_str_eq(slurpf(t, sizeof(t), "%s/r2/%s", path, "pids.max"), "32\n");
	ck_assert_str_eq(slurpf(t, sizeof(t), "%s/r2/%s", path, "memory.max"), "<missing>");
	ck_assert_str_eq(slurpf(t, sizeof(t), "%s/r2/%s", path, "cpu.max"), "<missing>");

	/* Stats read the kernel's flat keyed files; an absent one leaves 0. */
	char r1dir[PATH_MAX], r2dir[PATH_MAX];
	pathf(r1dir, "%s/r1", path);
	pathf(r2dir, "%s/r2", path);
	write_in(r1dir, "cpu.stat",
	         "usage_usec 123456\nuser_usec 100000\nsystem_usec 23456\nnr_periods 0\n");
	write_in(r1dir, "memory.peak", "8392704\n");
	write_in(r1dir, "memory.events",
	         "low 0\nhigh 0\nmax 7\noom 2\noom_kill 1\noom_group_kill 1\n");
	write_in(r1dir, "pids.events", "max 5\n");
	struct sbx_cgroup_stats st;
	ck_assert_int_eq(sbx_cgroup_stats(r1, &st), 0);
	ck_assert_uint_eq(st.cpu_usec, 123456);
	ck_assert_uint_eq(st.memory_peak_bytes, 8392704);
	ck_assert_uint_eq(st.oom_kills, 1);
	ck_assert_uint_eq(st.pids_max_hits, 5);
	st.cpu_usec = 99;
	ck_assert_int_eq(sbx_cgroup_stats(r2, &st), -ENOENT); /* no cpu.stat: untouched */
	ck_assert_uint_eq(st.cpu_usec, 99);
	write_in(r2dir, "cpu.stat", "usage_usec 7\n");
	ck_assert_int_eq(sbx_cgroup_stats(r2, &st), 0);
	ck_assert_uint_eq(st.cpu_usec, 7);
	ck_assert_uint_eq(st.memory_peak_bytes, 0);
	ck_assert_uint_eq(st.oom_kills, 0);
	ck_assert_uint_eq(st.pids_max_hits, 0);

	ck_assert_int_eq(sbx_cgroup_kill(r1), 0);
	ck_assert_str_eq(slurpf(t, sizeof(t), "%s/r1/%s", path, "cgroup.kill"), "1\n");
	write_in(r1dir, "cgroup.events", "populated 0\nfrozen 0\n");
	sbx_cgroup_free(r1);
	sbx_cgroup_free(r2);
	sbx_cgroup_root_free(root);
	/* What kiln enabled in D is handed back once kiln's directory is gone. */
	ck_assert_str_eq(slurpf(t, sizeof(t), "%s/%s", plain, "cgroup.subtree_control"),
	                 "+memory\n+pids\n+cpu\n-memory\n-pids\n-cpu\n");
}
END_TEST

START_TEST(plain_fewer_controllers)
{
	char t[512];
	/* pids only, already enabled in D: D's file is left as it is. */
	write_in(plain, "cgroup.controllers", "pids\n");
	write_in(plain, "cgroup.subtree_control", "pids\n");
	write_in(plain, "cgroup.procs", "");
	struct sbx_cgroup_root *root = NULL;
	char why[512] = "";
	ck_assert_int_eq(sbx_cgroup_root_open_plain(plain, &root, why, sizeof(why)), 0);
	ck_assert_ptr_nonnull(root);
	ck_assert_uint_eq(sbx_cgroup_root_controllers(root), SBX_CG_PIDS);
	ck_assert_str_eq(slurpf(t, sizeof(t), "%s/%s", plain, "cgroup.subtree_control"), "pids\n");
	ck_assert_str_eq(
	    slurpf(t, sizeof(t), "%s/%s", sbx_cgroup_root_path(root), "cgroup.subtree_control"),
	    "+pids\n");
	struct sbx_cgroup *cg = NULL;
	ck_assert_int_eq(sbx_cgroup_new(root, "r1", &cg), 0);
	ck_assert_int_eq(sbx_cgroup_set_limits(cg, 1073741824, 64, 2), 0);
	ck_assert_uint_eq(sbx_cgroup_enforced(cg), SBX_CG_PIDS);
	ck_assert_str_eq(slurpf(t, sizeof(t), "%s/r1/%s", sbx_cgroup_root_path(root), "pids.max"),
	                 "64\n");
	ck_assert_str_eq(slurpf(t, sizeof(t), "%s/r1/%s", sbx_cgroup_root_path(root), "memory.max"),
	                 "<missing>");
	ck_assert_str_eq(slurpf(t, sizeof(t), "%s/r1/%s", sbx_cgroup_root_path(root), "cpu.max"),
	                 "<missing>");
	/* Stats look only at the files of the controllers handed down: here
	 * the memory files (which a kernel would not show without the
	 * controller) are not read, the pids one is. */
	char r1dir[PATH_MAX];
	pathf(r1dir, "%s/r1", sbx_cgroup_root_path(root));
	write_in(r1dir, "cpu.stat", "usage_usec 42\n");
	write_in(r1dir, "memory.peak", "8392704\n");
	write_in(r1dir, "memory.events", "oom_kill 3\n");
	write_in(r1dir, "pids.events", "max 4\n");
	struct sbx_cgroup_stats st;
	ck_assert_int_eq(sbx_cgroup_stats(cg, &st), 0);
	ck_assert_uint_eq(st.cpu_usec, 42);
	ck_assert_uint_eq(st.pids_max_hits, 4);
	ck_assert_uint_eq(st.memory_peak_bytes, 0);
	ck_assert_uint_eq(st.oom_kills, 0);
	/* Names are one path component, and new. */
	struct sbx_cgroup *bad = (struct sbx_cgroup *)&bad;
	ck_assert_int_eq(sbx_cgroup_new(root, "r1", &bad), -EEXIST);
	ck_assert_int_eq(sbx_cgroup_new(root, "", &bad), -EINVAL);
	ck_assert_int_eq(sbx_cgroup_new(root, "a/b", &bad), -EINVAL);
	ck_assert_int_eq(sbx_cgroup_new(root, "..", &bad), -EINVAL);
	ck_assert_ptr_eq(bad, (struct sbx_cgroup *)&bad);
	sbx_cgroup_free(cg);
	sbx_cgroup_root_free(root);
	ck_assert_str_eq(slurpf(t, sizeof(t), "%s/%s", plain, "cgroup.subtree_control"), "pids\n");
}
END_TEST

START_TEST(plain_refusals_mean_fewer)
{
	/* D refuses to hand controllers down (here: its subtree_control cannot
	 * be written): a root without controllers, which still works. */
	char dir[PATH_MAX];
	write_in(plain, "cgroup.controllers", "memory pids cpu\n");
	write_in(plain, "cgroup.procs", "");
	pathf(dir, "%s/cgroup.subtree_control", plain);
	ck_assert_int_eq(mkdir(dir, 0755), 0);
	struct sbx_cgroup_root *root = NULL;
	char why[512] = "";
	ck_assert_int_eq(sbx_cgroup_root_open_plain(plain, &root, why, sizeof(why)), 0);
	ck_assert_ptr_nonnull(root);
	ck_assert_uint_eq(sbx_cgroup_root_controllers(root), 0);
	ck_assert_ptr_nonnull(strstr(why, "controllers: none"));
	struct sbx_cgroup *cg = NULL;
	ck_assert_int_eq(sbx_cgroup_new(root, "r1", &cg), 0);
	ck_assert_int_eq(sbx_cgroup_set_limits(cg, 1073741824, 64, 2), 0);
	ck_assert_uint_eq(sbx_cgroup_enforced(cg), 0);
	sbx_cgroup_free(cg);
	sbx_cgroup_root_free(root);
}
END_TEST

START_TEST(settings_refused)
{
	struct sbx_cgroup_root *root = (struct sbx_cgroup_root *)&root;
	char why[512] = "";
	ck_assert_int_eq(sbx_cgroup_root_open("off", &root, why, sizeof(why)), 0);
	ck_assert_ptr_null(root);
	ck_assert_ptr_nonnull(strstr(why, "off"));
	root = (struct sbx_cgroup_root *)&root;
	ck_assert_int_eq(sbx_cgroup_root_open("relative/cg", &root, why, sizeof(why)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "relative/cg"));
	ck_assert_int_eq(sbx_cgroup_root_open("/tmp", &root, why, sizeof(why)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "not a cgroup v2 directory"));
	ck_assert_int_eq(sbx_cgroup_root_open("/nonexistent/kiln-cg", &root, why, sizeof(why)),
	                 -EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "/nonexistent/kiln-cg"));
	ck_assert_ptr_eq(root, (struct sbx_cgroup_root *)&root);
}
END_TEST

/* --- the real kernel ------------------------------------------------------------------ */

static unsigned listed_controllers(const char *dir)
{
	char text[512];
	unsigned bits = 0;
	char *save = NULL;
	slurpf(text, sizeof(text), "%s/%s", dir, "cgroup.controllers");
	for (char *w = strtok_r(text, " \n", &save); w; w = strtok_r(NULL, " \n", &save))
		bits |= !strcmp(w, "memory") ? SBX_CG_MEMORY
		        : !strcmp(w, "pids") ? SBX_CG_PIDS
		        : !strcmp(w, "cpu")  ? SBX_CG_CPU
		                             : 0;
	return bits;
}

/* "" for the root, else the cgroup path: what to put before "/child". */
static const char *prefix(const char *cgroup)
{
	return strcmp(cgroup, "/") == 0 ? "" : cgroup;
}

START_TEST(real_auto_finds_hierarchy)
{
	char d[PATH_MAX], before[PATH_MAX], after[PATH_MAX], expect[PATH_MAX];
	real_dir(d, sizeof(d));
	self_cgroup(before, sizeof(before));
	struct sbx_cgroup_root *root = open_auto();
	pathf(expect, "%s/kiln-%d", d, (int)getpid());
	ck_assert_str_eq(sbx_cgroup_root_path(root), expect);
	ck_assert(is_cgroup2(expect));
	/* The runner shares this cgroup (or it is the root): kiln stays put. */
	self_cgroup(after, sizeof(after));
	ck_assert_str_eq(after, before);
	/* Only what D has; none at all here (every controller is on v1). */
	unsigned listed = listed_controllers(d);
	ck_assert_uint_eq(sbx_cgroup_root_controllers(root) & ~listed, 0);
	if (!listed)
		ck_assert_uint_eq(sbx_cgroup_root_controllers(root), 0);
	sbx_cgroup_root_free(root);
	ck_assert_msg(!exists(expect), "root_free left %s", expect);
	/* NULL is "auto". */
	char why[512] = "";
	ck_assert_int_eq(sbx_cgroup_root_open(NULL, &root, why, sizeof(why)), 0);
	ck_assert_msg(root != NULL, "%s", why);
	track(sbx_cgroup_root_path(root));
	ck_assert_ptr_nonnull(strstr(why, expect));
	sbx_cgroup_root_free(root);
	ck_assert(!exists(expect));
	/* A file of the hierarchy is not a cgroup directory. */
	pathf(expect, "%s/cgroup.procs", d);
	ck_assert_int_eq(sbx_cgroup_root_open(expect, &root, why, sizeof(why)), -EINVAL);
}
END_TEST

START_TEST(real_clone_into_cgroup)
{
	char d[PATH_MAX], own[PATH_MAX], dir[PATH_MAX], want[PATH_MAX], text[4096];
	real_dir(d, sizeof(d));
	self_cgroup(own, sizeof(own));
	struct sbx_cgroup_root *root = open_auto();
	struct sbx_cgroup *cg = NULL;
	ck_assert_int_eq(sbx_cgroup_new(root, "r1", &cg), 0);
	pathf(dir, "%s/r1", sbx_cgroup_root_path(root));
	ck_assert(is_cgroup2(dir));
	pid_t pid = spawn_in(sbx_cgroup_fd(cg), sleeper);
	char proc[64];
	snprintf(proc, sizeof(proc), "/proc/%d/cgroup", (int)pid);
	pathf(want, "0::%s/kiln-%d/r1\n", prefix(own), (int)getpid());
	ck_assert_msg(strstr(slurp(proc, text, sizeof(text)), want), "%s has %s, not %s", proc,
	              text, want);
	pathf(want, "%d\n", (int)pid);
	ck_assert_str_eq(slurpf(text, sizeof(text), "%s/%s", dir, "cgroup.procs"), want);
	ck_assert(populated(dir));
	ck_assert_int_eq(sbx_cgroup_kill(cg), 0);
	int status;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	sbx_cgroup_free(cg);
	ck_assert_msg(!exists(dir), "sbx_cgroup_free left %s", dir);

	/* free on a live run: it kills, waits for "populated 0", removes. */
	ck_assert_int_eq(sbx_cgroup_new(root, "r2", &cg), 0);
	pathf(dir, "%s/r2", sbx_cgroup_root_path(root));
	pid = spawn_in(sbx_cgroup_fd(cg), sleeper);
	sbx_cgroup_free(cg);
	ck_assert_msg(!exists(dir), "sbx_cgroup_free left %s", dir);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	sbx_cgroup_root_free(root);
}
END_TEST

START_TEST(real_kill_takes_daemons)
{
	char d[PATH_MAX], dir[PATH_MAX], text[4096];
	real_dir(d, sizeof(d));
	/* Orphans come back to this process, which reaps them below. */
	ck_assert_int_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	struct sbx_cgroup_root *root = open_auto();
	struct sbx_cgroup *cg = NULL;
	ck_assert_int_eq(sbx_cgroup_new(root, "r1", &cg), 0);
	pathf(dir, "%s/r1", sbx_cgroup_root_path(root));
	/* A double fork and a new session: the sleeper has left the child's
	 * process tree, but not its cgroup. */
	char *daemon[] = {"/bin/sh", "-c",
	                  "(setsid /bin/sleep 600 </dev/null >/dev/null 2>&1 &); exit 0", NULL};
	pid_t pid = spawn_in(sbx_cgroup_fd(cg), daemon);
	int status;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ck_assert_msg(slurpf(text, sizeof(text), "%s/%s", dir, "cgroup.procs")[0] != '\0',
	              "the daemon is not in %s", dir);
	ck_assert(populated(dir));
	ck_assert_int_eq(sbx_cgroup_kill(cg), 0);
	ck_assert_msg(wait_unpopulated(dir, 2000), "%s still populated after cgroup.kill", dir);
	ck_assert_str_eq(slurpf(text, sizeof(text), "%s/%s", dir, "cgroup.procs"), "");
	ck_assert_ptr_nonnull(
	    strstr(slurpf(text, sizeof(text), "%s/%s", dir, "cgroup.events"), "populated 0\n"));
	while (waitpid(-1, NULL, 0) > 0)
		;
	sbx_cgroup_free(cg);
	ck_assert(!exists(dir));
	sbx_cgroup_root_free(root);
}
END_TEST

START_TEST(real_stats_cpu)
{
	char d[PATH_MAX];
	real_dir(d, sizeof(d));
	struct sbx_cgroup_root *root = open_auto();
	struct sbx_cgroup *cg = NULL;
	ck_assert_int_eq(sbx_cgroup_new(root, "r1", &cg), 0);
	pid_t pid = spawn_in(sbx_cgroup_fd(cg), NULL); /* 50 ms of CPU */
	int status;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	struct sbx_cgroup_stats st;
	ck_assert_int_eq(sbx_cgroup_stats(cg, &st), 0);
	ck_assert_msg(st.cpu_usec >= 25000, "cpu.stat usage_usec %llu after 50 ms of CPU",
	              (unsigned long long)st.cpu_usec);
	if (!(sbx_cgroup_root_controllers(root) & SBX_CG_MEMORY))
		ck_assert_uint_eq(st.memory_peak_bytes, 0); /* unknown */
	ck_assert_uint_eq(st.oom_kills, 0);
	ck_assert_uint_eq(st.pids_max_hits, 0);
	/* cpu.stat is opened when the cgroup is made and kept open: each
	 * read is a fresh one, from its start. */
	uint64_t first = st.cpu_usec;
	pid = spawn_in(sbx_cgroup_fd(cg), NULL);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_int_eq(sbx_cgroup_stats(cg, &st), 0);
	ck_assert_msg(st.cpu_usec >= first + 25000,
	              "cpu.stat usage_usec %llu after %llu and 50 ms more of CPU",
	              (unsigned long long)st.cpu_usec, (unsigned long long)first);
	sbx_cgroup_free(cg);
	sbx_cgroup_root_free(root);
}
END_TEST

static pid_t dead_pid(void)
{
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(0);
	ck_assert_int_eq(waitpid(pid, NULL, 0), pid);
	return pid;
}

/* mkdir a directory whose name is "<parent>/<name>-<n>", tracked. */
static void make_dir(char *path, const char *parent, const char *name, int n)
{
	pathf(path, "%s/%s-%d", parent, name, n);
	track(path);
	ck_assert_msg(mkdir(path, 0755) == 0, "mkdir %s: %s", path, strerror(errno));
}

START_TEST(real_stale_removed)
{
	char d[PATH_MAX], stale[PATH_MAX], busy[PATH_MAX], live[PATH_MAX], sub[PATH_MAX];
	real_dir(d, sizeof(d));
	/* A killed server's directory, with a run's and the server leaf. */
	make_dir(stale, d, "kiln", (int)dead_pid());
	pathf(sub, "%s/r3", stale);
	ck_assert_int_eq(mkdir(sub, 0755), 0);
	pathf(sub, "%s/server", stale);
	ck_assert_int_eq(mkdir(sub, 0755), 0);
	/* A dead server's run that still has a process: rmdir refuses it. */
	make_dir(busy, d, "kiln", (int)dead_pid());
	pathf(sub, "%s/r4", busy);
	ck_assert_int_eq(mkdir(sub, 0755), 0);
	int fd = open(sub, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	pid_t sleeping = spawn_in(fd, sleeper);
	close(fd);
	/* A live process's: the runner's pid. */
	make_dir(live, d, "kiln", (int)getppid());

	struct sbx_cgroup_root *root = open_auto();
	ck_assert_msg(!exists(stale), "stale %s was not removed", stale);
	ck_assert(exists(sub) && exists(busy));
	ck_assert(exists(live));
	sbx_cgroup_root_free(root);

	pathf(sub, "%s/r4/cgroup.kill", busy);
	write_file(sub, "1");
	ck_assert_int_eq(waitpid(sleeping, NULL, 0), sleeping);
	pathf(sub, "%s/r4", busy);
	ck_assert(wait_unpopulated(sub, 2000));
	ck_assert_int_eq(rmdir(sub), 0);
	ck_assert_int_eq(rmdir(busy), 0);
	ck_assert_int_eq(rmdir(live), 0);
}
END_TEST

/* A path setting naming a cgroup kiln has to itself: kiln moves into its
 * server/ leaf (so the cgroup could hand controllers down) and back out on
 * free. With another process there, it stays. */
START_TEST(real_path_moves_only_when_alone)
{
	char d[PATH_MAX], own[PATH_MAX], t[PATH_MAX], now[PATH_MAX], want[PATH_MAX];
	char procs[PATH_MAX], pid[24], why[512] = "";
	real_dir(d, sizeof(d));
	self_cgroup(own, sizeof(own));
	make_dir(t, d, "kiln-test-move", (int)getpid());
	snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	pathf(procs, "%s/cgroup.procs", t);
	write_file(procs, pid);

	struct sbx_cgroup_root *root = NULL;
	ck_assert_int_eq(sbx_cgroup_root_open(t, &root, why, sizeof(why)), 0);
	ck_assert_msg(root != NULL, "%s", why);
	track(sbx_cgroup_root_path(root));
	self_cgroup(now, sizeof(now));
	pathf(want, "%s/kiln-test-move-%d/kiln-%d/server", prefix(own), (int)getpid(),
	      (int)getpid());
	ck_assert_str_eq(now, want);
	ck_assert_ptr_nonnull(strstr(why, "moved"));
	struct sbx_cgroup *cg = NULL;
	ck_assert_int_eq(sbx_cgroup_new(root, "r1", &cg), 0);
	sbx_cgroup_free(cg);
	char path[PATH_MAX];
	pathf(path, "%s", sbx_cgroup_root_path(root));
	sbx_cgroup_root_free(root);
	self_cgroup(now, sizeof(now));
	pathf(want, "%s/kiln-test-move-%d", prefix(own), (int)getpid());
	ck_assert_str_eq(now, want);
	ck_assert_msg(!exists(path), "root_free left %s", path);

	/* Shared with a sleeper: kiln must not move. */
	int fd = open(t, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	pid_t sleeping = spawn_in(fd, sleeper);
	close(fd);
	ck_assert_int_eq(sbx_cgroup_root_open(t, &root, why, sizeof(why)), 0);
	ck_assert_msg(root != NULL, "%s", why);
	track(sbx_cgroup_root_path(root));
	self_cgroup(now, sizeof(now));
	ck_assert_str_eq(now, want);
	ck_assert_ptr_null(strstr(why, "moved"));
	sbx_cgroup_root_free(root);
	ck_assert(!exists(path));

	ck_assert_int_eq(kill(sleeping, SIGKILL), 0);
	ck_assert_int_eq(waitpid(sleeping, NULL, 0), sleeping);
	pathf(procs, "%s/cgroup.procs", d);
	write_file(procs, pid);
	ck_assert(wait_unpopulated(t, 2000));
	ck_assert_int_eq(rmdir(t), 0);
}
END_TEST

/* As nobody (what setpriv --reuid=65534 does, in a forked child): the
 * hierarchy is root's, so no cgroup, and the sentence names the path. */
START_TEST(real_unprivileged_gets_none)
{
	char d[PATH_MAX];
	real_dir(d, sizeof(d));
	int p[2];
	ck_assert_int_eq(pipe(p), 0);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(p[0]);
		if (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 ||
		    setresuid(65534, 65534, 65534) < 0) {
			dprintf(p[1], "setresuid: %s", strerror(errno));
			_exit(1);
		}
		const char *settings[] = {"auto", d};
		for (int i = 0; i < 2; i++) {
			struct sbx_cgroup_root *root = NULL;
			char why[512] = "";
			int r = sbx_cgroup_root_open(settings[i], &root, why, sizeof(why));
			dprintf(p[1], "%d %d %s\n", r, root != NULL, why);
		}
		_exit(0);
	}
	close(p[1]);
	char text[2048];
	size_t len = 0;
	ssize_t n;
	while (len < sizeof(text) - 1 && (n = read(p[0], text + len, sizeof(text) - 1 - len)) > 0)
		len += (size_t)n;
	text[len] = '\0';
	close(p[0]);
	int status;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child: %s", text);
	char want[PATH_MAX];
	pathf(want, "0 0 no writable cgroup v2: %s/ is not writable by uid 65534\n", d);
	ck_assert_msg(strncmp(text, want, strlen(want)) == 0, "auto as nobody: %s", text);
	ck_assert_msg(strcmp(text + strlen(want), want) == 0, "%s as nobody: %s", d,
	              text + strlen(want));
}
END_TEST

static Suite *cgroup_suite(void)
{
	Suite *s = suite_create("cgroup");
	TCase *parse = tcase_create("parse");
	tcase_add_test(parse, parse_self_formats);
	tcase_add_test(parse, parse_mountinfo_formats);
	tcase_add_test(parse, settings_refused);
	suite_add_tcase(s, parse);

	TCase *plain_tc = tcase_create("plain");
	tcase_add_unchecked_fixture(plain_tc, suite_setup, suite_teardown);
	tcase_add_checked_fixture(plain_tc, plain_setup, NULL);
	tcase_add_test(plain_tc, plain_writes_limits);
	tcase_add_test(plain_tc, plain_fewer_controllers);
	tcase_add_test(plain_tc, plain_refusals_mean_fewer);
	suite_add_tcase(s, plain_tc);

	TCase *real = tcase_create("real");
	tcase_add_unchecked_fixture(real, suite_setup, suite_teardown);
	tcase_set_timeout(real, 20);
	tcase_add_test(real, real_auto_finds_hierarchy);
	tcase_add_test(real, real_clone_into_cgroup);
	tcase_add_test(real, real_kill_takes_daemons);
	tcase_add_test(real, real_stats_cpu);
	tcase_add_test(real, real_stale_removed);
	tcase_add_test(real, real_path_moves_only_when_alone);
	tcase_add_test(real, real_unprivileged_gets_none);
	suite_add_tcase(s, real);
	return s;
}

UNIT_MAIN(cgroup_suite)
