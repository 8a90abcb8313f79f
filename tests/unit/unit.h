/* unit.h: what every unit test executable shares: a main() that runs one
 * check suite and prints check's summary line, and small helpers for
 * reading framed replies from a pipe. Header-only: each test is its own
 * executable linked with libkiln.a. */
#pragma once

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "rpc/frame.h"

/* UNIT_MAIN(make_suite): run the suite with check's normal output, whose
 * last line is "NN%: Checks: N, Failures: N, Errors: N"; exit 1 when any
 * test failed. */
#define UNIT_MAIN(make_suite)                                                                      \
	int main(void)                                                                             \
	{                                                                                          \
		/* The code under test logs each refusal; UNIT_VERBOSE=1 shows it. */              \
		if (!getenv("UNIT_VERBOSE"))                                                       \
			log_set_level(LOG_ERROR);                                                  \
		SRunner *sr = srunner_create(make_suite());                                        \
		srunner_run_all(sr, CK_NORMAL);                                                    \
		int failed = srunner_ntests_failed(sr);                                            \
		srunner_free(sr);                                                                  \
		return failed ? EXIT_FAILURE : EXIT_SUCCESS;                                       \
	}

/* Collects the bodies a frame reader delivers (unit_frames_feed). */
struct unit_frames {
	json_object *msgs[64];
	int nmsgs;
	int errors[64];
	int nerrors;
	char last_error[200];
};

static inline void unit_frames_on_message(void *data, char *body, size_t len)
{
	struct unit_frames *f = data;
	ck_assert_int_lt(f->nmsgs, 64);
	/* The body is len bytes, not a C string: a frame whose JSON ends
	 * before len (a NUL, trailing bytes) is not a message; it is kept as
	 * NULL, which no test's expectation matches. */
	json_tokener *tok = json_tokener_new();
	ck_assert_ptr_nonnull(tok);
	json_object *o = len ? json_tokener_parse_ex(tok, body, (int)len) : NULL;
	if (o && (json_tokener_get_error(tok) != json_tokener_success ||
	          json_tokener_get_parse_end(tok) != len)) {
		json_object_put(o);
		o = NULL;
	}
	json_tokener_free(tok);
	f->msgs[f->nmsgs++] = o;
}

static inline void unit_frames_on_error(void *data, enum frame_error err, const char *detail)
{
	struct unit_frames *f = data;
	ck_assert_int_lt(f->nerrors, 64);
	f->errors[f->nerrors++] = (int)err;
	snprintf(f->last_error, sizeof(f->last_error), "%s", detail);
}

static const struct frame_callbacks unit_frames_cbs = {
    .message = unit_frames_on_message,
    .error = unit_frames_on_error,
};

static inline void unit_frames_release(struct unit_frames *f)
{
	for (int i = 0; i < f->nmsgs; i++)
		json_object_put(f->msgs[i]);
	memset(f, 0, sizeof(*f));
}

/* Read whatever framed messages are waiting on fd (non-blocking after a
 * wait of up to wait_ms for the first byte) into f. */
static inline void unit_read_frames(int fd, int wait_ms, struct unit_frames *f)
{
	struct frame_reader fr;
	frame_reader_init(&fr, 64u << 20);
	int fl = fcntl(fd, F_GETFL);
	fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	struct pollfd p = {.fd = fd, .events = POLLIN};
	if (poll(&p, 1, wait_ms) > 0) {
		char chunk[65536];
		for (;;) {
			ssize_t n = read(fd, chunk, sizeof(chunk));
			if (n <= 0)
				break;
			ck_assert_int_eq(
			    frame_reader_feed(&fr, chunk, (size_t)n, &unit_frames_cbs, f), 0);
		}
	}
	fcntl(fd, F_SETFL, fl);
	ck_assert_msg(frame_reader_idle(&fr), "a partial frame was left on the pipe");
	frame_reader_release(&fr);
}

/* The integer at a dotted path of o, or a sentinel when absent. */
static inline long long unit_int_at(json_object *o, const char *path)
{
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", path);
	json_object *cur = o;
	for (char *save = NULL, *k = strtok_r(buf, ".", &save); k; k = strtok_r(NULL, ".", &save)) {
		if (!json_object_object_get_ex(cur, k, &cur))
			return -999999;
	}
	return json_object_get_int64(cur);
}
