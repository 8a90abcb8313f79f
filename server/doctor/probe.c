/* probe.c: the doctor's host probes (see doctor.h): each tries the thing
 * kiln needs instead of reading settings, and reads the settings only to
 * name the cause when the kernel refuses. A user namespace is tried in a
 * forked child (id maps, a mount namespace, a tmpfs with a user xattr,
 * the workspace's overlay); a box, Python and Node are worker boxes
 * (sandbox/box/worker.h), the sandbox's own code, so "ok" means a run
 * would get as far. Blocking: a job thread's work, never the loop's. */
#include "doctor/doctor.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "core/json.h"
#include "core/loop.h"
#include "core/util.h"
#include "sandbox/box/box.h"
#include "sandbox/box/pid1.h"
#include "sandbox/box/worker.h"
#include "sandbox/host/cgroup.h"
#include "sandbox/host/host.h"

/* Importing numpy, pandas and matplotlib.pyplot takes 1-2 s on a desktop
 * and most of a minute on an emulated one (80-kernels' TCG guests): a
 * slow machine is not a broken one. */
#define WORKER_START_MS  5000
#define WORKER_ANSWER_MS 90000
#define ANSWER_MAX       4096

static void set(struct doctor_item *it, enum doctor_status st, const char *detail, const char *fix)
{
	it->status = st;
	snprintf(it->detail, sizeof(it->detail), "%s", detail ? detail : "");
	snprintf(it->fix, sizeof(it->fix), "%s", fix ? fix : "");
}

/* --- the kernel ---------------------------------------------------------- */

static void probe_kernel(struct doctor_report *r)
{
	struct doctor_item *it = &r->items[DOCTOR_KERNEL];
	struct utsname u;
	if (uname(&u) < 0) {
		set(it, DOCTOR_DEGRADED, "uname failed", "");
		return;
	}
	snprintf(r->kernel_release, sizeof(r->kernel_release), "%s", u.release);
	snprintf(it->value, sizeof(it->value), "Linux %s", u.release);
	int major = 0, minor = 0;
	sscanf(u.release, "%d.%d", &major, &minor);
	if (major < 5 || (major == 5 && minor < 12))
		set(it, DOCTOR_MISSING,
		    "kiln's sandbox needs Linux 5.12 or newer (open_tree, mount_setattr, openat2)",
		    "boot a Linux 5.12 or newer kernel (6.6 or newer for the workspace)");
}

/* --- user namespaces, tried in a child ----------------------------------- */

/* The steps of the child, in order; it exits with the step that failed
 * and reports its errno through the pipe. */
enum ns_step {
	NS_OK,
	NS_USERNS,
	NS_IDMAP,
	NS_MOUNTNS,
	NS_MOUNT,
	NS_XATTR,
	NS_OVERLAY,
};

/* The child's fd of the workspace, fixed so that the overlay's options
 * are written before the fork. */
#define WS_FD 200

struct ns_result {
	int step; /* enum ns_step */
	int err;
	int xattr_err; /* tmpfs's user xattrs refused (errno), or 0 */
};

static int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = write(fd, s, strlen(s));
	int e = errno;
	close(fd);
	errno = e;
	return n == (ssize_t)strlen(s) ? 0 : -1;
}

/* The child: only system calls (the parent may have threads); strings
 * are made before the fork. */
