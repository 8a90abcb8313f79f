/* host.c: the host's facts, made once per process (see host.h), the
 * sealed memfds the server hands a box, and the end of a base: the top
 * of host/, which stops what the files below it started. */
#include "sandbox/host/host.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/log.h"
#include "core/util.h"
#include "sandbox/host/base.h"
#include "sandbox/host/cgroup.h"
#include "sandbox/host/cgroup_ahead.h"
#include "sandbox/host/filter.h"
#include "sandbox/host/job.h"
#include "sandbox/host/reap.h"

#ifndef LANDLOCK_CREATE_RULESET_VERSION
#define LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#endif

int sbx_landlock_abi(void)
{
	long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
	return abi < 0 ? 0 : (int)abi;
}

static struct sbx_host host;
static pthread_once_t facts_once = PTHREAD_ONCE_INIT, filter_once = PTHREAD_ONCE_INIT;

static void init_facts(void)
{
	host.euid = geteuid();
	host.egid = getegid();
	host.landlock_abi = sbx_landlock_abi();
	const char *v = getenv("KILN_BENCH_NO_IDMAP");
	host.bench_no_idmap = v && strcmp(v, "1") == 0;
}

const struct sbx_host *sbx_host_get(void)
{
	pthread_once(&facts_once, init_facts);
	return &host;
}

/* The program the build compiled (filter.h): the same one libseccomp
 * would make here, without its compile on every cold start. */
static void compile_filter(void)
{
	sbx_filter_embedded(false, &host.filter);
	log_debug("sandbox: seccomp filter of %u instructions, Landlock ABI %d", host.filter.len,
	          host.landlock_abi);
}

int sbx_host_filter_ready(void)
{
	sbx_host_get();
	pthread_once(&filter_once, compile_filter);
	return host.filter.filter ? 0 : -EIO;
}

void sbx_base_release(struct sbx_base *b)
{
	sbx_reap_stop(b);
	/* The cgroups of the boxes above are removed by jobs: all done
	 * before their root goes. */
	sbx_jobs_stop(b);
	sbx_cgroup_ahead_stop(b);
	sbx_cgroup_root_free(b->cgroups);
	*b = (struct sbx_base){.host = b->host};
}

int sbx_sealed_memfd(const char *name, const char *data, size_t len)
{
	int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return neg_errno();
	for (size_t off = 0; off < len;) {
		ssize_t w = write(fd, data + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			int r = w < 0 ? neg_errno() : -EIO;
			close(fd);
			return r;
		}
		off += (size_t)w;
	}
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0) {
		int r = neg_errno();
		close(fd);
		return r;
	}
	return fd;
}
