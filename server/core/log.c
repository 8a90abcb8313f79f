/* log.c: the logger behind log.h; one line per record, prefixed with the
 * level, written with a single write(2) so lines from a crash are whole. */
#include "core/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static enum log_level current_level = LOG_WARN;
static int log_fd = 2;

static const char *const level_names[] = {
    [LOG_ERROR] = "error",
    [LOG_WARN] = "warn",
    [LOG_INFO] = "info",
    [LOG_DEBUG] = "debug",
};

int log_level_parse(const char *name, enum log_level *ret_level)
{
	for (unsigned i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
		if (strcmp(name, level_names[i]) == 0) {
			*ret_level = (enum log_level)i;
			return 0;
		}
	}
	return -EINVAL;
}

void log_set_level(enum log_level level)
{
	current_level = level;
}

enum log_level log_get_level(void)
{
	return current_level;
}

int log_open_file(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (log_fd > 2)
		close(log_fd);
	log_fd = fd;
	return 0;
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	if (level > current_level)
		return;
	int saved = errno;
	char line[4096];
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	struct tm tm;
	gmtime_r(&ts.tv_sec, &tm);
	int n = snprintf(line, sizeof(line), "kiln %02d:%02d:%02d.%03ld %s: ", tm.tm_hour,
	                 tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000, level_names[level]);
	va_list ap;
	va_start(ap, fmt);
	int m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
	if (len > sizeof(line) - 2)
		len = sizeof(line) - 2;
	line[len++] = '\n';
	ssize_t w = write(log_fd, line, len);
	(void)w;
	errno = saved;
}
