/* out_json.h: the JSON parser of the output bench's client
 * (sandbox_out.c): a complete, validating parser (RFC 8259: every value,
 * escape and number is checked; \u escapes and surrogate pairs are
 * decoded) that keeps only what a client of run/output keeps. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* What a client keeps of a message: method, id, error, params.text,
 * result.cpuMs and result.zygote. text points into the message's body, where it was
 * decoded. */
struct msg {
	char method[64];
	long long id;
	long long cpu_ms; /* result.cpuMs of snippet/run's reply, or -1 */
	int zygote;       /* result.zygote: 1 true, 0 false, -1 absent */
	bool has_id, has_error, has_text;
	const char *text;
	size_t text_len;
};

/* How strings are scanned: "avx2", "sse2" or "swar"; NULL for the best
 * this CPU has. Call it before the first parse. */
void out_json_choose_scan(const char *want);

/* Parse a whole message body into m; its strings are decoded in place,
 * so m's text points into body. A malformed message ends the process
 * (exit 1) with what was wrong. */
void out_json_parse(char *body, size_t len, struct msg *m);

/* The parser's self-test: every escape decoded, every malformed message
 * refused, with each way of scanning; 0 when all passed. */
int out_json_self_test(void);