static void __attribute__((noreturn))
ns_child(int pfd, const char *uid_map, const char *gid_map, const char *ws, const char *ovl_opts)
{
	struct ns_result res = {NS_OK, 0, 0};
#define STEP(s, call)                                                                              \
	do {                                                                                       \
		if ((call) < 0) {                                                                  \
			res = (struct ns_result){s, errno, res.xattr_err};                         \
			goto out;                                                                  \
		}                                                                                  \
	} while (0)
	STEP(NS_USERNS, unshare(CLONE_NEWUSER));
	STEP(NS_IDMAP, write_file("/proc/self/setgroups", "deny"));
	STEP(NS_IDMAP, write_file("/proc/self/uid_map", uid_map));
	STEP(NS_IDMAP, write_file("/proc/self/gid_map", gid_map));
	STEP(NS_MOUNTNS, unshare(CLONE_NEWNS));
	STEP(NS_MOUNT, mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL));
	/* The workspace by an fd opened here: overlayfs takes a layer only
	 * from its mounter's mount namespace, and the tmpfs on /tmp below
	 * would hide a folder under /tmp. */
	if (ws) {
		int fd = open(ws, O_PATH | O_DIRECTORY | O_CLOEXEC);
		STEP(NS_OVERLAY, fd);
		STEP(NS_OVERLAY, dup3(fd, WS_FD, 0));
	}
	/* /tmp in the child's own mount namespace: the host's is untouched. */
	STEP(NS_MOUNT, mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0700"));
	STEP(NS_XATTR, mkdir("/tmp/u", 0700));
	STEP(NS_XATTR, mkdir("/tmp/w", 0700));
	STEP(NS_XATTR, mkdir("/tmp/m", 0700));
	/* overlayfs's userxattr keeps its marks in user.* xattrs on the
	 * upper layer: tmpfs has them from Linux 6.6. Without them overlayfs
	 * still mounts (index and metacopy off; 6.1 does, 80-kernels shows
	 * it), so the overlay decides and this is only said. */
	if (setxattr("/tmp/u", "user.kiln.doctor", "1", 1, 0) < 0)
		res.xattr_err = errno;
	if (ws)
		STEP(NS_OVERLAY,
		     mount("overlay", "/tmp/m", "overlay", MS_NOSUID | MS_NODEV, ovl_opts));
#undef STEP
out:
	while (write(pfd, &res, sizeof(res)) < 0 && errno == EINTR)
		;
	_exit(res.step);
}

static void ns_try(const char *workspace, struct ns_result *ret)
{
	char uid_map[64], gid_map[64], ovl[PATH_MAX + 128];
	snprintf(uid_map, sizeof(uid_map), "0 %u 1", (unsigned)geteuid());
	snprintf(gid_map, sizeof(gid_map), "0 %u 1", (unsigned)getegid());
	snprintf(ovl, sizeof(ovl),
	         "lowerdir=/proc/self/fd/%d,upperdir=/tmp/u,workdir=/tmp/w,userxattr", WS_FD);
	const char *ws = workspace && workspace[0] ? workspace : NULL;
	*ret = (struct ns_result){NS_USERNS, EIO, 0};
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0) {
		ret->err = errno;
		goto out;
	}
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]);
		ns_child(p[1], uid_map, gid_map, ws, ovl);
	}
	close(p[1]);
	if (pid < 0) {
		ret->err = errno;
		close(p[0]);
		goto out;
	}
	struct ns_result res;
	ssize_t n;
	while ((n = read(p[0], &res, sizeof(res))) < 0 && errno == EINTR)
		;
	if (n == sizeof(res))
		*ret = res;
	close(p[0]);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
out:;
}

/* Why an unprivileged user namespace was refused, and the fix: the
 * sandbox's own reading (sbx_userns_cause), as a failed run says it. */
static void userns_refused(struct doctor_item *it, int err)
{
	char d[512];
	struct sbx_userns_cause c;
	sbx_userns_cause(true, err, &c);
	snprintf(d, sizeof(d), "unshare(CLONE_NEWUSER) was refused (%s): %s", strerror(err), c.why);
	set(it, DOCTOR_MISSING, d, c.fix);
}

/* The namespace was made but is powerless: AppArmor's restriction, or a
 * container's. */
static void userns_powerless(struct doctor_item *it, const char *what, int err)
{
	char d[512];
	struct sbx_userns_cause c;
	sbx_userns_cause(false, err, &c);
	snprintf(d, sizeof(d), "the user namespace has no privilege (%s: %s): %s", what,
	         strerror(err), c.why);
	set(it, DOCTOR_MISSING, d, c.fix);
}

