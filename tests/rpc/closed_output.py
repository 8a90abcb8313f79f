#!/usr/bin/env python3
"""closed_output.py: the client closes its read end (kiln's stdout) while a
run streams output. kiln must notice on a write, stop the run and exit
cleanly: no sanitizer report, no process of its left behind.

Before the fix, the write error called the peer's closed callback from
inside rpc_peer_send, which stopped and freed the run that was still
flushing its output: a heap-use-after-free under ASan.

Usage: closed_output.py KILN (the ASan build). Exit 0 on success."""
import ctypes
import os
import signal
import sys
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


def main():
    kiln = sys.argv[1]
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        print("cannot become a subreaper")
        return 1
    import subprocess
    p = subprocess.Popen([kiln], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    kilnrpc.send(p, {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                     "params": {"processId": None, "capabilities": {}}})
    while kilnrpc.recv(p.stdout).get("id") != 1:
        pass
    code = "import sys\nwhile True:\n    sys.stdout.write('x' * 4000 + '\\n')\n"
    # outputBytes far above what the pipes and the server's queue hold:
    # with the default 10 MiB, a server that reads fast enough could end
    # the run at the cap (and reply) before the client has read 20
    # outputs, and would then have nothing left to write to find the
    # closed end with.
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
        print("kiln exited %d after %d outputs, its %d processes gone with it"
              % (rc, outputs, len(boxed)))
    return bad


if __name__ == "__main__":
    sys.exit(main())
