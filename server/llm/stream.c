/* stream.c: a streamed body as lines for a provider's parser (see
 * stream.h). */
#include "llm/stream.h"

#include <string.h>

int llm_stream_lines(const struct llm_ops *ops, struct llm_stream *s, struct buf *line)
{
	char *p = line->data;
	size_t left = line->len;
	char *nl;
	while (left && (nl = memchr(p, '\n', left))) {
		size_t n = (size_t)(nl - p);
		if (ops->stream_line(s, p, n) < 0)
			return -1;
		left -= n + 1;
		p = nl + 1;
	}
	buf_consume(line, line->len - left);
	return 0;
}

int llm_stream_end(const struct llm_ops *ops, struct llm_stream *s, struct buf *line)
{
	int r = 0;
	if (line->len)
		r = ops->stream_line(s, line->data, line->len);
	if (r == 0)
		r = ops->stream_line(s, "", 0);
	return r;
}
