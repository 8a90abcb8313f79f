/* record.c: --record, a live session written as a transcript (see
 * record.h and docs/transcripts.md for the format). */
#include "replay/record.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/json.h"
#include "core/loop.h"
#include "rpc/message.h"
#include "rpc/peer.h"

struct record {
	FILE *f;
	uint64_t start_ms;
};

/* Members whose values change from run to run: recorded as placeholders
 * so the transcript replays. */
static const char *const volatile_keys[] = {
    "durationMs", "cpuMs", "maxRssKb",  "runId",   "proposalId", "version",
    "pid",        "token", "timestamp", "warmBox", "zygote",
};

/* Members whose whole value, null or object included, depends on the
 * machine: a run's cgroup (null where none is writable). */
static const char *const machine_keys[] = {"cgroup"};

/* Members that must never reach a file. */
static int is_secret(const char *key)
{
	static const char *const words[] = {"apikey", "api_key",      "authorization", "password",
	                                    "secret", "token_secret", "bearer"};
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (strcasestr(key, words[i]))
			return 1;
	return 0;
}

static int is_volatile(const char *key)
{
	for (size_t i = 0; i < sizeof(volatile_keys) / sizeof(volatile_keys[0]); i++)
		if (strcmp(key, volatile_keys[i]) == 0)
			return 1;
	return 0;
}

static int is_machine(const char *key)
{
	for (size_t i = 0; i < sizeof(machine_keys) / sizeof(machine_keys[0]); i++)
		if (strcmp(key, machine_keys[i]) == 0)
			return 1;
	return 0;
}

static void scrub(json_object *obj, int outgoing)
{
	if (json_object_is_type(obj, json_type_array)) {
		size_t n = json_object_array_length(obj);
		for (size_t i = 0; i < n; i++)
			scrub(json_object_array_get_idx(obj, i), outgoing);
		return;
	}
	if (!json_object_is_type(obj, json_type_object))
		return;
	json_object_object_foreach(obj, key, val)
	{
		if (is_secret(key)) {
			json_object_object_add(obj, key, json_object_new_string("{{redacted}}"));
		} else if (outgoing && is_machine(key)) {
			json_object_object_add(obj, key, json_object_new_string("{{any}}"));
		} else if (outgoing && is_volatile(key) && val &&
		           !json_object_is_type(val, json_type_object)) {
			const char *ph =
			    json_object_is_type(val, json_type_string) ? "{{string}}" : "{{any}}";
			json_object_object_add(obj, key, json_object_new_string(ph));
		} else {
			scrub(val, outgoing);
		}
	}
}

static void tap(void *data, bool outgoing, const char *text, size_t len)
{
	struct record *rec = data;
	json_object *obj = NULL;
	char detail[128];
	fprintf(rec->f, "# +%llu ms\n", (unsigned long long)(loop_now_ms() - rec->start_ms));
	if (rpc_parse(text, len, &obj, detail, sizeof(detail)) < 0) {
		/* Not JSON: keep it byte for byte, escaped. */
		fputs("-->raw ", rec->f);
		for (size_t i = 0; i < len; i++) {
			unsigned char c = (unsigned char)text[i];
			if (c == '\\')
				fputs("\\\\", rec->f);
			else if (c >= 0x20 && c < 0x7f)
				fputc(c, rec->f);
			else
				fprintf(rec->f, "\\x%02x", c);
		}
		fputc('\n', rec->f);
		fflush(rec->f);
		return;
	}
	scrub(obj, outgoing);
	fprintf(rec->f, "%s %s\n", outgoing ? "<--" : "-->", obj ? json_compact(obj) : "null");
	fflush(rec->f);
	json_object_put(obj);
}

int record_open(const char *path, struct rpc_peer *peer, struct record **ret_rec)
{
	struct record *rec = calloc(1, sizeof(*rec));
	if (!rec)
		return -ENOMEM;
	rec->f = fopen(path, "we");
	if (!rec->f) {
		int e = errno;
		free(rec);
		return -e;
	}
	rec->start_ms = loop_now_ms();
	fprintf(rec->f,
	        "# Recorded by kiln --record. Replay with: kiln replay %s\n"
	        "# Volatile values are {{placeholders}}; secrets are {{redacted}}.\n",
	        path);
	fflush(rec->f);
	rpc_peer_set_tap(peer, tap, rec);
	*ret_rec = rec;
	return 0;
}

void record_close(struct record *rec)
{
	if (!rec)
		return;
	fclose(rec->f);
	free(rec);
}
