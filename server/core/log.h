/* log.h: leveled logging to stderr or a log file. Never to the protocol
 * stream: main() points fd 1 at stderr before anything can log. */
#pragma once

#include <stdarg.h>

enum log_level {
	LOG_ERROR,
	LOG_WARN,
	LOG_INFO,
	LOG_DEBUG,
};

/* Parse "error", "warn", "info" or "debug"; -EINVAL otherwise. */
int log_level_parse(const char *name, enum log_level *ret_level);

void log_set_level(enum log_level level);
enum log_level log_get_level(void);

/* Append logs to path instead of stderr. Returns -errno on failure. */
int log_open_file(const char *path);

void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_WARN, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)
