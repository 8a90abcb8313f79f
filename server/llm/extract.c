/* extract.c: finding the code in a model's answer (see llm_extract_code in
 * llm.h). Models wrap code in Markdown fences most of the time, but not
 * always the way they were asked: a tag or none, prose before and after,
 * several blocks, an output block, a fence cut off by a length limit, a
 * reasoning section first. The rules here follow CommonMark's fences. */
#include "llm/llm.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/buf.h"
#include "core/lang.h"
#include "core/position.h"
#include "core/util.h"

/* Extraction never needs more than the answer itself. */
#define EXTRACT_MAX (16u << 20)

/* Fence tags of languages kiln does not run and of a run's output: blocks
 * so tagged are not the code asked for. The languages kiln runs, with
 * their aliases, come from the registry (core/lang.h), never from here. */
static const struct {
	const char *tag, *canon;
} other_tags[] = {
    {"typescript", "typescript"},
    {"ts", "typescript"},
    {"c", "c"},
    {"cpp", "cpp"},
    {"c++", "cpp"},
    {"go", "go"},
    {"rust", "rust"},
    {"ruby", "ruby"},
    {"lua", "lua"},
    {"sql", "sql"},
    {"r", "r"},
    {"zsh", "zsh"},
    /* What models tag a run's output or a transcript with. */
    {"text", "output"},
    {"output", "output"},
    {"console", "output"},
    {"plaintext", "output"},
    {"txt", "output"},
    {"json", "output"},
    {"csv", "output"},
};

const char *llm_language_canonical(const char *tag)
{
	if (!tag)
		return NULL;
	const struct lang *l = lang_find(tag);
	if (l)
		return l->name;
	for (size_t i = 0; i < ARRAY_SIZE(other_tags); i++)
		if (strcasecmp(tag, other_tags[i].tag) == 0)
			return other_tags[i].canon;
	return NULL;
}

void llm_code_release(struct llm_code *c)
{
	free(c->code);
	free(c->lang);
	free(c->prose);
	*c = (struct llm_code){0};
}

struct block {
	char tag[32];
	const char *start, *end; /* the content, between the fences */
};

/* A fence line: up to three spaces, then three or more ` or ~. Returns the
 * fence length and writes its char, or 0. */
static size_t fence(const char *line, const char *eol, char *ret_ch)
{
	const char *p = line;
	for (int i = 0; i < 3 && p < eol && *p == ' '; i++)
		p++;
	if (p >= eol || (*p != '`' && *p != '~'))
		return 0;
	char ch = *p;
	size_t n = 0;
	while (p + n < eol && p[n] == ch)
		n++;
	if (n < 3)
		return 0;
	*ret_ch = ch;
	return n;
}

static bool blank_after(const char *p, const char *eol)
{
	for (; p < eol; p++)
		if (!isspace((unsigned char)*p))
			return false;
	return true;
}

/* Whether a line without fences around it reads as code rather than as a
 * sentence: code punctuation, a keyword start, or indentation. */
static bool code_line(const char *l, const char *eol)
{
	static const char *const starts[] = {"#",      "import ", "from ", "def ",     "class ",
	                                     "return", "echo ",   "//",    "for ",     "while ",
	                                     "if ",    "print",   "let ",  "const ",   "var ",
	                                     "fn ",    "export ", "set -", "function "};
	if (l < eol && (*l == ' ' || *l == '\t'))
		return true;
	for (size_t i = 0; i < ARRAY_SIZE(starts); i++) {
		size_t n = strlen(starts[i]);
		if ((size_t)(eol - l) >= n && memcmp(l, starts[i], n) == 0)
			return true;
	}
	for (const char *p = l; p < eol; p++)
		if (strchr("(){}[]=;$<>|", *p))
			return true;
	return false;
}

/* Trim blank lines at both ends and make the code end with one newline. */
static int finish_code(struct buf *code, char **ret)
{
	char *s = code->data ? code->data : "";
	size_t n = code->len;
	while (n && isspace((unsigned char)s[n - 1]))
		n--;
	size_t start = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '\n')
			start = i + 1;
		else if (!isspace((unsigned char)s[i]))
			break;
	}
	if (start >= n)
		return -ENOENT;
	char *out = malloc(n - start + 2);
	if (!out)
		return -ENOMEM;
	memcpy(out, s + start, n - start);
	out[n - start] = '\n';
	out[n - start + 1] = '\0';
	*ret = out;
	return 0;
}

/* "Here is the code:" means nothing once the code is taken out of the
 * prose: drop the last line before a fence when it ends with a colon. */
static void drop_lead_in(struct buf *prose)
{
	size_t n = prose->len;
	while (n && isspace((unsigned char)prose->data[n - 1]))
		n--;
	if (!n || prose->data[n - 1] != ':')
		return;
	size_t start = n;
	while (start && prose->data[start - 1] != '\n')
		start--;
	prose->len = start;
	prose->data[start] = '\0';
}

/* Trim the ends and squeeze runs of blank lines into one. */
static char *trimmed(const char *s, size_t n)
{
	while (n && isspace((unsigned char)*s))
		s++, n--;
	while (n && isspace((unsigned char)s[n - 1]))
		n--;
	if (!n)
		return NULL;
	char *out = malloc(n + 1);
	if (!out)
		return NULL;
	size_t w = 0, newlines = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '\n') {
			if (++newlines > 2)
				continue;
		} else if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r') {
			newlines = 0;
		}
		out[w++] = s[i];
	}
	out[w] = '\0';
	return out;
}

