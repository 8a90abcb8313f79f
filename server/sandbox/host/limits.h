/* limits.h: the limits a run gets. Built-in defaults, the config's
 * "sandbox.limits" laid over them, then the request's "limits"; every
 * value is checked against a ceiling ("sandbox.maxLimits" may change it).
 * Each limit also names the mechanism that enforces it. */
#pragma once

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

struct sbx_limits {
	uint64_t wall_ms;
	uint64_t cpu_ms;
	uint64_t memory_bytes;
	uint64_t processes;
	uint64_t file_size_bytes;
	uint64_t open_files;
	uint64_t tmpfs_bytes;
	uint64_t output_bytes;
	uint64_t cpu_cores;
};

/* section: the config's "sandbox" object (borrowed, may be NULL);
 * request: the request's limits (borrowed, may be NULL). -EINVAL with a
 * sentence in err for an unknown key, a wrong type or a value out of range. */
int sbx_limits_resolve(json_object *section, json_object *request, struct sbx_limits *ret,
                       char *err, size_t errsz);

/* One limit as a run applied it. */
struct sbx_limit {
	const char *name; /* as in the config and requests: "wallMs", ... */
	uint64_t value;
	const char *enforced_by; /* the mechanism, in words */
};

/* The i-th limit of l into ret, and how many there are (0 when i is past
 * the last). cgroup: the SBX_CG_* controllers (cgroup.h) whose limit the
 * run's cgroup took, 0 without one: they change what enforces
 * memoryBytes, processes and cpuCores. */
size_t sbx_limit_info(const struct sbx_limits *l, unsigned cgroup, size_t i, struct sbx_limit *ret);
