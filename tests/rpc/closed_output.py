#!/usr/bin/env python3
"""closed_output.py: the client closes its read end (kiln's stdout) while a
run streams output. kiln must notice, stop the run and exit cleanly: no
sanitizer report, no process of its left behind.

Two cases. lines: the run prints lines; every newline needs a JSON escape,
so the output goes through the peer's queue and kiln notices on a write
(before that fix, the write error called the peer's closed callback from
inside rpc_peer_send, which stopped and freed the run that was still
flushing its output: a heap-use-after-free under ASan). room: the run
writes one endless clean run (no byte needing an escape), which the splice
relay carries; the client stops reading until its pipe is full to the last
byte with nothing queued in kiln, so the run waits for room in the
client's pipe (run_sink.c's relay room), and then closes its end. No write
is pending to hear EPIPE: kiln must notice the close on the wait itself,
without spinning (its CPU time after the close stays small), and exit.

Usage: closed_output.py KILN [lines|room] (the ASan build; lines by
default). Exit 0 on success."""
import ctypes
import json
import fcntl
import os
import select
import signal
import subprocess
import sys
import termios
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import kilnrpc  # noqa: E402

PR_SET_CHILD_SUBREAPER = 36


def orphans():
    """Live processes that were reparented to us: kiln's descendants that
    outlived it (we are their subreaper)."""
    me = os.getpid()
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        state, ppid = fields[0], int(fields[1])
        if ppid == me and state != "Z":
            found.append(int(d))
        elif ppid == me:
            os.waitpid(int(d), os.WNOHANG)
    return found


