#!/usr/bin/env python3
"""session_decline.py: a session's view is honest (docs/protocol.md,
"workspace/declineChanges").

  session_decline.py KILN [--zygote]

A session's run creates, modifies and deletes files in its layer; the
person declines them (workspace/declineChanges) and the next run of the
session sees exactly the host folder's files; a declined change cannot be
applied afterwards. Accepting (workspace/applyChanges) a session run's
changes leaves the host and the session agreeing. A one-shot run's
changes are only forgotten; a change a later run changed again is kept,
with why. Uses session.py's server wrapper and counts (same --zygote).
Prints one "ok"/"not ok" line per check and "N passed, N failed" last.
"""
import json
import os
import shutil
import sys
import tempfile

_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [_here, os.path.join(_here, "..", "lib")]
import session as t  # noqa: E402

READ = ("import os\n"
        "print('notes', os.path.exists('notes.txt'))\n"
        "print('data', repr(open('data.csv').read()))\n"
        "print('old', repr(open('old.txt').read()) if os.path.exists('old.txt') else None)\n"
        "print('newdir', os.path.exists('newdir'))\n")


def host_read(proj):
    """What READ prints when the session shows the host folder."""
    def get(n):
        p = os.path.join(proj, n)
        return repr(open(p).read()) if os.path.exists(p) else None
    return ("notes %s\ndata %s\nold %s\nnewdir %s\n" %
            (os.path.exists(os.path.join(proj, "notes.txt")), get("data.csv"), get("old.txt"),
             os.path.exists(os.path.join(proj, "newdir"))))


def own(proj):
    # As root the box runs as nobody: the code changes the folder's
    # files in its layer only if they are nobody's.
    for d, _, fs in os.walk(proj):
        for q in [d] + [os.path.join(d, f) for f in fs]:
            if os.getuid() == 0:
                os.chown(q, 65534, 65534)


