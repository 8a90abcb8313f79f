#!/usr/bin/env python3
"""queue.py: a client that writes requests and never reads the replies.
kiln must stop reading its input while its output queue is over the
high-water mark, so its memory stays bounded, and serve normally once the
client reads again.

Before the output queue had a cap, 50,000 requests with 4 KB ids grew kiln
to 211 MB (every reply echoes its id and waited in the queue).

Usage: queue.py [--bench] SERVER [ARG...]. Prints the peak RSS; exit 0 on
success. With --bench, checks nothing and prints only "PEAK_KB BASE_KB",
for tests/bench/queue.sh, which runs another server the same way."""
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import kilnrpc  # noqa: E402

N = 50000
ID_BYTES = 4096
# The queue's high-water mark is 8 MiB and its ceiling 64 MiB; one read
# burst adds at most about 1 MiB of replies. 48 MiB over the idle server
# leaves room for allocator slack and is far below the 200 MB of old.
BOUND_KB = 48 * 1024


def status_kb(pid, field):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def main():
    argv = sys.argv[1:]
    bench = argv[:1] == ["--bench"]
    if bench:
        argv = argv[1:]
    srv = kilnrpc.Server(argv[0], args=argv[1:])
    pid = srv.p.pid
    base = status_kb(pid, "VmHWM")
    pad = "x" * (ID_BYTES - 16)
    sent = [0]

    def writer():
        try:
            for i in range(N):
                body = json.dumps({"jsonrpc": "2.0", "id": "%s-%08d" % (pad, i),
                                   "method": "nope/nothing"}).encode()
                srv.p.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
                sent[0] = i + 1
            srv.p.stdin.flush()
        except BrokenPipeError:
            pass

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    # The client does not read. kiln must stop reading too: the writer
    # then blocks on a full pipe, long before all requests are out.
    last, still = -1, 0
    while still < 10 and t.is_alive():
        time.sleep(0.2)
        still = still + 1 if sent[0] == last else 0
        last = sent[0]
    paused_at = sent[0]
    peak_stalled = status_kb(pid, "VmHWM")
    # Now read every reply; the writer resumes as kiln does.
    got = 0
    while got < N:
        msg = srv.read()
        if "id" in msg:
            if msg.get("error", {}).get("code") != -32601:
                print("unexpected reply: %s" % json.dumps(msg)[:200])
                return 1
            got += 1
    t.join()
    peak = status_kb(pid, "VmHWM")
    # Healthy afterwards: an ordinary request is answered and the session
    # ends cleanly.
    rc = srv.close()
    if bench:
        print("%d %d" % (peak, base))
        return 0
    print("kiln idle %d KiB; stalled after %d of %d requests at peak %d KiB; "
          "peak after all %d replies %d KiB (+%d KiB); exit %d"
          % (base, paused_at, N, peak_stalled, got, peak, peak - base, rc))
    bad = 0
    if paused_at >= N:
        print("kiln read every request while nobody read its replies")
        bad = 1
    if peak - base > BOUND_KB:
        print("peak RSS grew by %d KiB, over the bound of %d KiB" % (peak - base, BOUND_KB))
        bad = 1
    if rc != 0:
        print("kiln exited %d after shutdown and exit" % rc)
        bad = 1
    return bad


if __name__ == "__main__":
    sys.exit(main())
