#!/usr/bin/env python3
"""roots.py: `kiln mcp` sees the project an MCP client names (issue 34).

    roots.py --kiln KILN

Drives a real `kiln mcp` over stdio (newline-delimited JSON, as MCP's
stdio transport frames it), as an MCP client would: a client that offers
roots answers kiln's roots/list with a project folder holding sales.csv,
.env and a key, while kiln runs in another folder. Checks: run_code reads
sales.csv with pandas from the client's root and never sees .env; a
session keeps x between two calls (and hides .env too); close_session
ends it; notifications/roots/list_changed switches the root (the first
file:// root of several), a call sent right behind it waiting for the new
answer; a client without roots, one whose roots/list fails and a
stateless (2026-07-28) client get the server's working directory; a
write stays in the sandbox and is listed. Each case prints "ok NAME" or
"not ok NAME: why"; the last line is "N passed, N failed". Run as root
and as nobody by tests/suites/58-mcp.sh.
"""
import argparse
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse

SALES = "month,total\nJan,10\nFeb,20\nMar,30\n"
SALES2 = "month,total\nApr,400\nMay,500\n"
SECRET = "API_KEY=sk-live-do-not-leak-4242"
MODERN = "2026-07-28"
META = "io.modelcontextprotocol/protocolVersion"
results = []

READ_SALES = ("import os\nimport pandas as pd\ndf = pd.read_csv('sales.csv')\n"
              "print(int(df['total'].sum()))\nprint(os.getcwd())\n")
PEEK_ENV = ("import os\nfor n in ('.env', 'id_rsa'):\n"
            "    try:\n        print(n, repr(open(n).read()))\n"
            "    except OSError as e:\n        print(n, 'hidden', type(e).__name__)\n")


def check(name, ok, why=""):
    results.append(bool(ok))
    print(("ok " if ok else "not ok ") + name + ("" if ok else ": " + why), flush=True)


def uri(p):
    return "file://" + urllib.parse.quote(p)


def make_project(tmp, name, sales):
    p = os.path.join(tmp, name)
    os.makedirs(p)
    for rel, text in {"sales.csv": sales, ".env": SECRET + "\n", "id_rsa": SECRET + "\n"}.items():
        with open(os.path.join(p, rel), "w") as f:
            f.write(text)
        os.chmod(os.path.join(p, rel), 0o644)
    os.chmod(p, 0o755)
    return p


def listing(p):
    """Every name under p with its bytes: what the host folder holds."""
    out = {}
    for d, _, fs in os.walk(p):
        for n in fs:
            q = os.path.join(d, n)
            with open(q, "rb") as f:
                out[os.path.relpath(q, p)] = f.read()
    return out


