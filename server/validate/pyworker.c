/* pyworker.c: the real parsers as the authority on syntax. One persistent
 * python3 process (started on first use, reused, restarted after a
 * failure) compiles each Python snippet, or runs bash -n or node --check
 * on it, and answers the first syntax error with exact line and column. It runs in kiln's sandbox
 * (sandbox/box/worker.h), never outside it: when no box can be built, CPython is not used and the
 * caller falls back to tree-sitter, saying why. Each request is bounded
 * in time; a worker that does not answer in time is killed. */
#include "validate/internal.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "core/fdwait.h"
#include "core/loop.h"
#include "core/log.h"
#include "core/util.h"
#include "sandbox/sandbox.h"
#include "sandbox/box/worker.h"

/* The worker: read "LANG ARGV0 N\n" and N bytes of code, answer on one
 * line "ok", "err LINE COL ENDLINE ENDCOL EOF MESSAGE" or "fail WHY".
 * Lines are 0-based LSP lines (\n, \r\n and a lone \r end one), columns
 * UTF-8 byte columns or -1 when the parser gave none, EOF 1 when the error
 * is an unclosed construct at the end. Python is compile()d (never run):
 * the compiler also rejects what the grammar allows ('return' outside a
 * function). Before it, a coding declaration other than UTF-8 or ASCII
 * is refused as the runners refuse it (source_coding.py): compile() of
 * text would ignore it, but CPython reading the file would not. bash is
 * `bash -n` (bash names the line and the token), a child of the worker in
 * the same box reading the code on stdin. JavaScript is compiled as `node
 * --check` compiles it (in the CommonJS wrapper; code that only an ES
 * module may hold is compiled again as a module, as node does for a file)
 * by one persistent node, a child of the worker, since starting node
 * costs about 40 ms a check; a module with an error goes to `node --check
 * --input-type=module` for its position (line, and a caret in UTF-16
 * units). */
extern const char sbx_source_coding[]; /* sandbox/guest/source_coding.py */

