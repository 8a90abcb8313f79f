#!/usr/bin/env python3
"""story_e2e.py: the README's data story as a person does it, end to end
(issue 34), run by tests/suites/72-data-story.sh once as root and once as a
normal user (the server, the shell and the project folder all that user's):

  load sales.csv, plot monthly totals, plt.savefig('monthly.png') into the
  project, append a row to sales.csv; the PNG and the changed CSV are
  listed with their sizes, the person approves, and both are then in the
  folder byte for byte as the run wrote them; .env is never read.

Twice: through the protocol (intent/run + intent/approve in a session,
workspace/applyChanges) and in `kiln shell` on a pty (type the request,
`r` to run, the listed changes, `y` to apply). The model is
tests/fake-model/fake_model.py, started here as the same user ([[answer:
story]]); its --log shows every prompt kiln sent it.

A secret created in the folder while a run polls for it is never read
(midrun-*: the live masks, docs/security.md "Names made during a run"),
in a session run and a one-shot run; a change the person declines is
not seen by the session's next run (declined-*: workspace/declineChanges
through the protocol, answering `n` in the shell).

    story_e2e.py KILN LABEL

Prints "ok LABEL NAME" or "FAIL LABEL NAME: why" per check; last line
"N passed, N failed"."""
import glob
import hashlib
import json
import os
import pwd
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import urllib.parse
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "cli"))
import kilnrpc  # noqa: E402
import shell_session as sh  # noqa: E402  (its Pty and step; it reads argv[1] as kiln too)

kiln, label = os.path.abspath(sys.argv[1]), sys.argv[2]
passed = failed = 0
TOKEN = "sk-story-e2e-env-5b1f0c9d"      # in the project's .env from the start
MIDRUN = "sk-story-e2e-midrun-83e2a4"   # written into the folder during a run
ROW = b"2026-04-01,41\n"                 # the row the story's code appends
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def check(name, cond, why=""):
    global passed, failed
    if cond:
        passed += 1
        print("ok %s %s" % (label, name), flush=True)
    else:
        failed += 1
        print("FAIL %s %s: %s" % (label, name, str(why)[-1200:]), flush=True)


def png_valid(b):
    """A whole PNG: the signature, then chunks each with a right CRC, IHDR
    first, some IDAT that inflates, IEND last and nothing after it."""
    if b[:8] != PNG_MAGIC:
        return False
    i, names, idat = 8, [], b""
    while i + 12 <= len(b):
        n, t = struct.unpack(">I4s", b[i:i + 8])
        d = b[i + 8:i + 8 + n]
        if len(d) != n or struct.unpack(">I", b[i + 8 + n:i + 12 + n])[0] != \
                zlib.crc32(t + d) & 0xffffffff:
            return False
        names.append(t)
        idat += d if t == b"IDAT" else b""
        i += 12 + n
        if t == b"IEND":
            break
    try:
        zlib.decompress(idat)
    except zlib.error:
        return False
    return names[:1] == [b"IHDR"] and names[-1:] == [b"IEND"] and i == len(b)


def read(p):
    with open(p, "rb") as f:
        return f.read()


def tree(p):
    """Every name under p with its bytes' hash: the folder's state."""
    out = {}
    for d, dirs, files in os.walk(p):
        for n in dirs + files:
            q = os.path.join(d, n)
            out[os.path.relpath(q, p)] = \
                hashlib.sha256(read(q)).hexdigest() if os.path.isfile(q) else "dir"
    return out


def make_project(parent, name):
    """A project as a person keeps one: a few months of sales, a .env with
    a key; owned by whoever runs this (root, or the normal user)."""
    proj = os.path.join(parent, name)
    os.mkdir(proj, 0o755)
    rows = ["date,amount"]
    for month, n in ((1, 3), (2, 4), (3, 5)):
        for day in range(1, n + 1):
            rows.append("2026-%02d-%02d,%d" % (month, day, month * 10 + day))
    csv = ("\n".join(rows) + "\n").encode()
    with open(os.path.join(proj, "sales.csv"), "wb") as f:
        f.write(csv)
    with open(os.path.join(proj, ".env"), "w") as f:
        f.write("API_KEY=%s\n" % TOKEN)
    return proj, csv


def no_token_in_files(root, token):
    """Files under root (other than .env itself) that hold token."""
    bad = []
    for d, _, files in os.walk(root):
        for n in files:
            q = os.path.join(d, n)
            if n != ".env" and not os.path.islink(q) and token.encode() in read(q):
                bad.append(q)
    return bad


