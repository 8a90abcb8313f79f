#!/usr/bin/env python3
"""data_story.py: the README's own example, end to end through the
protocol (issue 12): a project folder with sales.csv; "plot monthly totals
from sales.csv" reads it by relative path in a session and its figure
arrives as run/display image/png; "show the first 5 rows" in the same
session uses the DataFrame the first run loaded; a file the code writes
comes back in workspaceChanges while the host folder is unchanged; the
hidden .env cannot be read. The model is tests/fake-model/fake_model.py
(answers [[answer:plot]] and [[answer:head]]).

    data_story.py KILN MODEL_URL

Prints "ok NAME" or "FAIL NAME: why" per check; last line
"data-story: N passed, N failed"."""
import base64
import hashlib
import os
import re
import shutil
import sys
import tempfile
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import kilnrpc  # noqa: E402

kiln, model_url = sys.argv[1], sys.argv[2]
passed = failed = 0
SECRET = "API_KEY=sk-data-story-secret"


def check(name, cond, why=""):
    global passed, failed
    if cond:
        passed += 1
        print("ok " + name, flush=True)
    else:
        failed += 1
        print("FAIL %s: %s" % (name, str(why)[:600]), flush=True)


def tree(p):
    """Every name under p with its bytes' hash: the host folder's state."""
    out = {}
    for d, dirs, files in os.walk(p):
        for n in dirs + files:
            q = os.path.join(d, n)
            if os.path.isfile(q):
                with open(q, "rb") as f:
                    out[os.path.relpath(q, p)] = hashlib.sha256(f.read()).hexdigest()
            else:
                out[os.path.relpath(q, p)] = "dir"
    return out


tmp = tempfile.mkdtemp(prefix="kiln-data-story-")
os.chmod(tmp, 0o755)  # as root, the box runs as nobody and must read it
proj = os.path.join(tmp, "shop")
os.mkdir(proj)
os.chmod(proj, 0o755)
rows = ["date,amount"]
for month, n in ((1, 3), (2, 4), (3, 5)):
    for day in range(1, n + 1):
        rows.append("2026-%02d-%02d,%d" % (month, day, month * 10 + day))
with open(os.path.join(proj, "sales.csv"), "w") as f:
    f.write("\n".join(rows) + "\n")
with open(os.path.join(proj, ".env"), "w") as f:
    f.write(SECRET + "\n")
before = tree(proj)

env = dict(os.environ, XDG_CONFIG_HOME=os.path.join(tmp, "config"),
           XDG_STATE_HOME=os.path.join(tmp, "state"), XDG_CACHE_HOME=os.path.join(tmp, "cache"))
for k in list(env):
    if k.startswith("KILN_"):
        del env[k]
p = kilnrpc.subprocess.Popen([kiln], stdin=kilnrpc.subprocess.PIPE,
                             stdout=kilnrpc.subprocess.PIPE, env=env)
next_id = [0]
notes = []


def call(method, params):
    next_id[0] += 1
    kilnrpc.send(p, {"jsonrpc": "2.0", "id": next_id[0], "method": method, "params": params})
    while True:
        m = kilnrpc.recv(p.stdout)
        if m is None:
            raise EOFError("kiln closed its output")
        if m.get("id") == next_id[0] and "method" not in m:
            return m
        if "method" in m:
            notes.append(m)


def displays(run_id):
    return [n["params"] for n in notes
            if n["method"] == "run/display" and n["params"].get("runId") == run_id]


def output(run_id):
    return "".join(n["params"].get("text", "") for n in notes
                   if n["method"] == "run/output" and n["params"].get("runId") == run_id)