static const char worker_src[] =
    "import json, os, re, select, subprocess, sys, warnings\n"
    "warnings.simplefilter('ignore')\n"
    "BREAK = re.compile(r'\\r\\n|\\r|\\n')\n"
    "ESM = ('Cannot use import statement outside a module', \"Unexpected token 'export'\",\n"
    "       'await is only valid in async functions and the top level bodies of modules',\n"
    "       \"Cannot use 'import.meta' outside a module\")\n"
    "def starts(src):\n"
    "    s = [0]\n"
    "    for m in BREAK.finditer(src):\n"
    "        s.append(m.end())\n"
    "    return s\n"
    "def at(src, ls, i):\n"
    "    # (LSP line, byte column) of character index i\n"
    "    lo, hi = 0, len(ls)\n"
    "    while hi - lo > 1:\n"
    "        mid = (lo + hi) // 2\n"
    "        if ls[mid] <= i: lo = mid\n"
    "        else: hi = mid\n"
    "    return lo, len(src[ls[lo]:i].encode('utf-8', 'surrogatepass'))\n"
    "def line_start(src, n, sep):\n"
    "    # character index where line n (1-based) starts, lines split at sep\n"
    "    i = 0\n"
    "    for _ in range(n - 1):\n"
    "        j = src.find(sep, i)\n"
    "        if j < 0: return len(src)\n"
    "        i = j + len(sep)\n"
    "    return i\n"
    "def python(src):\n"
    "    try:\n"
    "        _kiln_check_coding(src, '<snippet>')\n"
    "        compile(src, '<snippet>', 'exec', dont_inherit=True)\n"
    "        return 'ok'\n"
    "    except SyntaxError as e:\n"
    "        ls = starts(src)\n"
    "        ln = e.lineno or 1\n"
    "        el = getattr(e, 'end_lineno', None) or ln\n"
    "        def ci(l, c):\n"
    "            if l < 1 or l > len(ls) or c is None or c < 1: return -1\n"
    "            return min(ls[l - 1] + c - 1, len(src))\n"
    "        s, t = ci(ln, e.offset), ci(el, getattr(e, 'end_offset', None))\n"
    "        a = at(src, ls, s) if s >= 0 else (min(ln, len(ls)) - 1, -1)\n"
    "        b = at(src, ls, t) if t >= 0 else (a[0], -1)\n"
    "        return 'err %d %d %d %d 0 %s' % (a[0], a[1], b[0], b[1], e.msg)\n"
    "def bash(argv0, data, src):\n"
    "    p = subprocess.run([argv0, '-n', '/dev/stdin'], input=data, stdout=subprocess.DEVNULL,\n"
    "                       stderr=subprocess.PIPE)\n"
    "    if p.returncode == 0: return 'ok'\n"
    "    err = p.stderr.decode('utf-8', 'replace')\n"
    "    m = re.search(r'^/dev/stdin: line (\\d+): (.*)$', err, re.M)\n"
    "    if not m: return 'err 0 -1 0 -1 0 %s' % (err.strip().splitlines() or ['bash -n rejects "
    "it'])[0]\n"
    "    n, msg = int(m.group(1)), m.group(2)\n"
    "    ls = starts(src)\n"
    "    i = line_start(src, n, '\\n')\n"
    "    eof = 'unexpected end of file' in msg or 'unexpected EOF' in msg\n"
    "    t = re.search(r\"unexpected token `(.*)'$\", msg)\n"
    "    if t and not eof:\n"
    "        j = src.find(t.group(1), i, max(src.find('\\n', i), i) if '\\n' in src[i:] else "
    "len(src))\n"
    "        if j >= 0:\n"
    "            a = at(src, ls, j); b = at(src, ls, j + len(t.group(1)))\n"
    "            return 'err %d %d %d %d 0 %s' % (a[0], a[1], b[0], b[1], msg)\n"
    "    a = at(src, ls, i)\n"
    "    return 'err %d -1 %d -1 %d %s' % (a[0], a[0], eof, msg)\n"
    "# A persistent node compiles each snippet as node --check does (the\n"
    "# CommonJS wrapper, then an ES module for code only a module may hold),\n"
    "# without a process per check: starting node costs about 40 ms.\n"
    "NODE_SRC = r\"\"\"\n"
    "const vm = require('vm');\n"
    "const P = ['exports', 'require', 'module', '__filename', '__dirname'];\n"
    "const ESM = %s;\n"
    "let chunks = [], have = 0, want = -1;\n"
    "function check(code) {\n"
    "  try { vm.compileFunction(code, P, {filename: 'snippet.js'}); return 'ok'; }\n"
    "  catch (e) {\n"
    "    const st = String((e && e.stack) || e);\n"
    "    if (!ESM.some((m) => st.includes(m))) return st;\n"
    "    try { new vm.SourceTextModule(code, {identifier: 'snippet.js'}); return 'ok'; }\n"
    "    catch (e2) { return 'module'; }\n"
    "  }\n"
    "}\n"
    "process.stdin.on('data', (d) => {\n"
    "  chunks.push(d); have += d.length;\n"
    "  for (;;) {\n"
    "    if (want >= 0 && have < want) return;\n"
    "    let buf = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);\n"
    "    chunks = [buf];\n"
    "    if (want < 0) {\n"
    "      const nl = buf.indexOf(10);\n"
    "      if (nl < 0) return;\n"
    "      want = parseInt(buf.subarray(0, nl).toString(), 10);\n"
    "      buf = buf.subarray(nl + 1); chunks = [buf]; have = buf.length;\n"
    "    }\n"
    "    if (have < want) return;\n"
    "    const code = buf.subarray(0, want).toString('utf8');\n"
    "    buf = buf.subarray(want); chunks = [buf]; have = buf.length; want = -1;\n"
    "    process.stdout.write(JSON.stringify(check(code)) + '\\n');\n"
    "  }\n"
    "});\n"
    "\"\"\" % json.dumps(list(ESM))\n"
    "NODE = None\n"
    "def node_persistent(argv0, data):\n"
    "    global NODE\n"
    "    for _ in range(2):\n"
    "        if NODE is None or NODE.poll() is not None:\n"
    "            NODE = subprocess.Popen([argv0, '--experimental-vm-modules', '--no-warnings', "
    "'-e',\n"
    "                                     NODE_SRC], stdin=subprocess.PIPE, "
    "stdout=subprocess.PIPE,\n"
    "                                    stderr=subprocess.DEVNULL)\n"
    "        try:\n"
    "            NODE.stdin.write(b'%d\\n' % len(data) + data)\n"
    "            NODE.stdin.flush()\n"
    "            line = NODE.stdout.readline()\n"
    "            if line:\n"
    "                return json.loads(line)\n"
    "        except (BrokenPipeError, ValueError):\n"
    "            pass\n"
    "        NODE.kill()\n"
    "        NODE = None\n"
    "    raise RuntimeError('node did not answer')\n"
    "def node_run(argv0, data, esm):\n"
    "    args = [argv0, '--check'] + (['--input-type=module'] if esm else []) + ['-']\n"
    "    return subprocess.run(args, input=data, stdout=subprocess.DEVNULL, "
    "stderr=subprocess.PIPE)\n"
    "def node(argv0, data, src):\n"
    "    res = node_persistent(argv0, data)\n"
    "    if res == 'ok': return 'ok'\n"
    "    if res == 'module':\n"
    "        # A module with an error: node --check tells where.\n"
    "        p = node_run(argv0, data, True)\n"
    "        if p.returncode == 0: return 'ok'\n"
    "        err = p.stderr.decode('utf-8', 'replace')\n"
    "    else:\n"
    "        err = res\n"
    "    lines = err.splitlines()\n"
    "    m = re.search(r'^(\\w*Error): (.*)$', err, re.M)\n"
    "    msg = m.group(2) if m else (lines[0] if lines else 'node --check rejects it')\n"
    "    h = re.match(r'^(?:\\[stdin\\]|snippet\\.js):(\\d+)$', lines[0]) if lines else None\n"
    "    if not h: return 'err 0 -1 0 -1 0 %s' % msg\n"
    "    n = int(h.group(1))\n"
    "    ls = starts(src)\n"
    "    i = line_start(src, n, '\\n')\n"
    "    eof = msg == 'Unexpected end of input'\n"
    "    caret = lines[2] if len(lines) > 2 else ''\n"
    "    c = re.match(r'^( *)(\\^+)$', caret)\n"
    "    if c and not eof:\n"
    "        # The caret counts UTF-16 units of the line node printed.\n"
    "        u, k = len(c.group(1)), i\n"
    "        while u > 0 and k < len(src):\n"
    "            u -= 2 if ord(src[k]) > 0xffff else 1\n"
    "            k += 1\n"
    "        w = len(c.group(2))\n"
    "        e = k\n"
    "        while w > 0 and e < len(src):\n"
    "            w -= 2 if ord(src[e]) > 0xffff else 1\n"
    "            e += 1\n"
    "        a = at(src, ls, k); b = at(src, ls, e)\n"
    "        return 'err %d %d %d %d 0 %s' % (a[0], a[1], b[0], b[1], msg)\n"
    "    a = at(src, ls, min(i, len(src)))\n"
    "    return 'err %d -1 %d -1 %d %s' % (a[0], a[0], eof, msg)\n"
    "# The request is awaited in poll(), not in a blocking read: kiln's read of\n"
    "# the last answer frees space in this socket's buffer, and the kernel wakes\n"
    "# a reader blocked on the socket for that too (a wake-up and two switches\n"
    "# for nothing, on the CPU kiln's parse runs on when the other is busy);\n"
    "# poll() wakes for input alone.\n"
    "IN = select.poll()\n"
    "IN.register(0, select.POLLIN)\n"
    "buf = bytearray()\n"
    "def more():\n"
    "    IN.poll()\n"
    "    d = os.read(0, 65536)\n"
    "    if not d:\n"
    "        sys.exit(0)\n"
    "    buf.extend(d)\n"
    "while True:\n"
    "    nl = buf.find(b'\\n')\n"
    "    while nl < 0:\n"
    "        more()\n"
    "        nl = buf.find(b'\\n')\n"
    "    lang, argv0, n = bytes(buf[:nl]).split(b' ')\n"
    "    del buf[:nl + 1]\n"
    "    n = int(n)\n"
    "    while len(buf) < n:\n"
    "        more()\n"
    "    data = bytes(buf[:n])\n"
    "    del buf[:n]\n"
    "    try:\n"
    "        if lang == b'python':\n"
    "            out = python(data.decode('utf-8'))\n"
    "        elif lang == b'bash':\n"
    "            out = bash(argv0.decode(), data, data.decode('utf-8', 'surrogateescape'))\n"
    "        else:\n"
    "            out = node(argv0.decode(), data, data.decode('utf-8', 'surrogateescape'))\n"
    "    except Exception as e:\n"
    "        out = 'fail %s' % e\n"
    "    out = out.replace('\\n', ' ').encode('utf-8', 'replace') + b'\\n'\n"
    "    while out:\n"
    "        out = out[os.write(1, out):]\n";