class Mcp:
    """kiln mcp on pipes. roots: the list it answers roots/list with (None:
    the client offers no roots; "error": it answers with an error).
    modern: no handshake; each request names 2026-07-28 in _meta."""

    def __init__(self, kiln, cwd, home, roots=None, modern=False):
        env = {"PATH": "/usr/bin:/bin", "HOME": home, "LANG": "C.UTF-8",
               "XDG_CONFIG_HOME": home, "XDG_STATE_HOME": home, "XDG_CACHE_HOME": home}
        if "ASAN_OPTIONS" in os.environ:
            env["ASAN_OPTIONS"] = os.environ["ASAN_OPTIONS"]
        self.p = subprocess.Popen([kiln, "mcp"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                  cwd=cwd, env=env)
        self.id = 0
        self.roots = roots
        self.modern = modern
        self.roots_asked = 0
        self.roots_delay = 0.0  # seconds before answering roots/list
        self.pending = b""
        if not modern:
            caps = {} if roots is None else {"roots": {"listChanged": True}}
            self.init = self.call("initialize", {
                "protocolVersion": "2025-11-25", "capabilities": caps,
                "clientInfo": {"name": "roots.py", "version": "1"}})
            self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, msg):
        self.p.stdin.write(json.dumps(msg).encode() + b"\n")
        self.p.stdin.flush()

    def read(self, deadline):
        while b"\n" not in self.pending:
            left = deadline - time.time()
            if left <= 0:
                raise TimeoutError("no message from kiln")
            r, _, _ = select.select([self.p.stdout], [], [], left)
            if not r:
                continue
            chunk = os.read(self.p.stdout.fileno(), 65536)
            if not chunk:
                raise EOFError("kiln closed its output")
            self.pending += chunk
        line, _, self.pending = self.pending.partition(b"\n")
        return json.loads(line)

    def answer_roots(self, msg):
        """A request from kiln: roots/list is answered as the client's
        roots say; anything else is method-not-found."""
        self.roots_asked += 1
        if self.roots_delay:
            time.sleep(self.roots_delay)
        if msg.get("method") == "roots/list" and isinstance(self.roots, list):
            self.send({"jsonrpc": "2.0", "id": msg["id"], "result": {"roots": self.roots}})
        else:
            self.send({"jsonrpc": "2.0", "id": msg["id"],
                       "error": {"code": -32601, "message": "no roots here"}})

    def call(self, method, params, timeout=120):
        self.id += 1
        if self.modern:
            params = dict(params)
            params["_meta"] = {META: MODERN, "io.modelcontextprotocol/clientCapabilities":
                               {"roots": {}}}
        self.send({"jsonrpc": "2.0", "id": self.id, "method": method, "params": params})
        deadline = time.time() + timeout
        while True:
            m = self.read(deadline)
            if "method" in m and "id" in m:
                self.answer_roots(m)
            elif m.get("id") == self.id and "method" not in m:
                return m

    def tool(self, name, **args):
        m = self.call("tools/call", {"name": name, "arguments": args})
        if "result" not in m:
            raise AssertionError("tools/call %s: %s" % (name, m.get("error")))
        r = m["result"]
        r["text"] = "".join(c.get("text", "") for c in r.get("content", []))
        return r

    def run(self, code, **args):
        return self.tool("run_code", language="python", code=code, **args)

    def close(self):
        try:
            self.p.stdin.close()
        except OSError:
            pass
        try:
            self.p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
        return self.p.returncode


def stdout(r):
    return (r.get("structuredContent") or {}).get("stdout", "")


def sees_no_secret(r):
    return SECRET not in r["text"] and "hidden" in stdout(r)