static void probe_userns(const struct doctor_input *in, struct doctor_report *r)
{
	const char *workspace = in->workspace;
	bool workspace_on = in->workspace_on;
	struct doctor_item *it = &r->items[DOCTOR_USERNS], *ws = &r->items[DOCTOR_WORKSPACE];
	struct ns_result res;
	ns_try(workspace_on ? workspace : NULL, &res);
	snprintf(ws->value, sizeof(ws->value), "%s", workspace[0] ? workspace : "none");
	switch (res.step) {
	case NS_USERNS:
		userns_refused(it, res.err);
		break;
	case NS_IDMAP:
		userns_powerless(it, "writing its uid_map", res.err);
		break;
	case NS_MOUNTNS:
	case NS_MOUNT:
		userns_powerless(
		    it, res.step == NS_MOUNT ? "mounting a tmpfs" : "a mount namespace", res.err);
		break;
	default:
		r->userns = true;
		snprintf(it->value, sizeof(it->value), "yes (id maps, mounts)");
	}
	if (!r->userns) {
		snprintf(it->value, sizeof(it->value), "no");
		set(ws, DOCTOR_MISSING, "no user namespace", "see user namespaces");
		return;
	}
	char d[1024];
	if (res.step == NS_XATTR) {
		snprintf(d, sizeof(d),
		         "a tmpfs for the workspace's upper layer cannot be made (%s), so runs see "
		         "no workspace",
		         strerror(res.err));
		set(ws, DOCTOR_DEGRADED, d, "set sandbox.workspace.mode to \"none\"");
		return;
	}
	if (!workspace_on) {
		set(ws, DOCTOR_DEGRADED, "sandbox.workspace.mode is \"none\": runs see no folder",
		    "set sandbox.workspace.mode to \"overlay\"");
		return;
	}
	if (!workspace[0] && in->workspace_refused[0]) {
		set(ws, DOCTOR_DEGRADED, in->workspace_refused,
		    "open a folder kiln can show (no mount inside it: findmnt -R FOLDER lists "
		    "them), "
		    "or set sandbox.workspace.mode to \"none\"");
		return;
	}
	if (!workspace[0]) {
		set(ws, DOCTOR_DEGRADED, "no workspace folder: runs see none",
		    "start kiln in the project's folder (an editor: open a folder)");
		return;
	}
	if (res.step == NS_OVERLAY) {
		char hint[640];
		sbx_failure_hint(SBX_STEP_WORKSPACE, res.err, hint, sizeof(hint));
		snprintf(d, sizeof(d), "the overlay over the workspace was refused (%s)%s.%s",
		         strerror(res.err),
		         res.xattr_err
		             ? "; tmpfs here has no user xattrs (Linux 6.6 and later have them)"
		             : "",
		         hint);
		set(ws, DOCTOR_DEGRADED, d,
		    res.err == EINVAL ? "findmnt -R FOLDER lists the mounts inside it; unmount "
		                        "them, open another folder, or set sandbox.workspace.mode "
		                        "to \"none\""
		                      : "set sandbox.workspace.mode to \"none\"");
		return;
	}
	r->overlay = true;
	snprintf(ws->value, sizeof(ws->value), "%s (overlay, tmpfs upper layer%s)", workspace,
	         res.xattr_err ? " without user xattrs" : "");
}

/* --- seccomp and Landlock ------------------------------------------------- */

static void probe_seccomp(struct doctor_report *r)
{
	struct doctor_item *it = &r->items[DOCTOR_SECCOMP];
	/* A NULL filter: EFAULT where filter mode exists, EINVAL where not. */
	errno = 0;
	int rc = prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, NULL);
	r->seccomp_filter = rc < 0 && errno == EFAULT;
	if (!r->seccomp_filter) {
		set(it, DOCTOR_MISSING,
		    "the kernel has no seccomp filter mode (CONFIG_SECCOMP_FILTER)",
		    "boot a kernel built with CONFIG_SECCOMP_FILTER=y (every distribution kernel "
		    "is)");
		snprintf(it->value, sizeof(it->value), "no filter mode");
		return;
	}
	int fr = sbx_host_filter_ready();
	if (fr < 0) {
		char d[256];
		snprintf(d, sizeof(d), "kiln's filter does not compile: %s", strerror(-fr));
		set(it, DOCTOR_MISSING, d, "reinstall libseccomp (apt-get install libseccomp2)");
	}
	snprintf(it->value, sizeof(it->value), "filter mode");
}

static void probe_landlock(struct doctor_report *r)
{
	struct doctor_item *it = &r->items[DOCTOR_LANDLOCK];
	r->landlock_abi = sbx_landlock_abi();
	if (r->landlock_abi > 0) {
		snprintf(it->value, sizeof(it->value), "ABI %d", r->landlock_abi);
		return;
	}
	snprintf(it->value, sizeof(it->value), "none");
	set(it, DOCTOR_DEGRADED,
	    "no Landlock: a run's writes are bounded by its mounts only, not also by Landlock",
	    "boot a kernel with CONFIG_SECURITY_LANDLOCK=y and landlock in its lsm= list (e.g. "
	    "lsm=landlock,lockdown,yama,apparmor,bpf on the kernel command line)");
}