#define REPLY_MAX 1024
/* How long the check waits for a Python answer sent ahead awake (reading
 * again) before it sleeps in poll(). By then kiln's own check is done, and
 * the answer is usually tens of microseconds away; sleeping for it costs
 * more than that on a virtual machine (the worker's write must wake this
 * thread's CPU from a halt, 20-70 us, and costs the worker 14 us). But
 * when the worker waits for this very CPU (the scheduler put it here, on a
 * busy machine), spinning only delays it: a spin that ends without the
 * answer means the next SPIN_BACKOFF answers are awaited asleep at once.
 * bash -n starts a process (milliseconds): awaited asleep. */
#define ANSWER_SPIN_US 200
#define SPIN_BACKOFF   64
/* Building the box and starting python3 takes milliseconds; this only
 * bounds a machine that is badly stuck. */
#define START_MS 10000

struct val_pyworker {
	char *python;
	int timeout_ms;
	struct sbx_worker *proc; /* NULL when not running */
	bool broken;             /* could not start: do not try again */
	bool pending;            /* a request was sent (val_pyworker_send), not read */
	struct val_spin spin;    /* how the last Python answers were awaited */
	uint64_t pending_deadline;
	char why[768]; /* the last reason CPython could not answer */
};

struct val_pyworker *val_pyworker_new(const char *python, int timeout_ms)
{
	struct val_pyworker *w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->python = strdup(python);
	if (!w->python) {
		free(w);
		return NULL;
	}
	w->timeout_ms = timeout_ms;
	return w;
}