def sent_to_model(log, must):
    """What kiln sent the model (its --log), when it holds must: a log
    that missed the prompts would make "never sent" pass by itself."""
    text = read(log).decode("utf-8", "replace") if os.path.isfile(log) else ""
    return text if must in text else ""


def start_model(tmp):
    port_file, log = os.path.join(tmp, "model.port"), os.path.join(tmp, "model.log")
    p = subprocess.Popen([sys.executable, os.path.join(HERE, "..", "fake-model", "fake_model.py"),
                          "--port-file", port_file, "--log", log, "--max-seconds", "500"],
                         stderr=open(os.path.join(tmp, "model.err"), "w"))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (os.path.exists(port_file) and
                                               os.path.getsize(port_file)):
        time.sleep(0.05)
    with open(port_file) as f:
        return p, "http://127.0.0.1:%s" % f.read().strip(), log


def env_for(tmp, part, **extra):
    env = {"PATH": "/usr/bin:/bin", "HOME": tmp, "LANG": "C.UTF-8",
           "XDG_CONFIG_HOME": os.path.join(tmp, part, "config"),
           "XDG_STATE_HOME": os.path.join(tmp, part, "state"),
           "XDG_CACHE_HOME": os.path.join(tmp, part, "cache")}
    if "ASAN_OPTIONS" in os.environ:
        env["ASAN_OPTIONS"] = os.environ["ASAN_OPTIONS"]
    env.update(extra)
    return env