/* --- cgroups ------------------------------------------------------------- */

/* 2 when /sys/fs/cgroup is cgroup2, 1 when cgroup v1 is mounted, else 0. */
static int cgroup_version(void)
{
	FILE *f = fopen("/proc/self/mounts", "re");
	if (!f)
		return 0;
	char line[1024];
	int v = 0;
	while (fgets(line, sizeof(line), f)) {
		char dev[256], dir[512], type[64];
		if (sscanf(line, "%255s %511s %63s", dev, dir, type) != 3)
			continue;
		if (strcmp(type, "cgroup2") == 0 && strcmp(dir, "/sys/fs/cgroup") == 0)
			v = 2;
		else if (strcmp(type, "cgroup") == 0 && v == 0)
			v = 1;
	}
	fclose(f);
	return v;
}

static void probe_cgroup(const struct doctor_input *in, struct doctor_report *r)
{
	struct doctor_item *it = &r->items[DOCTOR_CGROUP];
	r->cgroup_version = cgroup_version();
	unsigned want = SBX_CG_MEMORY | SBX_CG_PIDS;
	r->cgroup_exact = in->cgroup_root && (in->cgroup_controllers & want) == want;
	snprintf(it->value, sizeof(it->value), "v%d, limits %s", r->cgroup_version,
	         r->cgroup_exact ? "exact (delegated cgroup v2)" : "approximate (rlimits)");
	if (r->cgroup_exact)
		return;
	char d[512];
	snprintf(d, sizeof(d),
	         "memory and process limits are per-process rlimits, not a cgroup's: %.440s",
	         in->cgroup_why[0] ? in->cgroup_why : "no writable cgroup v2");
	set(it, DOCTOR_DEGRADED, d,
	    r->cgroup_version == 2
	        ? "start kiln in a delegated cgroup: systemd-run --user --scope -p Delegate=yes "
	          "kiln"
	        : "boot with systemd.unified_cgroup_hierarchy=1 (cgroup v2), then start kiln with "
	          "systemd-run --user --scope -p Delegate=yes kiln");
}

/* --- boxes: the sandbox itself, Python, Node ----------------------------- */

/* Run a worker box: argv with file holding data; its first line of
 * output (up to ANSWER_MAX) into out. -errno with a sentence in err. */
static int box_answer(const struct doctor_input *in, const char *const *argv, const char *file,
                      const char *data, char *out, size_t outsz, char *err, size_t errsz)
{
	struct sbx_worker_spec spec = {.argv = argv,
	                               .file = file,
	                               .data = data,
	                               .start_ms = WORKER_START_MS,
	                               .limits = &in->limits};
	struct sbx_worker *w = NULL;
	int r = sbx_worker_spawn(NULL, &spec, &w, err, errsz);
	if (r < 0)
		return r;
	char buf[ANSWER_MAX];
	uint64_t deadline = loop_now_ms() + WORKER_ANSWER_MS;
	sbx_worker_read(w, buf, sizeof(buf), deadline);
	bool late = loop_now_ms() >= deadline;
	sbx_worker_free(w);
	char *nl = strchr(buf, '\n');
	if (!nl) {
		if (late)
			snprintf(err, errsz, "%s gave no answer within %d s", argv[0],
			         WORKER_ANSWER_MS / 1000);
		else
			snprintf(err, errsz, "%s gave no answer", argv[0]);
		return -EIO;
	}
	*nl = '\0';
	snprintf(out, outsz, "%s", buf);
	return 0;
}

