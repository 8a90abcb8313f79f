/* audit.c: the audit log: one JSON line per proposal, approval, run and
 * repair, in $XDG_STATE_HOME/kiln/audit.jsonl (else
 * ~/.local/state/kiln/audit.jsonl, or intent.auditLog in the config; false
 * turns it off). Each record is one write(2) to an O_APPEND file: once
 * write returns, a crash of kiln cannot lose the record, and concurrent
 * kiln processes never interleave inside a line. */
#include "intent/intent.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "core/json.h"
#include "core/log.h"
#include "intent/internal.h"
#include "kiln.h"

static int mkdir_p(char *path)
{
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		int r = mkdir(path, 0700);
		*p = '/';
		if (r < 0 && errno != EEXIST)
			return -errno;
	}
	return 0;
}

static int audit_path(struct intent *in, char *out, size_t n)
{
	json_object *sec = config_section(in->k->config, "intent");
	json_object *v = json_get(sec, "auditLog");
	if (v && json_object_is_type(v, json_type_boolean) && !json_object_get_boolean(v))
		return -ECANCELED;
	const char *path;
	if (json_get_string(sec, "auditLog", &path) == 0 && path[0]) {
		snprintf(out, n, "%s", path);
		return 0;
	}
	const char *state = getenv("XDG_STATE_HOME");
	const char *home = getenv("HOME");
	int w;
	if (state && state[0] == '/')
		w = snprintf(out, n, "%s/kiln/audit.jsonl", state);
	else if (home && home[0] == '/')
		w = snprintf(out, n, "%s/.local/state/kiln/audit.jsonl", home);
	else
		return -ENOENT;
	return w < 0 || (size_t)w >= n ? -ENAMETOOLONG : 0;
}

static int audit_open(struct intent *in)
{
	if (in->audit_fd >= 0)
		return 0;
	if (in->audit_failed || in->audit_disabled)
		return -EIO;
	char path[4096];
	int r = audit_path(in, path, sizeof(path));
	if (r == -ECANCELED) {
		in->audit_disabled = true;
		return r;
	}
	if (r >= 0)
		r = mkdir_p(path);
	if (r >= 0) {
		in->audit_fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
		if (in->audit_fd < 0)
			r = -errno;
	}
	if (r < 0) {
		in->audit_failed = true;
		log_warn("audit log %s cannot be opened (%s); proposals and runs are not audited",
		         path, strerror(-r));
		return r;
	}
	return 0;
}

void intent_audit(struct intent *in, const char *event, json_object *rec)
{
	if (audit_open(in) < 0)
		return;
	_cleanup_json_ json_object *line = json_object_new_object();
	char ts[64];
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	struct tm tm;
	gmtime_r(&now.tv_sec, &tm);
	size_t w = strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(ts + w, sizeof(ts) - w, ".%03ldZ", now.tv_nsec / 1000000);
	json_object_object_add(line, "time", json_object_new_string(ts));
	json_object_object_add(line, "event", json_object_new_string(event));
	json_object_object_add(line, "pid", json_object_new_int((int)getpid()));
	json_object_object_foreach(rec, key, val)
	{
		json_object_object_add(line, key, json_object_get(val));
	}
	const char *s = json_compact(line);
	size_t len = strlen(s);
	char *buf = malloc(len + 2);
	if (!buf)
		return;
	memcpy(buf, s, len);
	buf[len] = '\n';
	ssize_t n;
	do
		n = write(in->audit_fd, buf, len + 1);
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)(len + 1))
		log_warn("audit log write failed: %s", n < 0 ? strerror(errno) : "short write");
	free(buf);
}
