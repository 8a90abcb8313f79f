/* record.h: `kiln --record FILE`: every message of a live session, both
 * directions, written as a transcript that `kiln replay` can run. Volatile
 * values (durations, run ids, versions) become placeholders and secrets
 * (API keys, tokens, passwords) are redacted before anything is written. */
#pragma once

struct rpc_peer;
struct record;

/* Open path for writing and tap peer. -errno on failure. */
int record_open(const char *path, struct rpc_peer *peer, struct record **ret_rec);
/* Flush and close; NULL is a no-op. */
void record_close(struct record *rec);