static void probe_box(const struct doctor_input *in, struct doctor_report *r)
{
	struct doctor_item *it = &r->items[DOCTOR_BOX];
	static const char *const argv[] = {"/bin/sh", "{file}", NULL};
	char out[64], err[512];
	int rc =
	    box_answer(in, argv, "doctor.sh", "echo built\n", out, sizeof(out), err, sizeof(err));
	if (rc == 0 && strcmp(out, "built") == 0) {
		snprintf(it->value, sizeof(it->value), "built (namespaces, seccomp, %s)",
		         r->landlock_abi > 0 ? "Landlock" : "no Landlock");
		return;
	}
	snprintf(it->value, sizeof(it->value), "not built");
	set(it, DOCTOR_MISSING, rc < 0 ? err : "the box's program gave a wrong answer",
	    "fix the items above (user namespaces, seccomp); docs/sandbox.md, \"When the "
	    "sandbox cannot be built\"");
}

static const char *const module_names[DOCTOR_MODULES_N] = {"numpy", "pandas", "matplotlib"};

const char *doctor_module_name(int i)
{
	return module_names[i];
}

/* Python's version and each module's, imported for real (matplotlib's
 * pyplot is the import that used to fail in a box). */
static const char py_src[] = "import sys, json\n"
                             "out = {'version': sys.version.split()[0]}\n"
                             "for m in ('numpy', 'pandas', 'matplotlib'):\n"
                             "    try:\n"
                             "        mod = __import__(m)\n"
                             "        if m == 'matplotlib':\n"
                             "            import matplotlib.pyplot\n"
                             "        out[m] = str(mod.__version__)[:31]\n"
                             "    except Exception:\n"
                             "        out[m] = ''\n"
                             "print(json.dumps(out))\n";

static void probe_python(const struct doctor_input *in, const char *python, struct doctor_report *r)
{
	struct doctor_item *it = &r->items[DOCTOR_PYTHON], *mods = &r->items[DOCTOR_MODULES];
	snprintf(r->python, sizeof(r->python), "%s", python);
	static const char install[] = "sudo apt-get install python3-numpy python3-pandas "
	                              "python3-matplotlib";
	if (!python[0]) {
		snprintf(it->value, sizeof(it->value), "none");
		set(it, DOCTOR_MISSING, "the language registry has no python",
		    "remove sandbox.languages.python from the config");
		snprintf(mods->value, sizeof(mods->value), "none");
		set(mods, DOCTOR_MISSING, "no Python", install);
		return;
	}
	const char *argv[] = {python, "-I", "{file}", NULL};
	char out[ANSWER_MAX], err[512];
	int rc = box_answer(in, argv, "doctor.py", py_src, out, sizeof(out), err, sizeof(err));
	json_object *o = rc == 0 ? json_tokener_parse(out) : NULL;
	const char *v = NULL;
	if (!o || json_get_string(o, "version", &v) < 0 || !v) {
		char d[600];
		snprintf(it->value, sizeof(it->value), "%s", python);
		snprintf(d, sizeof(d), "%s does not run in a box: %s", python,
		         rc < 0 ? err : "it gave no version");
		set(it, DOCTOR_MISSING, d,
		    access(python, X_OK) < 0
		        ? "sudo apt-get install python3 (or point "
		          "sandbox.languages.python.argv at an installed one)"
		        : "see docs/sandbox.md, \"When the sandbox cannot be built\"");
		snprintf(mods->value, sizeof(mods->value), "none");
		set(mods, DOCTOR_MISSING, "no Python", install);
		json_object_put(o);
		return;
	}
	snprintf(r->python_version, sizeof(r->python_version), "%s", v);
	snprintf(it->value, sizeof(it->value), "%s %s", python, v);
	char have[200] = "", lack[200] = "";
	for (int i = 0; i < DOCTOR_MODULES_N; i++) {
		const char *mv = NULL;
		json_get_string(o, module_names[i], &mv);
		snprintf(r->module_version[i], sizeof(r->module_version[i]), "%s", mv ? mv : "");
		char *dst = mv && mv[0] ? have : lack;
		size_t len = strlen(dst);
		snprintf(dst + len, sizeof(have) - len, "%s%s%s%s", len ? ", " : "",
		         module_names[i], mv && mv[0] ? " " : "", mv && mv[0] ? mv : "");
	}
	json_object_put(o);
	snprintf(mods->value, sizeof(mods->value), "%s", have[0] ? have : "none");
	if (lack[0]) {
		char d[300];
		snprintf(d, sizeof(d), "%s does not import %s", python, lack);
		set(mods, have[0] ? DOCTOR_DEGRADED : DOCTOR_MISSING, d, install);
	}
}