def roots_cases(kiln, tmp, home, proj, proj2, elsewhere):
    before = listing(proj)
    k = Mcp(kiln, elsewhere, home, roots=[{"uri": uri(proj), "name": "sales"}])
    try:
        r = k.run(READ_SALES)
        check("roots: run_code reads sales.csv with pandas in the client's root",
              stdout(r) == "60\n%s\n" % proj and not r["isError"] and k.roots_asked == 1,
              "asked %d times; %s" % (k.roots_asked, r["text"][:600]))
        check("roots: the result names the workspace",
              r["structuredContent"].get("workspace") == proj, json.dumps(r["structuredContent"]))
        r = k.run(PEEK_ENV)
        check("roots: run_code never sees .env or a key", sees_no_secret(r), r["text"][:600])

        o = k.tool("open_session")
        sid = (o.get("structuredContent") or {}).get("session")
        check("session: open_session gives an id in the client's root",
              sid and not o["isError"] and o["structuredContent"].get("workspace") == proj,
              json.dumps(o)[:600])
        r1 = k.run("x = 1\n", session=sid)
        r2 = k.run("print(x)\n", session=sid)
        check("session: x = 1 then print(x) prints 1", not r1["isError"] and stdout(r2) == "1\n"
              and not r2["isError"], r1["text"][:300] + " | " + r2["text"][:300])
        r3 = k.run("print(x)\n")
        check("session: a call without session does not see x",
              r3["isError"] and "NameError" in r3["text"], r3["text"][:300])
        r = k.run(READ_SALES + PEEK_ENV, session=sid)
        check("session: reads sales.csv, never sees .env",
              stdout(r).startswith("60\n%s\n" % proj) and sees_no_secret(r), r["text"][:600])
        r = k.run("x\n", session=sid)
        check("session: a last expression's value is shown", "--- value ---\n1\n" in r["text"],
              r["text"][:300])
        c = k.tool("close_session", session=sid)
        r = k.run("print(x)\n", session=sid)
        check("session: close_session ends it", not c["isError"] and r["isError"]
              and "no session" in r["text"], c["text"] + " | " + r["text"][:300])

        r = k.run("open('notes.txt', 'w').write('hi')\nprint(open('notes.txt').read())\n")
        ch = r["structuredContent"].get("workspaceChanges") or []
        check("roots: a write stays in the sandbox and is listed",
              stdout(r) == "hi\n" and listing(proj) == before
              and any(c["path"] == os.path.join(proj, "notes.txt") and c["kind"] == "created"
                      for c in ch) and "created %s/notes.txt" % proj in r["text"],
              r["text"][:600])

        # The roots change: the first file:// root of the new list; a call
        # sent right behind the notification waits for the new answer
        # (held back a second here, longer than the check takes).
        k.roots = [{"uri": "https://example.com/not-a-folder"}, {"uri": uri(proj2)},
                   {"uri": uri(proj)}]
        k.roots_delay = 1.0
        k.send({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"})
        r = k.run(READ_SALES + PEEK_ENV)
        check("list_changed: the first file:// root becomes the workspace",
              stdout(r).startswith("900\n%s\n" % proj2) and k.roots_asked == 2
              and sees_no_secret(r), "asked %d times; %s" % (k.roots_asked, r["text"][:600]))
        k.roots_delay = 0.0
    finally:
        rc = k.close()
    check("roots: kiln mcp exits 0 when stdin closes", rc == 0, "exit %s" % rc)


def fallback_cases(kiln, tmp, home, proj):
    for label, kw in (("no roots", {}), ("roots/list fails", {"roots": "error"}),
                      ("stateless 2026-07-28", {"modern": True})):
        k = Mcp(kiln, proj, home, **kw)
        try:
            r = k.run(READ_SALES + PEEK_ENV)
            check("cwd (%s): run_code reads sales.csv in the working directory" % label,
                  stdout(r).startswith("60\n%s\n" % proj) and sees_no_secret(r)
                  and r["structuredContent"].get("workspace") == proj
                  and k.roots_asked == (1 if label == "roots/list fails" else 0),
                  "asked %d; %s" % (k.roots_asked, r["text"][:600]))
            if kw.get("modern"):
                o = k.tool("open_session")
                sid = (o.get("structuredContent") or {}).get("session")
                k.run("x = 41\n", session=sid)
                r = k.run("print(x + 1)\n", session=sid)
                check("cwd (%s): a session keeps x" % label,
                      stdout(r) == "42\n" and r.get("resultType") == "complete",
                      r["text"][:300])
        finally:
            k.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln", required=True)
    a = ap.parse_args()
    kiln = os.path.abspath(a.kiln)
    tmp = tempfile.mkdtemp(prefix="kiln-mcp-roots-")
    os.chmod(tmp, 0o755)
    try:
        home = os.path.join(tmp, "home")
        os.makedirs(home)
        proj = make_project(tmp, "proj", SALES)
        proj2 = make_project(tmp, "proj2", SALES2)
        elsewhere = make_project(tmp, "elsewhere", "month,total\nJun,1\n")
        roots_cases(kiln, tmp, home, proj, proj2, elsewhere)
        fallback_cases(kiln, tmp, home, proj)
    except (EOFError, TimeoutError, AssertionError, OSError) as e:
        check("the harness ran to its end", False, "%s: %s" % (type(e).__name__, e))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    passed = sum(results)
    print("%d passed, %d failed" % (passed, len(results) - passed))
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