def descendants(root):
    """Pids of root's live descendants (kiln's sandbox boxes)."""
    parent = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/stat" % d) as f:
                    parent[int(d)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                pass
    found, todo = [], [root]
    while todo:
        p = todo.pop()
        kids = [c for c, pp in parent.items() if pp == p]
        found += kids
        todo += kids
    return found


def start(kiln):
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise SystemExit("cannot become a subreaper")
    return subprocess.Popen([kiln], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)


def finish(p, rc, boxed, what):
    """After kiln exited (rc): no sanitizer report, no crash, nothing left."""
    err = p.stderr.read().decode(errors="replace")
    p.stdin.close()
    bad = 0
    if "ERROR: AddressSanitizer" in err or "runtime error:" in err:
        print("sanitizer report:\n" + err[-4000:])
        bad = 1
    if rc < 0 or rc >= 128:
        print("kiln died of a signal or crashed: exit %d" % rc)
        bad = 1
    # Let a dying box finish dying, then nothing may be left.
    left = orphans()
    for _ in range(50):
        if not left:
            break
        time.sleep(0.1)
        left = orphans()
    if left:
        print("processes left behind: %s" % left)
        for pid in left:
            os.kill(pid, signal.SIGKILL)
        bad = 1
    if not bad:
        print("kiln exited %d after %s, its %d processes gone with it" % (rc, what, len(boxed)))
    return bad


def case_lines(kiln):
    p = start(kiln)
    kilnrpc.send(p, {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                     "params": {"processId": None, "capabilities": {}}})
    while kilnrpc.recv(p.stdout).get("id") != 1:
        pass
    # The run must still stream when the client closes, so outputBytes is
    # far above what the pipes and the server's queue hold. Under the
    # default 10 MiB a server that reads fast enough (a busy client, a
    # message coalescing up to 256 KiB) ends the run at the cap and
    # writes its reply before the client has read 20 outputs; kiln, with
    # nothing left to write and its stdin open, then has nothing to
    # notice the close with (seen: kiln idle, no run, nothing queued,
    # until the client's 20 s wait ran out).
    code = "import sys\nwhile True:\n    sys.stdout.write('x' * 4000 + '\\n')\n"
    kilnrpc.send(p, {"jsonrpc": "2.0", "id": 2, "method": "snippet/run",
                     "params": {"language": "python", "code": code,
                                "limits": {"wallMs": 20000, "outputBytes": 1 << 30}}})
    outputs = 0
    while outputs < 20:
        msg = kilnrpc.recv(p.stdout)
        if msg is None:
            print("kiln closed its output before streaming")
            return 1
        if msg.get("id") == 2:
            print("the run ended early: %s" % msg)
            return 1
        if msg.get("method") == "run/output":
            outputs += 1
    # The run is real: its box's processes are there to be cleaned up.
    boxed = descendants(p.pid)
    if not boxed:
        print("no process under kiln while its run streams")
        return 1
    # The client stops reading: kiln's next write fails with EPIPE.
    p.stdout.close()
    try:
        rc = p.wait(timeout=20)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        print("kiln did not exit after its output closed")
        return 1
    return finish(p, rc, boxed, "%d outputs" % outputs)


class Frames:
    """The client's side of kiln's stdout, read raw (no buffering of its
    own): whole messages, and how many bytes the one cut short lacks."""

    def __init__(self, fd):
        self.fd = fd
        self.data = b""

    def feed(self, b):
        msgs = []
        self.data += b
        while True:
            head, sep, rest = self.data.partition(b"\r\n\r\n")
            if not sep:
                return msgs
            n = int(head.split(b":")[1])
            if len(rest) < n:
                return msgs
            msgs.append(json.loads(rest[:n]))
            self.data = rest[n:]

    def missing(self):
        """Bytes still to come of the message cut short: 0 at a message's
        end, None when its header is not all there."""
        if not self.data:
            return 0
        head, sep, rest = self.data.partition(b"\r\n\r\n")
        if not sep:
            return None
        return int(head.split(b":")[1]) - len(rest)

    def read_all(self):
        """Every byte now in the pipe (the fd is non-blocking)."""
        msgs = []
        while True:
            try:
                b = os.read(self.fd, 1 << 20)
            except BlockingIOError:
                return msgs
            if not b:
                return msgs
            msgs += self.feed(b)


def unread(fd):
    n = ctypes.c_int()
    fcntl.ioctl(fd, termios.FIONREAD, n)
    return n.value


def cpu_ticks(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def kiln_end(pid, fd):
    """kiln's end of the client's pipe (kiln keeps its protocol fd aside:
    its fd 1 is stderr)."""
    ino = os.fstat(fd).st_ino
    for n in os.listdir("/proc/%d/fd" % pid):
        path = "/proc/%d/fd/%s" % (pid, n)
        try:
            if os.stat(path).st_ino == ino:
                return path
        except OSError:
            pass
    raise SystemExit("kiln's end of the client's pipe not found")


def stop(pid):
    """SIGSTOP kiln and wait until it is stopped."""
    os.kill(pid, signal.SIGSTOP)
    for _ in range(1000):
        with open("/proc/%d/stat" % pid) as f:
            if f.read().rsplit(")", 1)[1].split()[0] == "T":
                return
        time.sleep(0.01)
    raise SystemExit("kiln did not stop")


def settle(pid, fd, what):
    """Wait until kiln neither writes to the client's pipe nor uses CPU
    for half a second (its run paused); False after 30 s."""
    last = None
    for _ in range(300):
        now = (unread(fd), cpu_ticks(pid))
        if now == last:
            return True
        last = now
        time.sleep(0.5)
    print("kiln never stopped %s" % what)
    return False


def case_room(kiln):
    p = start(kiln)
    fd = p.stdout.fileno()
    frames = Frames(fd)
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                       "params": {"processId": None, "capabilities": {}}}).encode()
    p.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    p.stdin.flush()
    while not any(m.get("id") == 1 for m in frames.feed(os.read(fd, 65536))):
        pass
    size = fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ)
    code = "import os\nb = b'x' * 65536\nwhile True:\n    os.write(1, b)\n"
    kilnrpc.send(p, {"jsonrpc": "2.0", "id": 2, "method": "snippet/run",
                     "params": {"language": "python", "code": code,
                                "limits": {"wallMs": 120000, "outputBytes": 1 << 30}}})
    outputs = 0
    while outputs < 8:
        b = os.read(fd, 65536)
        if not b:
            print("kiln closed its output before streaming")
            return 1
        for m in frames.feed(b):
            if m.get("id") == 2:
                print("the run ended early: %s" % m)
                return 1
            if m.get("method") == "run/output":
                outputs += 1
    boxed = descendants(p.pid)
    if not boxed:
        print("no process under kiln while its run streams")
        return 1
    os.set_blocking(fd, False)
    # The client stops reading: its pipe fills and the run pauses, its
    # last message most likely part in the pipe, part in kiln's queue.
    # Then, with kiln stopped, the client empties its pipe and puts back
    # filler (standing in for text it has not read) so that the rest of
    # that message fills the pipe to its last byte: kiln's queue empties,
    # the run goes on, finds no room and waits for it, nothing queued.
    filler = os.open(kiln_end(p.pid, fd), os.O_WRONLY | os.O_NONBLOCK)
    for attempt in range(10):
        if not settle(p.pid, fd, "writing"):
            return 1
        stop(p.pid)
        frames.read_all()
        need = frames.missing()
        if need:
            left = size - need
        else:
            # At a message's end (or in a header): leave one byte, for
            # kiln to start the next message with, and look again.
            left = size - 1
        if unread(fd):
            print("kiln wrote while stopped")
            return 1
        while left:
            left -= os.write(filler, b"f" * min(left, 65536))
        frames.data = b""
        os.kill(p.pid, signal.SIGCONT)
        if need:
            break
    else:
        print("the client's pipe never held part of a message")
        return 1
    if not settle(p.pid, fd, "writing"):
        return 1
    # kiln idle with its run alive must mean no room for it: the pipe is
    # full. Full counts the pipe's slots, not its bytes: a slot holding a
    # spliced page takes no more bytes, so a full pipe can hold a little
    # less than its size (seen: 1046022 of 1048576). So ask the pipe
    # itself, through the filler's write end, whether a write would fit.
    room = select.poll()
    room.register(filler, select.POLLOUT)
    writable = room.poll(0)
    os.close(filler)
    if writable:
        print("kiln idles while the client's pipe has room: %d of %d bytes in it"
              % (unread(fd), size))
        return 1
    if not descendants(p.pid):
        print("the run ended while it waited for room")
        return 1
    # The run waits for room, kiln idle; the client closes its end.
    before = cpu_ticks(p.pid)
    hz = os.sysconf("SC_CLK_TCK")
    p.stdout.close()
    rc = None
    for _ in range(400):
        rc = p.poll()
        if rc is not None:
            break
        spent = cpu_ticks(p.pid) - before
        if spent > 2 * hz:
            print("kiln spins after the client closed its end: %.1f s of CPU" % (spent / hz))
            break
        time.sleep(0.05)
    if rc is None:
        p.kill()
        p.wait()
        print("kiln did not exit after its output closed while the run waited for room")
        return 1
    return finish(p, rc, boxed, "the run waited for room (%d outputs, %d stops)"
                  % (outputs, attempt + 1))


def main():
    kiln = sys.argv[1]
    which = sys.argv[2] if len(sys.argv) > 2 else "lines"
    return {"lines": case_lines, "room": case_room}[which](kiln)


if __name__ == "__main__":
    sys.exit(main())