try:
    r = call("initialize", {"processId": None, "capabilities": {},
                            "rootUri": "file://" + urllib.parse.quote(proj),
                            "initializationOptions": {"llm": {"provider": "ollama", "url": model_url,
                                                              "model": "fake-coder"}}})
    check("initialize", "result" in r, r)
    kilnrpc.send(p, {"jsonrpc": "2.0", "method": "initialized", "params": {}})
    r = call("session/open", {"language": "python"})
    sid = (r.get("result") or {}).get("sessionId")
    check("session-opens", sid, r)

    def ask(intent):
        r = call("intent/run", {"intent": intent, "language": "python", "sessionId": sid})
        prop = r.get("result") or {}
        if not prop.get("proposalId"):
            return r, None
        del notes[:]
        return prop, call("intent/approve", {"proposalId": prop["proposalId"]})

    # 1. "plot monthly totals from sales.csv": read by relative path, a PNG.
    prop, r = ask("plot monthly totals from sales.csv [[answer:plot]]")
    res = (r or {}).get("result") or {}
    run_id = (res.get("run") or res).get("runId") if isinstance(res.get("run"), dict) else res.get("runId")
    run_ids = {n["params"].get("runId") for n in notes if n["method"] in ("run/display", "run/output")}
    check("plot-runs-ok", res.get("ok") is True, r or prop)
    pngs = [d for n in notes if n["method"] == "run/display"
            for d in [n["params"]] if "image/png" in (d.get("data") or {})]
    check("plot-arrives-as-run/display-png", pngs and
          base64.b64decode(pngs[0]["data"]["image/png"])[:8] == b"\x89PNG\r\n\x1a\n",
          [n["params"] for n in notes if n["method"] == "run/display"] or notes[-5:])
    out = "".join(n["params"].get("text", "") for n in notes if n["method"] == "run/output")
    check("plot-read-the-csv-by-relative-path", "months 3" in out, out)

    # 2. "show the first 5 rows": the same session's DataFrame.
    prop, r = ask("show the first 5 rows [[answer:head]]")
    res = (r or {}).get("result") or {}
    check("head-runs-ok", res.get("ok") is True, r or prop)
    htmls = [n["params"]["data"]["text/html"] for n in notes if n["method"] == "run/display"
             and "text/html" in (n["params"].get("data") or {})]
    check("head-displays-the-session's-dataframe-as-html",
          htmls and "<table" in htmls[-1] and "amount" in htmls[-1] and "2026-01-01" in htmls[-1],
          [n["params"] for n in notes if n["method"] == "run/display"] or notes[-5:])
    plain = [n["params"]["data"]["text/plain"] for n in notes if n["method"] == "run/display"]
    check("head-shows-5-rows", plain and plain[-1].count("2026-") == 5, plain)

    # 3. A file the code writes in the session (with the DataFrame loaded
    # before) comes back as that run's change; the host is untouched.
    del notes[:]
    r = call("snippet/run", {"language": "python", "sessionId": sid,
                             "code": "open('total.txt', 'w').write(str(df.amount.sum()) + '\\n')\n"})
    res = r.get("result") or {}
    ch = {c.get("path"): c for c in res.get("workspaceChanges") or []}
    total = sum(int(x.split(",")[1]) for x in rows[1:])
    check("written-file-in-workspaceChanges",
          ch.get(os.path.join(proj, "total.txt"), {}).get("kind") == "created", res)
    edit = str(res.get("workspaceEdit"))
    check("workspaceEdit-holds-its-text", str(total) in edit, edit)
    check("host-folder-unchanged", tree(proj) == before, sorted(set(tree(proj)) ^ set(before)))

    # 4. The hidden .env.
    del notes[:]
    r = call("snippet/run", {"language": "python",
                             "code": "try:\n    print(open('.env').read())\n"
                                     "except OSError as e:\n    print('refused', e.errno)\n"})
    out = "".join(n["params"].get("text", "") for n in notes if n["method"] == "run/output")
    check("env-cannot-be-read", "refused" in out and SECRET not in out, out)
    call("session/close", {"sessionId": sid})
    r = call("shutdown", None)
    kilnrpc.send(p, {"jsonrpc": "2.0", "method": "exit"})
    check("kiln-exits-cleanly", p.wait(timeout=30) == 0)
