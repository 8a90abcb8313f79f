#!/usr/bin/env python3
"""rpc.py: drive a kiln server over stdio JSON-RPC for the sandbox tests.

  rpc.py KILN [--limits JSON] [--limits-last JSON] [--cancel-after S] [--stall S]
         [--one-by-one S] [--socket] LANG=FILE...

Starts KILN (a server), initializes, sends one snippet/run per LANG=FILE
(all at once; --limits-last: the last one's limits, instead of --limits;
with --one-by-one, each S seconds after the previous one's
reply, so that the server has built a warm box for it), optionally cancels them after S seconds, or stops reading
the server's output for S seconds (backpressure), and prints one JSON
object: {"replies": [...], "output": {runId: {stdout, stderr}},
"artifacts": [...], "rss_kb": [before, after] the stall}; each output entry also has "seq", the notifications'
[stream, text] in the order they came. Bounded: gives up after 120 s.
With --socket the server writes to a socket, not a pipe (it cannot splice
output there: every message goes through its queue).
"""
import json
import os
import socket
import subprocess
import sys
import time
import argparse

# tests/lib in the tree; beside this file when the suite has copied both
# somewhere an unprivileged user can read.
_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [_here, os.path.join(_here, "..", "lib")]
import kilnrpc  # noqa: E402


send = kilnrpc.send
recv = kilnrpc.recv


def collect(proc, ids, replies, output, artifacts):
    """Read until every id in ids has its reply (or 120 s have passed)."""
    deadline = time.time() + 120
    while any(i not in replies for i in ids) and time.time() < deadline:
        m = recv(proc.stdout)
        if m is None:
            break
        if m.get("method") == "run/output":
            p = m["params"]
            o = output.setdefault(p["runId"], {"stdout": [], "stderr": [], "chunks": 0,
                                               "seq": []})
            # Joined at the end: += on a growing string is quadratic, and
            # 32 MiB of output took the client 30 s.
            o[p["stream"]].append(p["text"])
            o["chunks"] += 1
            o["seq"].append([p["stream"], p["text"]])
        elif m.get("method") == "run/artifact":
            artifacts.append(m["params"])
        elif "id" in m and m["id"] in ids:
            replies[m["id"]] = m


def vm_rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kiln")
    ap.add_argument("--limits")
    ap.add_argument("--limits-last")
    ap.add_argument("--cancel-after", type=float)
    ap.add_argument("--stall", type=float)
    ap.add_argument("--config")
    ap.add_argument("--one-by-one", type=float)
    ap.add_argument("--socket", action="store_true")
    ap.add_argument("runs", nargs="+")
    a = ap.parse_args()
    cmd = [a.kiln] + (["--config", a.config] if a.config else [])
    if a.socket:
        ours, theirs = socket.socketpair()
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=theirs.fileno())
        theirs.close()
        proc.stdout = ours.makefile("rb")
    else:
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    send(proc, {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {"capabilities": {}}})
    init = recv(proc.stdout)
    assert init and "result" in init, init
    send(proc, {"jsonrpc": "2.0", "method": "initialized", "params": {}})
    ids = []
    replies, output, artifacts = {}, {}, []
    for i, spec in enumerate(a.runs):
        lang, _, path = spec.partition("=")
        with open(path) as f:
            code = f.read()
        # The sandbox is under test here, not the validator.
        params = {"language": lang, "code": code, "override": True}
        if a.limits:
            params["limits"] = json.loads(a.limits)
        if a.limits_last and i == len(a.runs) - 1:
            params["limits"] = json.loads(a.limits_last)
        if a.one_by_one is not None:
            time.sleep(a.one_by_one)
        send(proc, {"jsonrpc": "2.0", "id": i + 1, "method": "snippet/run", "params": params})
        ids.append(i + 1)
        if a.one_by_one is not None:
            collect(proc, [i + 1], replies, output, artifacts)
    rss = []
    if a.stall:
        # The server's resident memory before and at the end of the stall:
        # with its output paused it holds at most its queue's cap, not
        # what the program wrote meanwhile.
        rss.append(vm_rss_kb(proc.pid))
        time.sleep(a.stall)
        rss.append(vm_rss_kb(proc.pid))
    if a.cancel_after is not None:
        time.sleep(a.cancel_after)
        for i in ids:
            send(proc, {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": i}})
    collect(proc, ids, replies, output, artifacts)
    send(proc, {"jsonrpc": "2.0", "id": 999, "method": "shutdown"})
    send(proc, {"jsonrpc": "2.0", "method": "exit"})
    try:
        proc.stdin.close()
    except BrokenPipeError:
        pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
    for o in output.values():
        o["stdout"] = "".join(o["stdout"])
        o["stderr"] = "".join(o["stderr"])
    print(json.dumps({"replies": [replies.get(i) for i in ids], "output": output,
                      "artifacts": artifacts, "server_exit": proc.returncode,
                      "server_pid": proc.pid,
                      "rss_kb": rss}))


if __name__ == "__main__":
    main()