def main():
    tmp = tempfile.mkdtemp(prefix="kiln-decline-")
    os.chmod(tmp, 0o755)
    try:
        proj = os.path.join(tmp, "proj")
        os.makedirs(proj)
        open(os.path.join(proj, "data.csv"), "w").write("a,b\n1,2\n")
        open(os.path.join(proj, "old.txt"), "w").write("old\n")
        os.chmod(os.path.join(proj, "old.txt"), 0o640)
        own(proj)
        before = t.folder_state(proj)
        # allowOverride: one check breaks the driver on purpose.
        s = t.S(config={"validator": {"allowOverride": True}}, root=proj)
        sid = s.open()

        def changes(r):
            res = r.get("result") or {}
            return {os.path.relpath(c["path"], proj): c["kind"]
                    for c in res.get("workspaceChanges") or []}

        r1, _ = s.run({"sessionId": sid, "code":
                       "import os\nopen('notes.txt', 'w').write('mine\\n')\n"
                       "open('data.csv', 'a').write('3,4\\n')\nos.remove('old.txt')\n"
                       "os.makedirs('newdir/deep')\nopen('newdir/deep/x.txt', 'w').write('x')"})
        run1 = (r1.get("result") or {}).get("runId")
        t.check("decline: the session run reports its changes",
                changes(r1) == {"notes.txt": "created", "data.csv": "modified",
                                "old.txt": "deleted", "newdir/deep/x.txt": "created"},
                json.dumps(r1)[:600])
        d = s.call("workspace/declineChanges", {"runId": run1})
        res = d.get("result") or {}
        t.check("decline: every change of the run is declined, none kept",
                sorted(os.path.relpath(p, proj) for p in res.get("declined", [])) ==
                ["data.csv", "newdir/deep/x.txt", "notes.txt", "old.txt"] and
                res.get("kept") == [], json.dumps(d)[:600])
        r2, n2 = s.run({"sessionId": sid, "code": READ +
                        "import stat\nprint(oct(stat.S_IMODE(os.stat('old.txt').st_mode)))"})
        t.check("decline: the next session run sees exactly the host folder",
                t.stdout(n2) == host_read(proj) + "0o640\n" and
                "notes False" in t.stdout(n2) and "'a,b\\n1,2\\n'" in t.stdout(n2),
                json.dumps([t.stdout(n2), host_read(proj)]))
        t.check("decline: the next run does not report what declining did",
                changes(r2) == {}, json.dumps(r2)[:600])
        a = s.call("workspace/applyChanges", {"runId": run1})
        ar = a.get("result") or {}
        t.check("decline: a declined change can no longer be applied",
                ar.get("applied") == [] and len(ar.get("skipped", [])) == 4 and
                all("declined" in k["reason"] for k in ar["skipped"]) and
                t.folder_state(proj) == before, json.dumps(a)[:600])

        # Accepted: the host and the session agree.
        r3, _ = s.run({"sessionId": sid, "code":
                       "open('acc.txt', 'w').write('kept\\n')\n"
                       "open('data.csv', 'a').write('5,6\\n')"})
        run3 = (r3.get("result") or {}).get("runId")
        a = s.call("workspace/applyChanges", {"runId": run3})
        r4, n4 = s.run({"sessionId": sid, "code":
                        READ + "print('acc', repr(open('acc.txt').read()))"})
        host = host_read(proj) + "acc %r\n" % open(os.path.join(proj, "acc.txt")).read()
        t.check("accept: after applyChanges the session and the host agree",
                len((a.get("result") or {}).get("applied", [])) == 2 and
                t.stdout(n4) == host and "5,6" in host and changes(r4) == {},
                json.dumps([a, t.stdout(n4), host])[:800])
        d = s.call("workspace/declineChanges", {"runId": run3})
        t.check("accept: declining an applied change keeps it, saying so",
                (d.get("result") or {}).get("declined") == [] and
                all("applied already" in k["reason"] for k in d["result"]["kept"]),
                json.dumps(d)[:600])

        # A change a later run changed again is kept, with the run.
        r5, _ = s.run({"sessionId": sid, "code": "open('c.txt', 'w').write('a')"})
        r6, _ = s.run({"sessionId": sid, "code": "open('c.txt', 'a').write('b')"})
        run5, run6 = r5["result"]["runId"], r6["result"]["runId"]
        d = s.call("workspace/declineChanges", {"runId": run5})
        kept = (d.get("result") or {}).get("kept") or [{}]
        t.check("decline: a change a later run changed again is kept, naming that run",
                d["result"]["declined"] == [] and run6 in kept[0].get("reason", ""),
                json.dumps(d)[:600])
        d = s.call("workspace/declineChanges",
                   {"runId": run6, "paths": [os.path.join(proj, "c.txt"), "/nope"]})
        _, n = s.run({"sessionId": sid, "code": "import os\nprint(os.path.exists('c.txt'))"})
        t.check("decline: paths picks the changes; one that is no change of the run is kept",
                d["result"]["declined"] == [os.path.join(proj, "c.txt")] and
                d["result"]["kept"] == [{"path": "/nope", "reason": "not a change of this run"}]
                and t.stdout(n) == "False\n", json.dumps([d, n])[:600])

        # The driver is not trusted: code that broke its decline op
        # leaves the change in the layer, and kiln says the session keeps it.
        r, n = s.run({"sessionId": sid, "code":
                      "import gc\nfor f in gc.get_objects():\n"
                      "    if getattr(f, '__name__', '') == '_decline_one' and "
                      "hasattr(f, '__globals__'):\n"
                      "        f.__globals__['_decline_one'] = lambda it: None\n"
                      "open('z.txt', 'w').write('z')"})
        d = s.call("workspace/declineChanges", {"runId": r["result"]["runId"]})
        _, n = s.run({"sessionId": sid, "code": "import os\nprint(os.path.exists('z.txt'))"})
        kept = (d.get("result") or {}).get("kept") or [{}]
        t.check("decline: a change the session still shows is kept, saying so",
                d["result"]["declined"] == [] and
                kept[0].get("path") == os.path.join(proj, "z.txt") and
                "still shows" in kept[0].get("reason", "") and t.stdout(n) == "True\n",
                json.dumps([d, n])[:600])

        # The folder's bytes travel into the box at most 4 MiB at once: a
        # larger file is kept, and said.
        big = os.path.join(proj, "big.bin")
        open(big, "wb").write(b"\0" * (5 << 20))
        own(proj)
        r, _ = s.run({"sessionId": sid, "code": "open('big.bin', 'ab').write(b'x')"})
        d = s.call("workspace/declineChanges", {"runId": r["result"]["runId"]})
        _, n = s.run({"sessionId": sid, "code": "import os\nprint(os.path.getsize('big.bin'))"})
        kept = (d.get("result") or {}).get("kept") or [{}]
        t.check("decline: a folder's file over 4 MiB is kept, saying why",
                d["result"]["declined"] == [] and kept[0].get("path") == big and
                "too large" in kept[0].get("reason", "") and
                t.stdout(n) == "%d\n" % ((5 << 20) + 1), json.dumps([d, n])[:600])

        # A one-shot run's changes: only forgotten.
        r, _ = s.run({"language": "python", "code": "open('one.txt', 'w').write('1')"})
        rid = r["result"]["runId"]
        d = s.call("workspace/declineChanges", {"runId": rid})
        a = s.call("workspace/applyChanges", {"runId": rid})
        t.check("decline: a one-shot run's change is forgotten and cannot be applied",
                d["result"]["declined"] == [os.path.join(proj, "one.txt")] and
                a["result"]["applied"] == [] and
                not os.path.exists(os.path.join(proj, "one.txt")), json.dumps([d, a])[:600])
        d = s.call("workspace/declineChanges", {"runId": "r-none"})
        t.check("decline: an unknown run is an error", "error" in d, json.dumps(d))
        s.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("%d passed, %d failed" % (t.passed, t.failed))


if __name__ == "__main__":
    main()