class Server:
    """kiln as an editor starts it, every message it sends kept."""

    def __init__(self, env, proj, model_url):
        self.p = subprocess.Popen([kiln], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        self.next_id = 0
        self.seen = []   # every message kiln sent, as JSON text
        self.notes = []  # notifications since the last clear
        r = self.call("initialize", {
            "processId": None, "capabilities": {},
            "rootUri": "file://" + urllib.parse.quote(proj),
            "initializationOptions": {"llm": {"provider": "ollama", "url": model_url,
                                              "model": "fake-coder"}}})
        check("protocol-initialize", "result" in r, r)
        kilnrpc.send(self.p, {"jsonrpc": "2.0", "method": "initialized", "params": {}})

    def send(self, method, params):
        self.next_id += 1
        kilnrpc.send(self.p, {"jsonrpc": "2.0", "id": self.next_id, "method": method,
                              "params": params})
        return self.next_id

    def wait(self, rid, on_note=None):
        """Messages until the answer to rid; on_note sees each
        notification as it comes (the host acts during a run)."""
        while True:
            m = kilnrpc.recv(self.p.stdout)
            if m is None:
                raise EOFError("kiln closed its output")
            self.seen.append(json.dumps(m))
            if "method" in m:
                self.notes.append(m)
                if on_note:
                    on_note(m)
            elif m.get("id") == rid:
                return m

    def call(self, method, params, on_note=None):
        return self.wait(self.send(method, params), on_note)

    def output(self, run_id=None):
        return "".join(n["params"].get("text", "") for n in self.notes
                       if n["method"] == "run/output" and
                       (run_id is None or n["params"].get("runId") == run_id))

    def close(self):
        self.call("shutdown", None)
        kilnrpc.send(self.p, {"jsonrpc": "2.0", "method": "exit"})
        return self.p.wait(timeout=60)


def changes_by_name(res):
    return {os.path.basename(c.get("path", "")): c for c in res.get("workspaceChanges") or []}


def story_checks(prefix, proj, csv, png_path_listed, png_size, csv_size, hash_printed,
                 stored, before_apply_ok):
    """What must hold once the person approved: both files in the folder,
    byte for byte what the run wrote, owned as the folder's files are."""
    want_csv = csv + ROW
    got_csv = read(os.path.join(proj, "sales.csv"))
    check(prefix + "-csv-listed-with-its-size", csv_size == len(want_csv),
          "listed %s, the run wrote %d bytes" % (csv_size, len(want_csv)))
    check(prefix + "-folder-untouched-before-approval", before_apply_ok)
    check(prefix + "-csv-in-folder-byte-identical", got_csv == want_csv, got_csv[-120:])
    png = os.path.join(proj, "monthly.png")
    got_png = read(png) if os.path.isfile(png) else b""
    check(prefix + "-png-listed-at-its-folder-path", png_path_listed == png, png_path_listed)
    check(prefix + "-png-in-folder-is-a-valid-png", png_valid(got_png), got_png[:40])
    check(prefix + "-png-listed-with-its-size", png_size == len(got_png) and png_size > 1000,
          "listed %s, folder has %d" % (png_size, len(got_png)))
    check(prefix + "-png-byte-identical-to-the-kept-copy",
          stored is not None and os.path.isfile(stored) and read(stored) == got_png,
          "kept copy %s" % stored)
    check(prefix + "-png-byte-identical-to-what-the-box-wrote",
          hash_printed == hashlib.sha256(got_png).hexdigest(),
          "box %s, folder %s" % (hash_printed, hashlib.sha256(got_png).hexdigest()))
    uid = os.getuid()
    st_csv, st_png = os.stat(os.path.join(proj, "sales.csv")), os.stat(png) if got_png else None
    check(prefix + "-applied-files-owned-as-the-folder's",
          st_csv.st_uid == uid and st_png is not None and st_png.st_uid == uid and
          st_csv.st_mode & 0o7777 == 0o644,
          "uid %d: csv %o uid %d, png uid %s" % (uid, st_csv.st_mode, st_csv.st_uid,
                                                 st_png and st_png.st_uid))
    check(prefix + "-nothing-else-left-in-the-folder",
          sorted(os.listdir(proj)) == [".env", "monthly.png", "sales.csv"], os.listdir(proj))


def protocol_story(tmp, model_url, model_log):
    proj, csv = make_project(tmp, "shop")
    before = tree(proj)
    env = env_for(tmp, "proto")
    s = Server(env, proj, model_url)
    try:
        r = s.call("session/open", {"language": "python"})
        sid = (r.get("result") or {}).get("sessionId")
        check("protocol-session-opens", sid, r)
        r = s.call("intent/run", {"intent": "plot monthly totals from sales.csv, save it as "
                                  "monthly.png and add April's first sale [[answer:story]]",
                                  "language": "python", "sessionId": sid})
        prop = r.get("result") or {}
        check("protocol-proposal-has-the-story's-code",
              "savefig('monthly.png')" in prop.get("code", "") and
              prop.get("verdict") in ("allow", "warn"), r)
        del s.notes[:]
        r = s.call("intent/approve", {"proposalId": prop.get("proposalId")})
        res = ((r.get("result") or {}).get("result")) or {}
        out = s.output()
        check("protocol-story-runs-ok", (r.get("result") or {}).get("ok") is True and
              "months 3" in out, [r, out])
        m = re.search(r"monthly\.png sha256 ([0-9a-f]{64})", out)
        ch = changes_by_name(res)
        png, csvc = ch.get("monthly.png", {}), ch.get("sales.csv", {})
        check("protocol-png-listed-created-binary-image",
              png.get("kind") == "created" and png.get("binary") is True and
              png.get("mimeType") == "image/png" and png.get("stored"), res.get("workspaceChanges"))
        check("protocol-csv-listed-modified", csvc.get("kind") == "modified" and
              csvc.get("path") == os.path.join(proj, "sales.csv"), res.get("workspaceChanges"))
        check("protocol-only-the-two-changes", sorted(ch) == ["monthly.png", "sales.csv"], sorted(ch))
        untouched = tree(proj) == before
        r = s.call("workspace/applyChanges", {"runId": res.get("runId")})
        a = r.get("result") or {}
        check("protocol-applyChanges-applies-both",
              sorted(a.get("applied") or []) == sorted([os.path.join(proj, "monthly.png"),
                                                         os.path.join(proj, "sales.csv")]) and
              a.get("skipped") == [], r)
        story_checks("protocol", proj, csv, png.get("path"), png.get("size"), csvc.get("size"),
                     m and m.group(1), png.get("stored"), untouched)

        # Accepted: the session and the folder agree.
        del s.notes[:]
        r = s.call("snippet/run", {"language": "python", "sessionId": sid,
                                   "code": "print('rows', len(pd.read_csv('sales.csv')))\n"})
        check("protocol-next-session-run-sees-the-applied-row",
              "rows 13" in s.output() and not (r.get("result") or {}).get("workspaceChanges"),
              [r, s.output()])

        # .env: hidden from the session's code.
        del s.notes[:]
        r = s.call("snippet/run", {"language": "python", "sessionId": sid,
                                   "code": "import os\ntry:\n    print(open('.env').read())\n"
                                           "except OSError as e:\n    print('refused', e.errno)\n"
                                           "print('listed', '.env' in os.listdir('.'))\n"})
        check("protocol-env-cannot-be-read", "refused" in s.output() and
              TOKEN not in s.output(), s.output())

        midrun_protocol(s, sid, proj)
        declined_protocol(s, sid, proj)
        s.call("session/close", {"sessionId": sid})
        check("protocol-kiln-exits-cleanly", s.close() == 0)
    except Exception as e:  # a harness error is a failure, never a pass
        check("protocol-no-harness-error", False, repr(e))
        s.p.kill()
        s.p.wait()
    seen = "\n".join(s.seen)
    check("protocol-env-token-never-in-any-message", TOKEN not in seen,
          [x for x in s.seen if TOKEN in x][:2])
    check("protocol-env-token-never-in-a-kept-file",
          not no_token_in_files(os.path.join(tmp, "proto"), TOKEN),
          no_token_in_files(os.path.join(tmp, "proto"), TOKEN))
    check("protocol-env-token-never-sent-to-the-model",
          sent_to_model(model_log, "plot monthly totals") and
          TOKEN not in sent_to_model(model_log, ""), model_log)


def declined_protocol(s, sid, proj):
    """(a) Declined: a change the person declines is gone from what the
    session's next run sees (workspace/declineChanges {runId, paths?})."""
    csv_now = read(os.path.join(proj, "sales.csv"))
    r = s.call("snippet/run", {"language": "python", "sessionId": sid,
                               "code": "open('notes.txt', 'w').write('draft\\n')\n"
                                       "open('sales.csv', 'a').write('2026-04-02,7\\n')\n"})
    res = r.get("result") or {}
    check("declined-protocol-two-changes",
          sorted(changes_by_name(res)) == ["notes.txt", "sales.csv"], res)
    r = s.call("workspace/declineChanges", {"runId": res.get("runId")})
    check("declined-protocol-declineChanges-answers", "result" in r, r)
    del s.notes[:]
    s.call("snippet/run", {"language": "python", "sessionId": sid,
                           "code": "import os\nprint('notes', os.path.exists('notes.txt'))\n"
                                   "print('csv', len(open('sales.csv', 'rb').read()))\n"})
    check("declined-protocol-next-run-does-not-see-it",
          "notes False" in s.output() and "csv %d" % len(csv_now) in s.output(), s.output())
    check("declined-protocol-folder-unchanged",
          read(os.path.join(proj, "sales.csv")) == csv_now and
          not os.path.exists(os.path.join(proj, "notes.txt")))


# Polls until the host says it has written its secrets (ready.txt, not a
# hidden name: that the box sees it shows the folder is live), then tries
# each secret for a while. It polls the listing, never the name: a lookup
# of a name that is not there yet leaves a negative dentry in the box's
# overlay, which would hide the file made later whatever kiln does.
MIDRUN_CODE = """import os, time
print('polling', flush=True)
t = time.monotonic()
while 'ready.txt' not in os.listdir('.') and time.monotonic() - t < 20:
    time.sleep(0.02)
print('ready seen', 'ready.txt' in os.listdir('.'), flush=True)
got = []
for _ in range(50):
    for p in ('id_rsa', 'sub/.env', '.env'):
        try:
            got.append(p + ':' + open(p).read())
        except OSError:
            pass
    time.sleep(0.02)
print('read', len(got), got[:3])
"""


def midrun_protocol(s, sid, proj):
    """(b) Live masks: secrets made in the folder while a run polls for
    them are never readable, in a session run and in a one-shot run."""
    for kind, extra in (("session", {"sessionId": sid}), ("oneshot", {})):
        made = []

        def on_note(m):
            if m["method"] == "run/output" and "polling" in m["params"].get("text", "") \
                    and not made:
                os.makedirs(os.path.join(proj, "sub"), exist_ok=True)
                for p in ("id_rsa", "sub/.env"):
                    with open(os.path.join(proj, p), "w") as f:
                        f.write("KEY=%s\n" % MIDRUN)
                with open(os.path.join(proj, "ready.txt"), "w") as f:
                    f.write("go\n")
                made.append(True)
        del s.notes[:]
        params = {"language": "python", "code": MIDRUN_CODE}
        params.update(extra)
        s.call("snippet/run", params, on_note)
        out = s.output()
        check("midrun-%s-the-run-saw-the-folder-live" % kind,
              made and "ready seen True" in out, out)
        check("midrun-%s-secret-never-read" % kind,
              MIDRUN not in out and TOKEN not in out and "read 0" in out, out)
        for p in ("id_rsa", "sub/.env", "ready.txt"):
            if os.path.exists(os.path.join(proj, p)):
                os.unlink(os.path.join(proj, p))
        if os.path.isdir(os.path.join(proj, "sub")):
            os.rmdir(os.path.join(proj, "sub"))


def shell_story(tmp, model_url, model_log):
    proj, csv = make_project(tmp, "shop-shell")
    before = tree(proj)
    cache = os.path.join(tmp, "shell", "cache")
    env = env_for(tmp, "shell", TERM="dumb", NO_COLOR="1", KILN_LLM_URL=model_url,
                  KILN_MODEL="fake-coder")
    cwd = os.getcwd()
    os.chdir(proj)  # kiln shell's workspace is the current directory
    try:
        t = sh.Pty([kiln, "shell"], env)
    finally:
        os.chdir(cwd)
    try:
        check("shell-starts", t.read_until(r"kiln> ", 120), t.text()[-600:])
        ok, out = sh.step(t, "plot monthly totals from sales.csv, save it as monthly.png and "
                          "add April's first sale [[answer:story]]", r"\[r/e/s\]", 120)
        check("shell-shows-the-story's-code", ok and "savefig('monthly.png')" in out, out)
        ok, out = sh.step(t, "r", r"apply these changes to your files\? \[y/N\]|exit [1-9]|"
                          r"kiln> $", 180)
        check("shell-story-runs-and-asks-to-apply",
              ok and "months 3" in out and "[y/N]" in out, out)
        m = re.search(r"monthly\.png sha256 ([0-9a-f]{64})", out)
        png = re.search(r"created\s+(/\S+/monthly\.png) \((\d+) bytes, image/png\)", out)
        mod = re.search(r"modified\s+(/\S+/sales\.csv) \((\d+) bytes\)", out)
        check("shell-lists-png-created-with-size-and-kind", png is not None, out)
        check("shell-lists-csv-modified-with-size",
              mod is not None and mod.group(1) == os.path.join(proj, "sales.csv"), out)
        check("shell-lists-two-changes", "changed 2 files" in out, out)
        untouched = tree(proj) == before
        ok, out = sh.step(t, "y", r"applied \d+ changes?\b|not applied|skipped", 120)
        check("shell-applies-both",
              ok and "applied 2 changes" in out and
              "applied %s" % os.path.join(proj, "monthly.png") in out and
              "applied %s" % os.path.join(proj, "sales.csv") in out, out)
        kept = glob.glob(os.path.join(cache, "kiln-artifacts", "*", "workspace", "monthly.png"))
        check("shell-png-kept-once", len(kept) == 1, kept)
        story_checks("shell", proj, csv, png and png.group(1), png and int(png.group(2)),
                     mod and int(mod.group(2)), m and m.group(1), kept[0] if kept else None,
                     untouched)
        ok, out = sh.step(t, ":run print(open('.env').read())", r"exit [0-9]", 120)
        check("shell-env-cannot-be-read", ok and TOKEN not in out and
              ("FileNotFoundError" in out or "PermissionError" in out), out)
        declined_shell(t, proj)
        t.send(":quit\r")
        st = t.wait(60)
        check("shell-quits-cleanly", st is not None and os.WIFEXITED(st) and
              os.WEXITSTATUS(st) == 0, "status %s" % st)
    except Exception as e:  # a harness error is a failure, never a pass
        check("shell-no-harness-error", False, repr(e))
        t.wait(1)
    check("shell-env-token-never-on-the-terminal", TOKEN not in t.text())
    check("shell-env-token-never-in-a-kept-file",
          not no_token_in_files(os.path.join(tmp, "shell"), TOKEN),
          no_token_in_files(os.path.join(tmp, "shell"), TOKEN))
    check("shell-env-token-never-sent-to-the-model",
          sent_to_model(model_log, "plot monthly totals") and
          TOKEN not in sent_to_model(model_log, ""), model_log)


def declined_shell(t, proj):
    """(a) in the shell: answering `n` declines, and the session's next
    run does not see what was declined."""
    ok, out = sh.step(t, ":run open('notes.txt', 'w').write('draft\\n')", r"\[y/N\]", 120)
    check("declined-shell-offered", ok and "notes.txt" in out, out)
    ok, out = sh.step(t, "n", r"not applied")
    ok, out = sh.step(t, ":run import os; print('notes seen', os.path.exists('notes.txt'))",
                      r"exit [0-9]", 120)
    check("declined-shell-next-run-does-not-see-it", ok and "notes seen False" in out, out)
    check("declined-shell-folder-unchanged",
          not os.path.exists(os.path.join(proj, "notes.txt")))


def main():
    tmp = tempfile.mkdtemp(prefix="kiln-story-e2e-")
    os.chmod(tmp, 0o755)  # as root, the box runs as nobody and must reach the project
    model = None
    try:
        me = pwd.getpwuid(os.getuid()).pw_name
        check("runs-as-" + label, me == label and os.stat(tmp).st_uid == os.getuid(), me)
        model, url, log = start_model(tmp)
        protocol_story(tmp, url, log)
        shell_story(tmp, url, log)
    except Exception as e:  # a harness error is a failure, never a pass
        check("no-harness-error", False, repr(e))
    finally:
        if model:
            model.kill()
            model.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    print("%d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)


main()
