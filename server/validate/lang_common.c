/* lang_common.c: what the language files share: string unescaping, the
 * walks over the checked tree, and the table of names the snippet binds. */
#include "validate/lang_common.h"

#include <stdlib.h>

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

bool val_unescape(char *out, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (c != '\\' || i + 1 >= n) {
			if (!val_cat(out, &c, 1))
				return false;
			continue;
		}
		char e = s[++i];
		char ch = 0;
		int digits = 0;
		switch (e) {
		case 'n':
			ch = '\n';
			break;
		case 't':
			ch = '\t';
			break;
		case 'r':
			ch = '\r';
			break;
		case '\\':
		case '\'':
		case '"':
		case '`':
			ch = e;
			break;
		case '\n':
			continue; /* line continuation */
		case 'x':
			digits = 2;
			break;
		case 'u':
			if (i + 1 < n && s[i + 1] == '{') {
				/* JavaScript's \u{X...}: up to six digits. */
				size_t j = i + 2;
				int v = 0, k = 0;
				while (j < n && k < 6 && hexval(s[j]) >= 0)
					v = v * 16 + hexval(s[j++]), k++;
				if (!k || j >= n || s[j] != '}' || v >= 0x80)
					return false;
				i = j;
				ch = (char)v;
				break;
			}
			digits = 4;
			break;
		default:
			if (e >= '0' && e <= '7') {
				int v = 0, k = 0;
				while (k < 3 && i < n && s[i] >= '0' && s[i] <= '7')
					v = v * 8 + (s[i++] - '0'), k++;
				i--;
				ch = (char)v;
				break;
			}
			/* Unknown escape: keep both characters. */
			if (!val_cat(out, s + i - 1, 2))
				return false;
			continue;
		}
		if (digits) {
			int v = 0;
			if (i + (size_t)digits >= n)
				return false;
			for (int k = 1; k <= digits; k++) {
				int h = hexval(s[i + (size_t)k]);
				if (h < 0)
					return false;
				v = v * 16 + h;
			}
			if (v >= 0x80)
				return false; /* not a name character we compare */
			i += (size_t)digits;
			ch = (char)v;
		}
		if (!val_cat(out, &ch, 1))
			return false;
	}
	return true;
}

void val_walk_if(struct val_doc *d, bool (*visit)(struct val_doc *d, TSNode n))
{
	const struct val_flat *f = d->flat;
	for (uint32_t i = 0; i < f->count;)
		i = visit(d, f->n[i].node) ? i + 1 : f->n[i].end;
}

void val_walk(struct val_doc *d, void (*visit)(struct val_doc *d, TSNode n))
{
	const struct val_flat *f = d->flat;
	for (uint32_t i = 0; i < f->count; i++)
		visit(d, f->n[i].node);
}

/* The name's hash (FNV-1a): a lookup compares it before the name, since
 * name resolution asks for every identifier of every call the rules look
 * at, against every name the snippet binds. */
static uint32_t alias_hash(const char *name)
{
	uint32_t h = 2166136261u;
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 16777619u;
	return h;
}

void val_alias_set(struct val_doc *d, const char *name, const char *target, bool module)
{
	uint32_t h = alias_hash(name);
	for (size_t i = 0; i < d->naliases; i++)
		if (d->aliases[i].hash == h && strcmp(d->aliases[i].name, name) == 0) {
			char *t = strdup(target);
			if (!t)
				return;
			free(d->aliases[i].target);
			d->aliases[i].target = t;
			d->aliases[i].module = module;
			return;
		}
	if (d->naliases == d->caliases) {
		size_t c = d->caliases ? d->caliases * 2 : 16;
		struct val_alias *a = realloc(d->aliases, c * sizeof(*a));
		if (!a)
			return;
		d->aliases = a;
		d->caliases = c;
	}
	char *n = strdup(name), *t = strdup(target);
	if (!n || !t) {
		free(n);
		free(t);
		return;
	}
	d->aliases[d->naliases++] = (struct val_alias){n, t, module, h};
}

const struct val_alias *val_alias_get(struct val_doc *d, const char *name)
{
	uint32_t h = alias_hash(name);
	for (size_t i = 0; i < d->naliases; i++)
		if (d->aliases[i].hash == h && strcmp(d->aliases[i].name, name) == 0)
			return &d->aliases[i];
	return NULL;
}