int llm_extract_code(const char *text, size_t len, const char *language, struct llm_code *ret)
{
	if (len > EXTRACT_MAX)
		len = EXTRACT_MAX;
	const char *end = text + len;
	const char *p = text;
	/* Reasoning models think aloud first; none of that is the answer. */
	const char *think = memmem(p, len, "<think>", 7);
	if (think && blank_after(p, think)) {
		const char *close = memmem(think, (size_t)(end - think), "</think>", 8);
		if (!close)
			return -ENOENT;
		p = close + 8;
	}

	struct block blocks[64];
	size_t nblocks = 0;
	bool truncated = false;
	struct buf prose;
	buf_init(&prose, EXTRACT_MAX);
	const char *content = NULL;
	char open_ch = 0;
	size_t open_n = 0;
	char tag[32] = "";
	const char *body_start = p;
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		const char *next = eol ? eol + 1 : end;
		if (!eol)
			eol = end;
		char ch;
		size_t n = fence(p, eol, &ch);
		if (!content) {
			if (n) {
				const char *t = p;
				while (*t == ' ')
					t++;
				t += n;
				while (t < eol && isspace((unsigned char)*t))
					t++;
				size_t tl = 0;
				while (t + tl < eol && !isspace((unsigned char)t[tl]) &&
				       t[tl] != '`' && t[tl] != '{')
					tl++;
				/* A backtick fence's info may not hold a backtick
				 * (CommonMark): "```x```" is inline code. */
				if (ch == '`' && memchr(t + tl, '`', (size_t)(eol - t - tl))) {
					buf_append(&prose, p, (size_t)(next - p));
					p = next;
					continue;
				}
				/* Cut a long tag on a character boundary: it
				 * goes to the client as a JSON string. */
				size_t keep = tl < 31 ? tl : utf8_complete_prefix(t, 31);
				snprintf(tag, sizeof(tag), "%.*s", (int)keep, t);
				drop_lead_in(&prose);
				open_ch = ch;
				open_n = n;
				content = next;
			} else if (buf_append(&prose, p, (size_t)(next - p)) < 0) {
				break;
			}
		} else if (n && ch == open_ch && n >= open_n &&
		           blank_after(p + n + (size_t)(strspn(p, " ")), eol)) {
			if (nblocks < ARRAY_SIZE(blocks)) {
				struct block *b = &blocks[nblocks++];
				snprintf(b->tag, sizeof(b->tag), "%s", tag);
				b->start = content;
				b->end = p;
			}
			content = NULL;
		}
		p = next;
	}
	if (content && nblocks < ARRAY_SIZE(blocks)) {
		/* Cut off by a length limit: the code so far is the code. */
		struct block *b = &blocks[nblocks++];
		snprintf(b->tag, sizeof(b->tag), "%s", tag);
		b->start = content;
		b->end = end;
		truncated = true;
	}

	struct llm_code c = {.truncated = truncated};
	struct buf code;
	buf_init(&code, EXTRACT_MAX);
	int r;
	if (nblocks == 0) {
		/* No fences: all of it is code, or none of it is. */
		size_t lines = 0, codeish = 0;
		for (const char *l = body_start; l < end;) {
			const char *eol = memchr(l, '\n', (size_t)(end - l));
			if (!eol)
				eol = end;
			if (!blank_after(l, eol)) {
				lines++;
				codeish += code_line(l, eol);
			}
			l = eol + 1;
		}
		if (lines == 0 || codeish * 2 < lines) {
			r = -ENOENT;
			goto out;
		}
		r = buf_append(&code, body_start, (size_t)(end - body_start));
		if (r < 0)
			goto out;
		buf_reset(&prose);
	} else {
		const char *want = llm_language_canonical(language);
		if (!want && language)
			want = language;
		/* Preference: blocks tagged as the language, then untagged
		 * blocks, then anything that is not output, then anything. */
		for (int pass = 0; pass < 4 && !code.len; pass++) {
			for (size_t i = 0; i < nblocks; i++) {
				const char *canon = llm_language_canonical(blocks[i].tag);
				bool take = pass == 0   ? want && canon && strcmp(canon, want) == 0
				            : pass == 1 ? !blocks[i].tag[0]
				            : pass == 2 ? !canon || strcmp(canon, "output") != 0
				                        : true;
				if (!take || blank_after(blocks[i].start, blocks[i].end))
					continue;
				if (code.len && buf_append(&code, "\n", 1) < 0)
					goto oom;
				if (buf_append(&code, blocks[i].start,
				               (size_t)(blocks[i].end - blocks[i].start)) < 0)
					goto oom;
				if (!c.lang && blocks[i].tag[0] &&
				    !(c.lang = strdup(blocks[i].tag)))
					goto oom;
				c.blocks++;
				/* Only the first untagged or foreign block is
				 * taken; tagged ones are all parts of one
				 * program. */
				if (pass >= 2)
					break;
			}
		}
	}
	r = finish_code(&code, &c.code);
	if (r < 0)
		goto out;
	c.prose = prose.len ? trimmed(prose.data, prose.len) : NULL;
	*ret = c;
	c = (struct llm_code){0};
	r = 0;
	goto out;
oom:
	r = -ENOMEM;
out:
	llm_code_release(&c);
	buf_release(&code);
	buf_release(&prose);
	return r;
}
