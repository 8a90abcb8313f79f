#!/usr/bin/env python3
"""zygote_spare.py: a run (or a session) that comes while the zygote's
spare is still on its way never waits on the server's loop for it
(server/sandbox/pools/zygote.h, sbx_zygote_take's -EINPROGRESS).

  zygote_spare.py --kiln KILN [--only NAME]...

Each case holds the spare back for as long as it likes: it stops the
server's zygote (SIGSTOP; only this server's, found under its pid) once
the spare is ready, runs once (that run takes the ready spare, and its
end asks the stopped zygote for the next one, which cannot come), and
then sends what must not wait for it. The order of events is asserted,
never a time: a round trip sent after the run must be answered while
the zygote is still stopped (with the old blocking wait it was answered
only after the wait gave up, and the run then took the normal path);
then SIGCONT, and the run must come from the zygote (it waited for its
spare, off the loop); without SIGCONT it must come, after the deadline,
from a box of its own. Cancel, close and a client that exits in that
window must leave nothing behind (no process, no cgroup: attacks.py's
host check after every case; the server's own exit under ASan for
leaks) and keep the spare for the next run.

Prints "ok NAME" / "not ok NAME: why" and "N passed, N failed".
"""
import argparse
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time

sys.path[:0] = [os.path.dirname(os.path.abspath(__file__)),
                os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib")]
import attacks  # noqa: E402
import kilnrpc  # noqa: E402

# The first line of every run's output: whether its process is a child of
# the zygote (as tests/sandbox/zygote.py's MARK).
MARK = ("import sys as _kz\nprint('KILN-ZYGOTE', int('kiln_zygote' in _kz.modules), "
        "flush=True)\ndel _kz\n")
READY_WAIT_S = 120
# A bound on waiting for one message (liveness, not a timing claim: a
# loop blocked until the zygote goes on never answers while it is
# stopped).
MSG_WAIT_S = 30
CANCELLED = -32800


def cmdline(pid):
    try:
        with open("/proc/%s/cmdline" % pid, "rb") as f:
            return f.read()
    except OSError:
        return b""


def ppid(pid):
    try:
        with open("/proc/%s/stat" % pid) as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 0


def descendants(root):
    """Every pid under root (its children, theirs...)."""
    kids = {}
    for p in os.listdir("/proc"):
        if p.isdigit():
            kids.setdefault(ppid(p), []).append(int(p))
    out, todo = [], [root]
    while todo:
        for c in kids.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


class Server:
    """One kiln server; messages read in order, kept until asked for."""

    def __init__(self, kiln, config, env, log):
        self.logpath = log
        self.log = open(log, "wb")
        self.p = subprocess.Popen([kiln, "--log-level", "debug", "--config", config], env=env, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=self.log)
        self.rid = 0
        self.seen = []  # every message, in the order it came
        self.stopped = None
        # Read by a thread of its own: a wait for the next message has a
        # bound, whatever the pipe's buffering holds.
        self.inbox = queue.Queue()
        threading.Thread(target=self.reader, daemon=True).start()
        self.request("initialize", {})

    def reader(self):
        while True:
            try:
                m = kilnrpc.recv(self.p.stdout)
            except (OSError, ValueError):
                m = None
            self.inbox.put(m)
            if m is None:
                return

    def send(self, method, params, notification=False):
        msg = {"jsonrpc": "2.0", "method": method, "params": params}
        if not notification:
            self.rid += 1
            msg["id"] = self.rid
        kilnrpc.send(self.p, msg)
        return None if notification else self.rid

    def next(self):
        try:
            m = self.inbox.get(timeout=MSG_WAIT_S)
        except queue.Empty:
            raise AssertionError("no message from the server in %d s (its loop is blocked?)"
                                 % MSG_WAIT_S)
        if m is None:
            raise AssertionError("the server ended")
        self.seen.append(m)
        return m

    def until_reply(self, rid):
        """Messages up to and with the reply to rid (read now)."""
        for i, m in enumerate(self.seen):
            if m.get("id") == rid and "method" not in m:
                return self.seen[:i + 1]
        while True:
            m = self.next()
            if m.get("id") == rid and "method" not in m:
                return list(self.seen)

    def request(self, method, params):
        rid = self.send(method, params)
        return self.until_reply(rid)[-1]

    def ping(self):
        """A round trip answered on the loop: session/close of no session."""
        return self.send("session/close", {"sessionId": "s-none"})

    def output(self, rid, run_id=None):
        """The text of run/output for a run (by its runId, or the one whose
        reply is rid), among the messages seen."""
        if run_id is None:
            run_id = self.run_id(rid)
        return "".join(m["params"]["text"] for m in self.seen
                       if m.get("method") == "run/output" and m["params"].get("runId") == run_id)

    def run_id(self, rid):
        for m in self.seen:
            if m.get("id") == rid and "result" in m:
                return m["result"].get("runId")
        return None

    def run(self, code, params=None):
        """(stdout, reply) of a snippet/run, read to its reply."""
        p = {"language": "python", "code": code, "override": True}
        p.update(params or {})
        rid = self.send("snippet/run", p)
        reply = self.until_reply(rid)[-1]
        return self.output(rid), reply

    def wait_ready(self):
        deadline = time.time() + READY_WAIT_S
        while time.time() < deadline:
            out, _ = self.run(MARK)
            if out.startswith("KILN-ZYGOTE 1"):
                return True
            time.sleep(0.5)
        return False

    def zygote(self):
        """This server's zygote: the kiln_zygote process under it with
        children named kiln-spare (a spare's pid 1, and the one it
        clones ahead); its spares' programs are kiln_zygote copies too,
        under a spare's pid 1."""
        under = descendants(self.p.pid)
        for pid in under:
            if b"kiln_zygote" in cmdline(pid) and any(
                    ppid(c) == pid and cmdline(c).rstrip(b"\0") == b"kiln-spare"
                    for c in under):
                return pid
        return None

    def hold_spare(self):
        """Stop the zygote once the spare is ready, then run once: the
        run takes it, and the next spare (asked for at its end) cannot
        come until release(). Raises if that run was not the zygote's."""
        if not self.wait_ready():
            raise AssertionError("no run came from the zygote in %d s" % READY_WAIT_S)
        # Served: the spare's pid 1 and the child cloned ahead after it,
        # both named kiln-spare until their run comes (zygote.py).
        deadline = time.time() + READY_WAIT_S
        while time.time() < deadline:
            z = self.zygote()
            spares = [c for c in descendants(z)
                      if ppid(c) == z and cmdline(c).rstrip(b"\0") == b"kiln-spare"] if z else []
            if len(spares) >= 2:
                break
            time.sleep(0.05)
        else:
            raise AssertionError("the zygote made no spare")
        os.kill(z, signal.SIGSTOP)
        self.stopped = z
        try:
            out, reply = self.run(MARK + "print('A')\n")
        except AssertionError as e:
            raise AssertionError("the run before the wait: %s" % e)
        if not out.startswith("KILN-ZYGOTE 1") or "error" in reply:
            raise AssertionError("the run before the wait: %r %r" % (out[:200], reply))
        self.seen = []

    def release(self):
        if self.stopped:
            try:
                os.kill(self.stopped, signal.SIGCONT)
            except OSError:
                pass
            self.stopped = None

    def stop(self):
        self.release()
        try:
            rid = self.send("shutdown", None)
            self.until_reply(rid)
            self.send("exit", None, notification=True)
            self.p.stdin.close()
            rc = self.p.wait(timeout=60)
        except (OSError, AssertionError, subprocess.TimeoutExpired):
            self.p.kill()
            self.p.wait()
            rc = -1
        self.log.close()
        return rc

    def log_tail(self):
        with open(self.logpath, "rb") as f:
            return f.read()[-2000:].decode("utf-8", "replace")


class SpareSuite(attacks.Suite):
    def __init__(self, args):
        args.kiln_release = None
        args.no_box = False
        args.attack = "/bin/true"
        super().__init__(args)
        with open(self.config) as f:
            cfg = json.load(f)
        cfg["sandbox"]["zygote"] = True
        # Each case's server builds its zygote for its first run.
        self.config = os.path.join(self.scratch, "config-spare.json")
        with open(self.config, "w") as f:
            json.dump(cfg, f)
        self.nserver = 0

    def server(self):
        self.nserver += 1
        return Server(self.kiln, self.config, self.env,
                      os.path.join(self.scratch, "server%d.log" % self.nserver))

    def with_server(self, body):
        """Run body(srv) against a fresh server held as hold_spare() leaves
        it; the server is stopped after (its exit must be clean)."""
        def run():
            srv = self.server()
            why = None
            try:
                srv.hold_spare()
                why = body(srv)
            except AssertionError as e:
                why = str(e)
            finally:
                rc = srv.stop()
            if why is None and rc != 0:
                why = "the server exited %s: %s" % (rc, srv.log_tail())
            elif why is not None:
                why += " (server log: %s)" % srv.log_tail()[-600:]
            return why
        return run

    # --- the cases -------------------------------------------------------------

    def answered_before(self, srv, ping, rid):
        """The round trip ping was answered (the zygote still stopped)
        with nothing of request rid before it: the loop went on while rid
        waited for its spare."""
        seen = srv.until_reply(ping)
        early = [m for m in seen[:-1] if m.get("id") == rid or
                 (m.get("method", "").startswith("run/") and m.get("method") != "run/status")]
        if early:
            return "before the round trip's answer came %s" % json.dumps(early)[:400]
        return None

    def run_waits_case(self, srv):
        """A run right after the last one, with the spare not there: a
        round trip after it is answered first, then the run comes from
        the zygote once the spare does."""
        rid = srv.send("snippet/run", {"language": "python", "code": MARK + "print('B')\n",
                                       "override": True})
        ping = srv.ping()
        why = self.answered_before(srv, ping, rid)
        if why:
            return why
        srv.release()
        reply = srv.until_reply(rid)[-1]
        out = srv.output(rid)
        if "error" in reply or out != "KILN-ZYGOTE 1\nB\n":
            return "the run that waited: %r %r" % (out[:300], reply)
        return None

    def cancel_case(self, srv):
        """A run cancelled while it waits for its spare: answered as
        cancelled, nothing left; the spare stays the zygote's and the
        next run takes it."""
        rid = srv.send("snippet/run", {"language": "python",
                                       "code": MARK + "import time\ntime.sleep(60)\n",
                                       "override": True})
        why = self.answered_before(srv, srv.ping(), rid)
        if why:
            return why
        srv.send("$/cancelRequest", {"id": rid}, notification=True)
        reply = srv.until_reply(rid)[-1]
        if reply.get("error", {}).get("code") != CANCELLED:
            return "not cancelled: %r" % reply
        srv.release()
        out, reply = srv.run(MARK + "print('C')\n")
        if out != "KILN-ZYGOTE 1\nC\n" or "error" in reply:
            return "the run after the cancelled one: %r %r" % (out[:300], reply)
        return None

    def deadline_case(self, srv):
        """The spare does not come at all (the zygote stays stopped): the
        run that waits for it takes a box of its own once the deadline
        (ZYGOTE_ANSWER_MS, 2 s) passes, the loop answering meanwhile; the
        zygote is retired, and runs go on."""
        rid = srv.send("snippet/run", {"language": "python", "code": MARK + "print('B')\n",
                                       "override": True})
        why = self.answered_before(srv, srv.ping(), rid)
        if why:
            return why
        reply = srv.until_reply(rid)[-1]
        out = srv.output(rid)
        if "error" in reply or out != "KILN-ZYGOTE 0\nB\n":
            return "the run whose spare never came: %r %r" % (out[:300], reply)
        srv.release()
        out, reply = srv.run("print('C')\n")
        if out != "C\n" or "error" in reply:
            return "the run after: %r %r" % (out[:300], reply)
        return None

    def client_exit_case(self):
        """The client goes (its stdin closes) while a run waits for its
        spare: the server ends cleanly (no leak under ASan), and nothing
        of the run, the zygote or the spare is left (the host check)."""
        def run():
            srv = self.server()
            try:
                srv.hold_spare()
                rid = srv.send("snippet/run", {"language": "python",
                                               "code": MARK + "import time\ntime.sleep(60)\n",
                                               "override": True})
                why = self.answered_before(srv, srv.ping(), rid)
                if why:
                    return why
                srv.p.stdin.close()
                rc = srv.p.wait(timeout=60)
                srv.release()
                # Without shutdown and exit the server says so (LSP: 1);
                # ASan's leak report is its own exit code (23).
                if rc not in (0, 1):
                    return "the server exited %s: %s" % (rc, srv.log_tail())
                return None
            except AssertionError as e:
                return "%s (server log: %s)" % (e, srv.log_tail()[-1500:])
            finally:
                srv.release()
                if srv.p.poll() is None:
                    srv.p.kill()
                    srv.p.wait()
        return run

    def session_case(self, srv):
        """A session opened while the spare is on its way is answered at
        once; its first run waits with it, a round trip goes first, and
        the driver comes from the zygote. A run of it cancelled in that
        window is answered so, and the session's next run works."""
        # Answered at once (the old wait answered it after its deadline,
        # and the box was then one of its own: the run below says).
        open_id = srv.send("session/open", {"language": "python"})
        reply = srv.until_reply(open_id)[-1]
        if "result" not in reply:
            return "session/open: %r" % reply
        sid = reply["result"]["sessionId"]
        # A run cancelled before its code left: it never runs.
        rid = srv.send("snippet/run", {"language": "python", "sessionId": sid,
                                       "code": "import time\ntime.sleep(60)\n",
                                       "override": True})
        why = self.answered_before(srv, srv.ping(), rid)
        if why:
            return why
        srv.send("$/cancelRequest", {"id": rid}, notification=True)
        reply = srv.until_reply(rid)[-1]
        if reply.get("error", {}).get("code") != CANCELLED:
            return "not cancelled: %r" % reply
        rid = srv.send("snippet/run", {"language": "python", "sessionId": sid,
                                       "code": MARK + "x = 'S'\nprint(x)\n", "override": True})
        why = self.answered_before(srv, srv.ping(), rid)
        if why:
            return why
        srv.release()
        reply = srv.until_reply(rid)[-1]
        out = srv.output(rid)
        if "error" in reply or out != "KILN-ZYGOTE 1\nS\n":
            return "the session's run that waited: %r %r" % (out[:300], reply)
        out, reply = srv.run("print(x * 2)\n", {"sessionId": sid})
        if out != "SS\n" or "error" in reply:
            return "the session's next run: %r %r" % (out[:300], reply)
        return None

    def session_close_case(self, srv):
        """A session closed while its box is on its way: closed at once,
        and the spare stays the zygote's for the next run."""
        open_id = srv.send("session/open", {"language": "python"})
        reply = srv.until_reply(open_id)[-1]
        if "result" not in reply:
            return "session/open: %r" % reply
        reply = srv.request("session/close", {"sessionId": reply["result"]["sessionId"]})
        if "error" in reply:
            return "session/close: %r" % reply
        srv.release()
        out, reply = srv.run(MARK + "print('C')\n")
        if out != "KILN-ZYGOTE 1\nC\n" or "error" in reply:
            return "the run after the closed session: %r %r" % (out[:300], reply)
        return None

    def spares(self, srv):
        """How many children of this server's zygote are named kiln-spare:
        the spare's pid 1 (until its run comes) and the child cloned
        ahead after it (zygote.py)."""
        z = srv.zygote()
        if not z:
            return 0
        return sum(1 for c in descendants(z)
                   if ppid(c) == z and cmdline(c).rstrip(b"\0") == b"kiln-spare")

    def wait_spares(self, srv, n):
        deadline = time.time() + READY_WAIT_S
        while self.spares(srv) < n:
            if time.time() > deadline:
                raise AssertionError("the zygote's spare never came")
            time.sleep(0.05)

    def session_quiet_case(self):
        """The zygote makes no spare while a session's next cell runs
        (server/sandbox/pools/zygote.h, sbx_zygote_session_idle): a
        session opened from the zygote takes its spare, and the next one
        was asked for right at its first cell's end, so the zygote's
        clone shared the two CPUs with a cell sent right after (a
        `print(1)` there took 1.9-6x the built box's). Order of events
        only: cell B is sent as soon as A's reply is read, and while B
        runs (it says so, then sleeps), no spare may come; after B it
        must. An attempt whose B went out later than the quiet time
        after A proves nothing and is tried again. Then a run and a
        session that come while the spare is owed come from the zygote
        (they ask for it at once and wait), not from a box of their own."""
        def run():
            srv = self.server()
            why = None
            try:
                if not srv.wait_ready():
                    raise AssertionError("no run came from the zygote")
                for attempt in range(5):
                    self.wait_spares(srv, 2)
                    sid = srv.request("session/open", {"language": "python"})["result"][
                        "sessionId"]
                    out, reply = srv.run(MARK + "a = 1\n", {"sessionId": sid})
                    if out != "KILN-ZYGOTE 1\n" or "error" in reply:
                        raise AssertionError("cell A: %r %r" % (out[:300], reply))
                    mark = len(srv.seen)
                    t0 = time.monotonic()
                    rid = srv.send("snippet/run", {
                        "language": "python", "sessionId": sid, "override": True,
                        "code": "import time\nprint('go', flush=True)\ntime.sleep(1.5)\n"})
                    late = time.monotonic() - t0 > 0.05  # the quiet time is 100 ms
                    # B's first output (the only run under way) says it runs.
                    while not any(m.get("method") == "run/output" and
                                  "go" in m["params"].get("text", "")
                                  for m in srv.seen[mark:]):
                        if srv.next().get("id") == rid:
                            raise AssertionError("cell B: %r" % srv.seen[-1])
                    made = 0
                    for _ in range(10):
                        made = max(made, self.spares(srv))
                        time.sleep(0.1)
                    reply = srv.until_reply(rid)[-1]
                    if "error" in reply:
                        raise AssertionError("cell B: %r" % reply)
                    if made >= 2 and not late:
                        raise AssertionError(
                            "a spare was made while the session's cell B ran")
                    srv.request("session/close", {"sessionId": sid})
                    if not late:
                        break
                else:
                    raise AssertionError("cell B never went out at once (5 attempts)")
                # Owed after cell B: made once no cell started for a while.
                self.wait_spares(srv, 2)
                # A session and a run that come while it is owed.
                sid = srv.request("session/open", {"language": "python"})["result"]["sessionId"]
                out, reply = srv.run("a = 1\n", {"sessionId": sid})
                sid2 = srv.request("session/open", {"language": "python"})["result"][
                    "sessionId"]
                out, reply = srv.run(MARK + "b = 1\n", {"sessionId": sid2})
                if out != "KILN-ZYGOTE 1\n" or "error" in reply:
                    why = "a session opened while the spare was owed: %r %r" % (out[:300], reply)
                else:
                    out, reply = srv.run(MARK + "print('C')\n")
                    if out != "KILN-ZYGOTE 1\nC\n" or "error" in reply:
                        why = "a run while the spare was owed: %r %r" % (out[:300], reply)
                for i in (sid, sid2):
                    srv.request("session/close", {"sessionId": i})
            except (AssertionError, KeyError) as e:
                why = "%s (server log: %s)" % (e, srv.log_tail()[-600:])
            finally:
                rc = srv.stop()
            if why is None and rc != 0:
                why = "the server exited %s: %s" % (rc, srv.log_tail())
            return why
        return run

    def all_cases(self):
        self.case("spare-round-trip-answered-while-a-run-waits",
                  self.with_server(self.run_waits_case))
        self.case("spare-run-cancelled-while-it-waits", self.with_server(self.cancel_case))
        self.case("spare-deadline-takes-the-normal-path", self.with_server(self.deadline_case))
        self.case("spare-client-exits-while-a-run-waits", self.client_exit_case())
        self.case("spare-session-opened-while-it-waits", self.with_server(self.session_case))
        self.case("spare-session-closed-while-it-waits",
                  self.with_server(self.session_close_case))
        self.case("spare-not-made-while-a-session-cell-runs", self.session_quiet_case())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--only", action="append")
    attacks.run_suite(SpareSuite(ap.parse_args()))


if __name__ == "__main__":
    main()