static void worker_stop(struct val_pyworker *w)
{
	sbx_worker_free(w->proc);
	w->proc = NULL;
	w->pending = false;
}

void val_pyworker_free(struct val_pyworker *w)
{
	if (!w)
		return;
	worker_stop(w);
	free(w->python);
	free(w);
}

const char *val_pyworker_why(const struct val_pyworker *w)
{
	return w->why[0] ? w->why : "it did not answer";
}

static int worker_start(struct val_pyworker *w)
{
	/* No sandbox instance of its own: the box is built from the
	 * process's host facts and filter, shared with the server's runs
	 * (sandbox.h), on whichever thread the validator checks. */
	int r;
	const char *argv[] = {w->python, "-I", "-S", "-B", "{file}", NULL};
	/* source_coding.py ahead of the worker: its check of a coding
	 * declaration is the runners' own (sandbox/guest/). */
	_cleanup_free_ char *data = NULL;
	if (asprintf(&data, "%s%s", sbx_source_coding, worker_src) < 0) {
		snprintf(w->why, sizeof(w->why), "out of memory");
		return -ENOMEM;
	}
	struct sbx_worker_spec spec = {
	    .argv = argv, .file = "pyworker.py", .data = data, .start_ms = START_MS};
	char err[sizeof(w->why)];
	r = sbx_worker_spawn(NULL, &spec, &w->proc, err, sizeof(err));
	if (r < 0) {
		snprintf(w->why, sizeof(w->why), "%s", err);
		return r;
	}
	log_debug("validator: CPython worker started in the sandbox (pid 1 of its box: %d)",
	          (int)sbx_worker_pid(w->proc));
	return 0;
}

/* Wait for fd as fd_wait() does, in slices, so that a cancelled check
 * (the validator's thread, cancelled or stopping) stops waiting at once. */
#define CANCEL_SLICE_MS 20

static int wait_fd(int fd, short events, uint64_t deadline, const volatile size_t *cancel)
{
	for (;;) {
		if (cancel && __atomic_load_n(cancel, __ATOMIC_RELAXED))
			return -ECANCELED;
		uint64_t now = loop_now_ms();
		uint64_t until =
		    !cancel || deadline < now + CANCEL_SLICE_MS ? deadline : now + CANCEL_SLICE_MS;
		int r = fd_wait(fd, events, until);
		if (r != -ETIMEDOUT || until == deadline)
			return r;
	}
}

/* Send every byte of iov[0..n) (modified), the pieces in one sendmsg
 * when the socket takes them: the worker wakes once per request and reads
 * it whole, not once for the header and again for the code (each wake-up
 * is two switches when the worker shares kiln's CPU, an interrupt when it
 * sleeps on the other). */