static void probe_node(const struct doctor_input *in, const char *node, struct doctor_report *r)
{
	struct doctor_item *it = &r->items[DOCTOR_NODE];
	snprintf(r->node, sizeof(r->node), "%s", node);
	if (!node[0]) {
		snprintf(it->value, sizeof(it->value), "none");
		set(it, DOCTOR_MISSING, "the language registry has no javascript",
		    "remove sandbox.languages.javascript from the config");
		return;
	}
	const char *argv[] = {node, "{file}", NULL};
	char out[64], err[512];
	int rc = box_answer(in, argv, "doctor.js", "console.log(process.version)\n", out,
	                    sizeof(out), err, sizeof(err));
	snprintf(it->value, sizeof(it->value), "%s", node);
	if (rc == 0 && out[0] == 'v') {
		snprintf(r->node_version, sizeof(r->node_version), "%.31s", out + 1);
		snprintf(it->value, sizeof(it->value), "%s %s", node, out + 1);
		return;
	}
	char d[600];
	snprintf(d, sizeof(d), "%s does not run in a box: %s", node, rc < 0 ? err : "no version");
	set(it, DOCTOR_MISSING, d,
	    access(node, X_OK) < 0 ? "sudo apt-get install nodejs (or point "
	                             "sandbox.languages.javascript.argv at an installed one)"
	                           : "see docs/sandbox.md, \"When the sandbox cannot be built\"");
}

/* The project's own Python (pyenv.h), or why the one named or found
 * cannot be used: what runs will use, said without starting it (a
 * worker box shows neither the workspace nor the environment's
 * folders). True when it decided the Python items. */
static bool probe_project_python(const struct doctor_input *in, struct doctor_report *r)
{
	struct doctor_item *it = &r->items[DOCTOR_PYTHON], *mods = &r->items[DOCTOR_MODULES];
	if (in->py_rc == 0)
		return false;
	snprintf(r->python_source, sizeof(r->python_source), "%s", in->py.source);
	if (in->py_rc < 0) {
		snprintf(it->value, sizeof(it->value), "%s (%s)", in->py.python, in->py.source);
		set(it, DOCTOR_MISSING, in->py_err,
		    "fix the environment as the detail says, or set sandbox.python "
		    "(docs/configuration.md)");
		snprintf(mods->value, sizeof(mods->value), "none");
		set(mods, DOCTOR_MISSING, "no Python", "see python");
		return true;
	}
	snprintf(r->python, sizeof(r->python), "%s", in->py.python);
	snprintf(r->python_version, sizeof(r->python_version), "%s", in->py.version);
	snprintf(r->python_prefix, sizeof(r->python_prefix), "%s", in->py.prefix);
	snprintf(it->value, sizeof(it->value), "%s%s%s (%s)", in->py.python,
	         in->py.version[0] ? " " : "", in->py.version, in->py.source);
	snprintf(mods->value, sizeof(mods->value), "the project's environment's (not probed)");
	return true;
}

void doctor_probe_host(const struct doctor_input *in, struct doctor_report *r)
{
	snprintf(r->workspace, sizeof(r->workspace), "%s", in->workspace);
	probe_kernel(r);
	probe_seccomp(r);
	probe_landlock(r);
	probe_userns(in, r);
	probe_cgroup(in, r);
	probe_box(in, r);
	snprintf(r->python_source, sizeof(r->python_source), "system");
	if (r->items[DOCTOR_BOX].status == DOCTOR_OK) {
		if (!probe_project_python(in, r))
			probe_python(in, in->python, r);
		probe_node(in, in->node, r);
		return;
	}
	snprintf(r->items[DOCTOR_PYTHON].value, sizeof(r->items[0].value), "%s", in->python);
	snprintf(r->items[DOCTOR_NODE].value, sizeof(r->items[0].value), "%s", in->node);
	snprintf(r->python, sizeof(r->python), "%s", in->python);
	snprintf(r->node, sizeof(r->node), "%s", in->node);
	set(&r->items[DOCTOR_PYTHON], DOCTOR_MISSING, "no box to run it in", "see box");
	set(&r->items[DOCTOR_MODULES], DOCTOR_MISSING, "no box to run Python in", "see box");
	set(&r->items[DOCTOR_NODE], DOCTOR_MISSING, "no box to run it in", "see box");
}
