#!/usr/bin/env python3
"""client_gone.py: an editor starts kiln and is then killed, while kiln's
stdin stays open (here the test holds the pipe's write end, as a
grandchild or a shared pipe would). kiln must notice the editor's end and
exit, for the process named by --clientProcessId and for initialize's
processId alike.

The "editor" is a real process: sh, which starts kiln as its child and
waits. The test is kiln's subreaper, so once sh is killed it can wait for
kiln and read its exit code.

Usage: client_gone.py KILN. Exit 0 on success."""
import ctypes
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import kilnrpc  # noqa: E402

PR_SET_CHILD_SUBREAPER = 36


def send(fd, msg):
    body = json.dumps(msg).encode()
    os.write(fd, b"Content-Length: %d\r\n\r\n" % len(body) + body)


def one(kiln, how):
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    args = "--stdio --clientProcessId=$$" if how == "option" else "--stdio"
    # kiln gets sh's stdin through fd 3: sh gives a background job
    # /dev/null as its stdin, before the job's own redirections.
    editor = subprocess.Popen(
        ["sh", "-c", 'exec 3<&0; "$0" %s <&3 3<&- & echo $! >&2; wait' % args, kiln],
        stdin=in_r, stdout=out_w, stderr=subprocess.PIPE)
    os.close(in_r)
    os.close(out_w)
    kiln_pid = int(editor.stderr.readline())
    send(in_w, {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"processId": editor.pid if how == "initialize" else None,
                           "capabilities": {}}})
    reply = kilnrpc.recv(os.fdopen(out_r, "rb", buffering=0))
    if not reply or reply.get("id") != 1 or "result" not in reply:
        print("%s: no initialize reply: %s" % (how, reply))
        return 1
    # The editor dies; kiln's stdin is still open (in_w).
    editor.send_signal(signal.SIGKILL)
    editor.wait()
    t0 = time.monotonic()
    rc = None
    while time.monotonic() - t0 < 10:
        pid, status = os.waitpid(kiln_pid, os.WNOHANG)
        if pid == kiln_pid:
            rc = os.waitstatus_to_exitcode(status)
            break
        time.sleep(0.02)
    os.close(in_w)
    if rc is None:
        os.kill(kiln_pid, signal.SIGKILL)
        os.waitpid(kiln_pid, 0)
        print("%s: kiln still ran 10 s after its client process died" % how)
        return 1
    ms = (time.monotonic() - t0) * 1000
    if rc != 1:
        print("%s: kiln exited %d, not 1 (no shutdown)" % (how, rc))
        return 1
    print("%s: kiln exited %d, %.0f ms after its client process died" % (how, rc, ms))
    return 0


def main():
    kiln = sys.argv[1]
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        print("cannot become a subreaper")
        return 1
    return one(kiln, "option") | one(kiln, "initialize")


if __name__ == "__main__":
    sys.exit(main())