static int send_all(int fd, struct iovec *iov, int n, uint64_t deadline,
                    const volatile size_t *cancel)
{
	while (n > 0) {
		struct msghdr m = {.msg_iov = iov, .msg_iovlen = (size_t)n};
		ssize_t k = sendmsg(fd, &m, MSG_NOSIGNAL);
		if (k < 0 && errno != EAGAIN && errno != EINTR)
			return neg_errno();
		if (k < 0) {
			int r = wait_fd(fd, POLLOUT, deadline, cancel);
			if (r < 0)
				return r;
			continue;
		}
		size_t done = (size_t)k;
		while (n > 0 && done >= iov->iov_len) {
			done -= iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (char *)iov->iov_base + done;
			iov->iov_len -= done;
		}
	}
	return 0;
}

static uint64_t mono_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

unsigned val_spin_budget(struct val_spin *sp)
{
	if (sp->skip > 0) {
		sp->skip--;
		return 0;
	}
	return ANSWER_SPIN_US;
}

void val_spin_result(struct val_spin *sp, unsigned spin_us, bool slept)
{
	if (spin_us && slept)
		sp->skip = SPIN_BACKOFF;
}

int val_pyworker_read_line(int fd, char *out, size_t osz, uint64_t deadline,
                           const volatile size_t *cancel, unsigned spin_us, bool *ret_slept)
{
	*ret_slept = false;
	size_t n = 0;
	uint64_t spin_end = 0;
	for (;;) {
		ssize_t k = read(fd, out + n, osz - 1 - n);
		if (k > 0) {
			n += (size_t)k;
			char *nl = memchr(out, '\n', n);
			if (nl) {
				*nl = '\0';
				return 0;
			}
			if (n >= osz - 1)
				return -EPROTO;
			continue;
		}
		if (k == 0)
			return -EPIPE;
		if (errno != EAGAIN && errno != EINTR)
			return neg_errno();
		if (spin_us) {
			uint64_t now = mono_us();
			if (!spin_end)
				spin_end = now + spin_us;
			if (now < spin_end) {
				if (cancel && __atomic_load_n(cancel, __ATOMIC_RELAXED))
					return -ECANCELED;
				continue;
			}
		}
		*ret_slept = true;
		int r = wait_fd(fd, POLLIN, deadline, cancel);
		if (r < 0)
			return r;
	}
}

static int parse_reply(struct val_pyworker *w, const char *line, struct val_pyerror *e)
{
	if (strcmp(line, "ok") == 0)
		return 0;
	if (strncmp(line, "fail ", 5) == 0) {
		/* The worker is well; the parser it ran was not (no node in
		 * the box, a crash): this language goes without it this time. */
		snprintf(w->why, sizeof(w->why), "the parser failed (%.200s)", line + 5);
		return -ENOEXEC;
	}
	unsigned l, el, eof;
	int c, ec, off = 0;
	if (sscanf(line, "err %u %d %u %d %u %n", &l, &c, &el, &ec, &eof, &off) != 5 || off == 0)
		return -EPROTO;
	*e = (struct val_pyerror){
	    .line = l,
	    .col = c < 0 ? -1 : c,
	    .end_line = el,
	    .end_col = ec < 0 ? -1 : ec,
	    .eof = eof != 0,
	};
	snprintf(e->msg, sizeof(e->msg), "%s", line + off);
	return 1;
}

static int send_request(struct val_pyworker *w, enum val_parser p, const char *argv0,
                        const char *code, size_t len, const volatile size_t *cancel,
                        uint64_t *ret_deadline)
{
	static const char *const names[] = {"python", "bash", "node"};
	/* Big code takes longer: a millisecond more per 2 KiB (4 MiB: 2 s). */
	uint64_t deadline = loop_now_ms() + (uint64_t)w->timeout_ms + len / 2048;
	int fd = sbx_worker_fd(w->proc);
	char hdr[PATH_MAX + 64];
	int hl = snprintf(hdr, sizeof(hdr), "%s %s %zu\n", names[p], argv0 ? argv0 : "-", len);
	if (hl < 0 || (size_t)hl >= sizeof(hdr))
		return -ENAMETOOLONG;
	struct iovec iov[2] = {{.iov_base = hdr, .iov_len = (size_t)hl},
	                       {.iov_base = (void *)code, .iov_len = len}};
	int r = send_all(fd, iov, 2, deadline, cancel);
	if (r >= 0)
		*ret_deadline = deadline;
	return r;
}

