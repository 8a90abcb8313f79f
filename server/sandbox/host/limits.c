/* limits.c: resolving and describing run limits (see limits.h). One
 * table lists every limit: its JSON name, default, ceiling and enforcer. */
#include "sandbox/host/limits.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/json.h"
#include "core/util.h"
#include "sandbox/host/cgroup.h"

#define KIB 1024ull
#define MIB (1024ull * KIB)
#define GIB (1024ull * MIB)

struct limit_def {
	const char *name;
	size_t off;
	uint64_t def;
	uint64_t min;
	uint64_t ceiling;
	const char *enforced_by;
	unsigned cgroup;       /* the SBX_CG_* controller that can enforce it */
	const char *by_cgroup; /* the enforcer when that controller did */
};

#define L(field) offsetof(struct sbx_limits, field)
static const struct limit_def defs[] = {
    {"wallMs", L(wall_ms), 30000, 100, 3600000, "timer: the server kills the box", 0, NULL},
    {"cpuMs", L(cpu_ms), 30000, 1000, 3600000, "rlimit: RLIMIT_CPU (SIGXCPU, then SIGKILL)", 0,
     NULL},
    {"memoryBytes", L(memory_bytes), 1 * GIB, 16 * MIB, 64 * GIB,
     "rlimit: RLIMIT_DATA (per process), and RLIMIT_AS at memoryBytes + 512 MiB for python "
     "and bash (shared memory)",
     SBX_CG_MEMORY,
     "cgroup: memory.max (the whole box, its tmpfs included), and the rlimits per process"},
    {"processes", L(processes), 64, 2, 4096, "rlimit: RLIMIT_NPROC (per user namespace)",
     SBX_CG_PIDS, "cgroup: pids.max, and RLIMIT_NPROC"},
    {"fileSizeBytes", L(file_size_bytes), 64 * MIB, 1 * KIB, 16 * GIB, "rlimit: RLIMIT_FSIZE", 0,
     NULL},
    {"openFiles", L(open_files), 256, 16, 65536, "rlimit: RLIMIT_NOFILE", 0, NULL},
    {"tmpfsBytes", L(tmpfs_bytes), 64 * MIB, 1 * MIB, 16 * GIB,
     "tmpfs size= of /work and of /tmp, each", 0, NULL},
    {"outputBytes", L(output_bytes), 10 * MIB, 1 * KIB, 1 * GIB,
     "server: output cut with a marker, the box killed", 0, NULL},
    {"cpuCores", L(cpu_cores), 2, 1, 256,
     "not enforced: no cgroup v2 cpu controller was delegated to kiln", SBX_CG_CPU,
     "cgroup: cpu.max (cores of CPU time per 100 ms)"},
};
#undef L

static uint64_t *field(struct sbx_limits *l, const struct limit_def *d)
{
	return (uint64_t *)((char *)l + d->off);
}

static const struct limit_def *find(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(defs); i++)
		if (strcmp(defs[i].name, name) == 0)
			return &defs[i];
	return NULL;
}

static int read_value(json_object *v, const char *where, const char *key, uint64_t *ret, char *err,
                      size_t errsz)
{
	if (!json_object_is_type(v, json_type_int)) {
		snprintf(err, errsz, "%s.%s must be a positive integer", where, key);
		return -EINVAL;
	}
	int64_t n = json_object_get_int64(v);
	if (n <= 0) {
		snprintf(err, errsz, "%s.%s must be a positive integer", where, key);
		return -EINVAL;
	}
	*ret = (uint64_t)n;
	return 0;
}

/* Lay obj's members over vals (config or request). */
static int overlay(json_object *obj, const char *where, uint64_t *vals, const uint64_t *ceil,
                   char *err, size_t errsz)
{
	if (!obj)
		return 0;
	if (!json_object_is_type(obj, json_type_object)) {
		snprintf(err, errsz, "%s must be an object", where);
		return -EINVAL;
	}
	json_object_object_foreach(obj, key, v)
	{
		const struct limit_def *d = find(key);
		if (!d) {
			snprintf(
			    err, errsz,
			    "%s.%s is not a limit (known: wallMs, cpuMs, memoryBytes, processes, "
			    "fileSizeBytes, openFiles, tmpfsBytes, outputBytes, cpuCores)",
			    where, key);
			return -EINVAL;
		}
		size_t i = (size_t)(d - defs);
		uint64_t n;
		int r = read_value(v, where, key, &n, err, errsz);
		if (r < 0)
			return r;
		if (n < d->min || (ceil && n > ceil[i])) {
			snprintf(err, errsz, "%s.%s = %llu is out of range [%llu, %llu]", where,
			         key, (unsigned long long)n, (unsigned long long)d->min,
			         (unsigned long long)(ceil ? ceil[i] : n));
			return -EINVAL;
		}
		vals[i] = n;
	}
	return 0;
}

int sbx_limits_resolve(json_object *section, json_object *request, struct sbx_limits *ret,
                       char *err, size_t errsz)
{
	uint64_t vals[ARRAY_SIZE(defs)], ceil[ARRAY_SIZE(defs)];
	for (size_t i = 0; i < ARRAY_SIZE(defs); i++) {
		vals[i] = defs[i].def;
		ceil[i] = defs[i].ceiling;
	}
	int r =
	    overlay(json_get(section, "maxLimits"), "sandbox.maxLimits", ceil, NULL, err, errsz);
	if (r < 0)
		return r;
	r = overlay(json_get(section, "limits"), "sandbox.limits", vals, ceil, err, errsz);
	if (r < 0)
		return r;
	r = overlay(request, "limits", vals, ceil, err, errsz);
	if (r < 0)
		return r;
	struct sbx_limits l;
	for (size_t i = 0; i < ARRAY_SIZE(defs); i++)
		*field(&l, &defs[i]) = vals[i];
	*ret = l;
	return 0;
}

size_t sbx_limit_info(const struct sbx_limits *l, unsigned cgroup, size_t i, struct sbx_limit *ret)
{
	if (i >= ARRAY_SIZE(defs))
		return 0;
	ret->name = defs[i].name;
	ret->value = *field((struct sbx_limits *)l, &defs[i]);
	ret->enforced_by = defs[i].cgroup & cgroup ? defs[i].by_cgroup : defs[i].enforced_by;
	return ARRAY_SIZE(defs);
}