except Exception as e:  # a harness error is a failure, never a pass
    check("no-harness-error", False, repr(e))
    p.kill()


def shell_story():
    """The same story through `kiln shell` on a pty, in the project folder:
    the shell's session, the PNG saved under $XDG_CACHE_HOME/kiln/ with its
    path printed, the written file offered (and declined), .env refused."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
    import shell_session as sh  # noqa: E402  (its Pty; argv[1] is kiln here too)
    cache = os.path.join(tmp, "shell-cache")
    env = {"PATH": "/usr/bin:/bin", "HOME": tmp, "TERM": "dumb", "NO_COLOR": "1",
           "LANG": "C.UTF-8", "XDG_CACHE_HOME": cache,
           "XDG_STATE_HOME": os.path.join(tmp, "shell-state"),
           "XDG_CONFIG_HOME": os.path.join(tmp, "shell-config"),
           "KILN_LLM_URL": model_url, "KILN_MODEL": "fake-coder"}
    cwd = os.getcwd()
    os.chdir(proj)  # kiln shell's workspace is the current directory
    try:
        t = sh.Pty([os.path.abspath(os.path.join(cwd, kiln)), "shell"], env)
    finally:
        os.chdir(cwd)
    try:
        check("shell-starts", t.read_until(r"kiln> ", 60), t.text()[-600:])
        sh.step(t, "plot monthly totals from sales.csv [[answer:plot]]", r"\[r/e/s\]", 60)
        ok, out = sh.step(t, "r", r"ok: exit 0|exit [1-9]", 120)
        m = re.search(r"display image/png saved: (\S+\.png)", out)
        png = m.group(1) if m else ""
        check("shell-plot-reads-the-csv-by-relative-path", ok and "months 3" in out, out)
        check("shell-plot-png-saved-under-the-cache",
              png.startswith(cache + "/kiln/") and os.path.isfile(png) and
              open(png, "rb").read(8) == b"\x89PNG\r\n\x1a\n", out)
        sh.step(t, "show the first 5 rows [[answer:head]]", r"\[r/e/s\]", 60)
        ok, out = sh.step(t, "r", r"ok: exit 0|exit [1-9]", 120)
        check("shell-head-uses-the-session's-dataframe",
              ok and out.count("2026-") == 5 and "amount" in out and "NameError" not in out, out)
        ok, out = sh.step(t, ":run open('total.txt', 'w').write(str(df.amount.sum()) + '\\n')",
                          r"\[y/N\]", 120)
        check("shell-written-file-offered-as-a-change",
              ok and "total.txt" in out and "created" in out, out)
        ok, out = sh.step(t, "n", r"the session dropped \S*total.txt|still holds")
        check("shell-host-folder-unchanged", ok and tree(proj) == before and
              not os.path.exists(os.path.join(proj, "total.txt")),
              sorted(set(tree(proj)) ^ set(before)))
        check("shell-declined-change-dropped-from-the-session",
              "the session dropped %s" % os.path.join(proj, "total.txt") in out, out)
        ok, out = sh.step(t, ":run import os; print('total', os.path.exists('total.txt'))",
                          r"ok: exit 0|exit [1-9]")
        check("shell-declined-change-not-seen-by-the-next-run", ok and "total False" in out,
              out)
        ok, out = sh.step(t, ":run print(open('.env').read())", r"exit [0-9]")
        check("shell-env-cannot-be-read", ok and SECRET not in out and
              ("FileNotFoundError" in out or "PermissionError" in out), out)
        t.send(":quit\r")
        st = t.wait()
        check("shell-quits-cleanly", st is not None and os.WIFEXITED(st) and
              os.WEXITSTATUS(st) == 0, "status %s" % st)
    except Exception as e:  # a harness error is a failure, never a pass
        check("shell-no-harness-error", False, repr(e))


try:
    shell_story()
finally:
    shutil.rmtree(tmp, ignore_errors=True)
print("data-story: %d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