static int read_answer(struct val_pyworker *w, uint64_t deadline, const volatile size_t *cancel,
                       bool spin, struct val_pyerror *ret)
{
	char line[REPLY_MAX];
	bool slept;
	unsigned spin_us = spin ? val_spin_budget(&w->spin) : 0;
	int r = val_pyworker_read_line(sbx_worker_fd(w->proc), line, sizeof(line), deadline, cancel,
	                               spin_us, &slept);
	if (spin && r >= 0)
		val_spin_result(&w->spin, spin_us, slept);
	if (r >= 0)
		r = parse_reply(w, line, ret);
	return r;
}

static int ask(struct val_pyworker *w, enum val_parser p, const char *argv0, const char *code,
               size_t len, const volatile size_t *cancel, struct val_pyerror *ret)
{
	uint64_t deadline;
	int r = send_request(w, p, argv0, code, len, cancel, &deadline);
	return r < 0 ? r : read_answer(w, deadline, cancel, false, ret);
}

int val_pyworker_send(struct val_pyworker *w, enum val_parser p, const char *argv0,
                      const char *code, size_t len, const volatile size_t *cancel)
{
	if (w->broken || w->pending || !w->proc)
		return -EAGAIN; /* the check starts (or restarts) the worker itself */
	int r = send_request(w, p, argv0, code, len, cancel, &w->pending_deadline);
	if (r < 0) {
		worker_stop(w);
		return r;
	}
	w->pending = true;
	return 0;
}

void val_pyworker_drop(struct val_pyworker *w)
{
	if (!w->pending)
		return;
	w->pending = false;
	worker_stop(w);
}

/* The worker did not answer in time (the caller has stopped it): keep the
 * reason for val_pyworker_why() and log it. Returns -ETIMEDOUT. */
static int timed_out(struct val_pyworker *w)
{
	snprintf(w->why, sizeof(w->why), "it did not answer within %d ms", w->timeout_ms);
	log_warn("validator: the Python syntax worker took over %d ms; restarting it",
	         w->timeout_ms);
	return -ETIMEDOUT;
}

int val_pyworker_check(struct val_pyworker *w, enum val_parser p, const char *argv0,
                       const char *code, size_t len, const volatile size_t *cancel,
                       struct val_pyerror *ret_err)
{
	if (w->broken)
		return -ENOENT;
	if (w->pending) {
		/* Sent ahead by val_pyworker_send, for this same check (so
		 * with this p): read it. Past a failure the worker is
		 * restarted and asked again, as below. */
		w->pending = false;
		struct val_pyerror e;
		int r = read_answer(w, w->pending_deadline, cancel, p == VAL_PARSE_PYTHON, &e);
		if (r == 1)
			*ret_err = e;
		if (r >= 0 || r == -ENOEXEC)
			return r;
		worker_stop(w);
		if (r == -ECANCELED)
			return r;
		if (r == -ETIMEDOUT)
			return timed_out(w);
	}
	/* A worker that died since the last request gets one restart. */
	for (int attempt = 0; attempt < 2; attempt++) {
		if (!w->proc) {
			int r = worker_start(w);
			if (r < 0) {
				/* Never an unsandboxed CPython: tree-sitter alone. */
				w->broken = true;
				if (r == -ENOENT)
					log_info("validator: %s: Python syntax is checked by "
					         "tree-sitter alone",
					         w->why);
				else
					log_warn(
					    "validator: CPython cannot run in kiln's sandbox, so "
					    "Python syntax is checked by tree-sitter alone: %s",
					    w->why);
				return r;
			}
		}
		struct val_pyerror e;
		int r = ask(w, p, argv0, code, len, cancel, &e);
		if (r == -ENOEXEC)
			return r;
		if (r == -ECANCELED) {
			/* Mid-request: the worker's state is unknown, so it goes
			 * (the next check starts another). */
			worker_stop(w);
			return r;
		}
		if (r >= 0) {
			if (r == 1)
				*ret_err = e;
			return r;
		}
		worker_stop(w);
		if (r == -ETIMEDOUT)
			return timed_out(w);
	}
	snprintf(w->why, sizeof(w->why), "it kept failing (ending before it answered)");
	log_warn("validator: the Python syntax worker keeps failing; using tree-sitter alone");
	w->broken = true;
	return -EPIPE;
}
