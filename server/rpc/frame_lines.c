/* frame_lines.c: newline-delimited JSON framing (see frame_lines.h). */
#include "rpc/frame_lines.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

void line_reader_init(struct line_reader *lr, size_t max_line)
{
	buf_init(&lr->line, max_line + 1);
	lr->max_line = max_line;
	lr->skipping = false;
}

void line_reader_release(struct line_reader *lr)
{
	buf_release(&lr->line);
}

static void deliver(struct line_reader *lr, const struct frame_callbacks *cb, void *cb_data)
{
	size_t len = lr->line.len;
	if (len > 0 && lr->line.data[len - 1] == '\r')
		len--;
	/* Blank lines between messages are allowed and carry nothing. */
	size_t i = 0;
	while (i < len && (lr->line.data[i] == ' ' || lr->line.data[i] == '\t'))
		i++;
	if (i < len) {
		lr->line.data[len] = '\0';
		cb->message(cb_data, lr->line.data, len);
	}
	buf_reset(&lr->line);
}

int line_reader_feed(struct line_reader *lr, const char *data, size_t n,
                     const struct frame_callbacks *cb, void *cb_data)
{
	while (n > 0) {
		const char *nl = memchr(data, '\n', n);
		size_t take = nl ? (size_t)(nl - data) : n;
		if (!lr->skipping) {
			if (lr->line.len + take > lr->max_line) {
				char detail[120];
				snprintf(detail, sizeof(detail),
				         "a message line longer than %zu bytes (skipped)",
				         lr->max_line);
				cb->error(cb_data, FRAME_ERR_TOO_LARGE, detail);
				buf_reset(&lr->line);
				lr->skipping = true;
			} else if (buf_append(&lr->line, data, take) < 0) {
				return -ENOMEM;
			}
		}
		if (!nl)
			return 0;
		if (lr->skipping)
			lr->skipping = false;
		else
			deliver(lr, cb, cb_data);
		data += take + 1;
		n -= take + 1;
	}
	return 0;
}

void line_reader_eof(struct line_reader *lr, const struct frame_callbacks *cb, void *cb_data)
{
	if (!lr->skipping && lr->line.len > 0)
		deliver(lr, cb, cb_data);
	lr->skipping = false;
	buf_reset(&lr->line);
}

int frame_encode_line(struct buf *out, const char *body, size_t len)
{
	if (memchr(body, '\n', len))
		return -EINVAL;
	int r = buf_append(out, body, len);
	if (r < 0)
		return r;
	return buf_append(out, "\n", 1);
}
