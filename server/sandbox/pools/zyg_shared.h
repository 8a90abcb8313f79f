/* zyg_shared.h: what zygote_wait.c (a request released, a run's
 * wait for the spare ended), zygote_spare.c (the spare, the next run's
 * box made ahead; the runs that wait for it; the zygote retired) and
 * zygote.c (the zygote's box, a run's request) share: the zygote, a
 * run's request to its spare, a run's wait, and the calls between
 * them, each file calling only those below it in that order. Not for
 * the rest of the server: zygote.h is the zygote's API. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "sandbox/box/box.h"
#include "sandbox/host/limits.h"

struct loop_timer;
struct sandbox;

struct sbx_zygote {
	struct sbx_box box; /* fds[0]: the channel */
	char *key;
	/* The workspace its runs have (the host folder), or NULL. Its box
	 * holds the folder read-only at SBX_ZYGOTE_WS_LOWER, covered in each
	 * run's box (zygote.py), whose overlay takes it as its lower layer. */
	char *ws;
	bool ready;
	/* The next run's box, asked for ahead (zyg_ask_spare): NULL, or on its
	 * way (pidfd -1 until its pid 1 reports), or waiting for its run. */
	struct sbx_box *spare;
	/* A spare owed since a session's run ended (sbx_zygote_session_idle):
	 * asked for once no run of a session has started for
	 * ZYGOTE_SESSION_QUIET_MS (ask_timer; NULL while a session's run is
	 * under way), or at once by a run or session that comes meanwhile
	 * (take). zyg_ask_spare clears both. */
	bool ask_later;
	struct loop_timer *ask_timer;
	/* The run that came while the spare was on its way, and waits for
	 * its pidfd (off the loop's critical path: see struct
	 * sbx_zygote_wait); NULL. One at a time: another run meanwhile takes
	 * the normal path. */
	struct sbx_zygote_wait *wait;
};

/* What a run sends its spare's pid 1, made when the run comes: the
 * request, the code (a memfd), and what the run's box keeps. */
struct zyg_req {
	json_object *req;
	int codefd;
	char *layout;
	struct sbx_limits lim;
	bool session; /* a session's: the channel is made when it is sent */
};

/* A run waiting for the spare's pidfd (zygote.h). Linked from the
 * zygote (z->wait) until the pidfd comes, the spare fails or the
 * deadline passes; then its failure, if any, is told from a timer of
 * its own (never from within another run's start that retired the
 * zygote). Owned by the caller until fn is called or it cancels. */
struct sbx_zygote_wait {
	struct sandbox *s;
	struct sbx_box *b;
	void (*fn)(void *data, int r); /* zygote.h's sbx_zygote_wait_fn */
	void *data;
	struct zyg_req q;
	struct loop_timer *timer; /* the deadline; then the failure's turn */
	int err;
	uint64_t since_ms;
};

/* zygote_wait.c: free what a request holds; tell the run that waited how
 * it went (r: the spare taken, or -errno: the normal path), and forget
 * the wait; the run that waits for the spare hears it is gone. */
void zyg_req_release(struct zyg_req *q);
void zyg_wait_done(struct sbx_zygote_wait *w, int r);
void zyg_wait_fail(struct sandbox *s, struct sbx_zygote *z, int err);

/* zygote_spare.c: retire the zygote (failed: it counts as a failure), its
 * spare dropped; drop the spare; ask the zygote for the next one; read
 * its pidfd (1, 0 or -errno); give it to a run (its request sent). */
void zyg_retire(struct sandbox *s, bool failed);
void zyg_drop_spare(struct sandbox *s, struct sbx_zygote *z);
void zyg_ask_spare(struct sandbox *s);
int zyg_spare_pidfd(struct sandbox *s, struct sbx_box *b);
int zyg_give_spare(struct sandbox *s, struct sbx_zygote *z, struct zyg_req *q, struct sbx_box *b);

/* zygote_spare.c: the run that waits takes the spare, whose pidfd came;
 * a run starts to wait for it (-EINPROGRESS). */
void zyg_hand_over(struct sandbox *s, struct sbx_zygote *z);
int zyg_wait_spare(struct sandbox *s, struct sbx_zygote *z, struct zyg_req *q, struct sbx_box *b,
                   void (*fn)(void *data, int r), void *data, struct sbx_zygote_wait **ret_wait);
