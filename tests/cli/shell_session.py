#!/usr/bin/env python3
"""shell_session.py: `kiln shell` on a pty, as a person uses it, with its
session: names kept between lines, the last expression shown, displays
saved under $XDG_CACHE_HOME/kiln/, :reset and :new, Ctrl-C at an idle
prompt clearing the line instead of quitting, run/skip answers kept out of
the line history, the edit path; and `kiln ask` for scripts: only the
program's output on stdout, --json, --session NAME, --allow-warn. A repair
is a new proposal: the shell and `kiln ask --yes` ask before it runs (or,
without a terminal, do not run it), unless automatic repair is on.

  shell_session.py KILN

Prints one "ok"/"not ok"/"skip" line per check and "N passed, N failed".
"""
import os
import pty
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

KILN = os.path.abspath(sys.argv[1])
_here = os.path.dirname(os.path.abspath(__file__))
passed = failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print("ok - " + name)
    else:
        failed += 1
        print("not ok - %s: %s" % (name, detail[-1500:]))


class Pty:
    def __init__(self, argv, env, cwd=None):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            if cwd:
                os.chdir(cwd)
            os.execve(argv[0], argv, env)
        self.out = b""
        self.start = 0

    def read_until(self, pattern, timeout=30):
        """Read until pattern (a regex over the decoded text since the
        last mark) appears; True when it did."""
        deadline = time.time() + timeout
        rx = re.compile(pattern)
        while time.time() < deadline:
            if rx.search(self.since()):
                return True
            r, _, _ = select.select([self.fd], [], [], 0.1)
            if r:
                try:
                    b = os.read(self.fd, 65536)
                except OSError:
                    return bool(rx.search(self.since()))
                if not b:
                    break
                self.out += b
        return bool(rx.search(self.since()))

    def text(self):
        return self.out.decode("utf-8", "replace").replace("\r", "")

    def send(self, s):
        os.write(self.fd, s.encode())

    def mark(self):
        self.start = len(self.out)

    def since(self):
        return self.out[self.start:].decode("utf-8", "replace").replace("\r", "")

    def wait(self, timeout=20):
        deadline = time.time() + timeout
        while time.time() < deadline:
            pid, st = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                return st
            try:
                r, _, _ = select.select([self.fd], [], [], 0.1)
                if r:
                    self.out += os.read(self.fd, 65536)
            except OSError:
                time.sleep(0.05)
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        return None


def step(p, line, until, timeout=30):
    p.mark()
    p.send(line + "\r")
    ok = p.read_until(until, timeout)
    return ok, p.since()


def env_for(tmp, **extra):
    env = {"PATH": "/usr/bin:/bin", "HOME": tmp, "TERM": "dumb", "NO_COLOR": "1",
           "XDG_CACHE_HOME": tmp + "/cache", "XDG_STATE_HOME": tmp + "/state",
           "XDG_CONFIG_HOME": tmp + "/config", "LANG": "C.UTF-8"}
    env.update(extra)
    return env


def typed_code_checks():
    tmp = tempfile.mkdtemp()
    p = Pty([KILN, "shell"], env_for(tmp, KILN_LLM_URL="http://127.0.0.1:9"))
    check("kiln shell starts on a pty", p.read_until(r"kiln python> "), p.text())
    step(p, "x = 5", r"ok: exit 0")
    ok, out = step(p, "print(x)", r"ok: exit 0")
    check("x = 5, then print(x) prints 5 (the shell's session)", "\n5\n" in out, out)
    ok, out = step(p, "2+2", r"ok: exit 0")
    check("a bare expression shows its value", re.search(r"\n4\n", out) is not None, out)

    # Ctrl-C at an idle prompt clears the line; the shell and its session stay.
    p.mark()
    p.send("print('never')")
    time.sleep(0.3)
    p.send("\x03")
    alive = p.read_until(r"\^C\n", 10)
    time.sleep(0.3)
    ok, out = step(p, "print(x)", r"ok: exit 0")
    check("Ctrl-C at the prompt clears the line and keeps the session",
          alive and "never\n" not in out and "\n5\n" in out, p.since())

    # Ctrl-C during a run: the ^C the terminal echoed ends its line, and
    # the person reads what happened, not the protocol's words.
    p.mark()
    p.send("import time; print('sleeping', flush=True); time.sleep(60)\r")
    started = p.read_until(r"\nsleeping\n", 30)
    # From here on: the prompt printed before the command (it may come
    # after the last step's mark) must not count as the one after ^C.
    before = p.since()
    p.mark()
    p.send("\x03")
    p.read_until(r"kiln python> ", 30)
    out = p.since() if started else "the run did not start: " + before + p.since()
    check("Ctrl-C during a run says it was cancelled, on its own line",
          "^C\ncancelled (Ctrl-C)" in out and "Request cancelled" not in out, out)
    # The interrupt settles in the session a moment after the cancel's
    # answer: until then a run is refused as busy (a note for issue 35).
    for _ in range(50):
        ok, out = step(p, "print('ready', 6 * 7)", r"ready 42\n[\s\S]*ok: exit 0 \(\d+ ms\)|is busy", 30)
        if "ready 42" in out:
            break
        time.sleep(0.2)
    if subprocess.run(["/usr/bin/python3", "-c", "import matplotlib"],
                      stderr=subprocess.DEVNULL).returncode == 0:
        ok, out = step(p, "import matplotlib.pyplot as plt; plt.plot([1, 2]); plt.show()",
                       r"ok: exit 0", 60)
        m = re.search(r"display image/png saved: (\S+\.png)", out)
        good = bool(m) and m.group(1).startswith(tmp + "/cache/kiln/") and \
            open(m.group(1), "rb").read(8) == b"\x89PNG\r\n\x1a\n"
        check("a plot is saved as a PNG under $XDG_CACHE_HOME/kiln/, its path printed",
              good, out)
    else:
        print("skip - a plot is saved as a PNG: python3-matplotlib is not installed "
              "(make deps installs it)")

    ok, out = step(p, ":reset", r"reset")
    ok, out = step(p, "print(x)", r"exit 1")
    check(":reset forgets the session's names", "NameError" in out, out)
    step(p, "y = 1", r"ok: exit 0")
    ok, out = step(p, ":new", r"new session")
    ok, out = step(p, "print(y)", r"exit 1")
    check(":new starts another session", "NameError" in out, out)
    p.send(":quit\r")
    st = p.wait()
    check("the shell leaves on :quit with status 0", st is not None and os.WIFEXITED(st) and
          os.WEXITSTATUS(st) == 0, "status %s" % st)


def decline_checks():
    """No to a session run's changes: the session drops them, says so,
    and the next run reads the folder's files (docs/terminal.md)."""
    tmp = tempfile.mkdtemp()
    os.chmod(tmp, 0o755)
    proj = os.path.join(tmp, "proj")
    os.makedirs(proj)
    open(os.path.join(proj, "data.csv"), "w").write("a,b\n1,2\n")
    if os.getuid() == 0:  # the box runs as nobody: its files are nobody's
        for q in (proj, os.path.join(proj, "data.csv")):
            os.chown(q, 65534, 65534)
    p = Pty([KILN, "shell"], env_for(tmp, KILN_LLM_URL="http://127.0.0.1:9"), cwd=proj)
    p.read_until(r"kiln python> ")
    ok, out = step(p, "open('notes.txt', 'w').write('mine'); open('data.csv', 'a').write('3,4')",
                   r"apply these changes to your files\? \[y/N\] ")
    ok, out = step(p, "n", r"kiln python> ")
    check("no to a session run's changes: the shell says the session dropped each",
          "the session dropped %s/notes.txt" % proj in out and
          "the session dropped %s/data.csv" % proj in out and "still holds" not in out, out)
    ok, out = step(p, "import os; print('seen', os.path.exists('notes.txt'), "
                      "repr(open('data.csv').read()))", r"ok: exit 0")
    check("after no, the session's next run reads the folder's files",
          "seen False 'a,b\\n1,2\\n'" in out and
          not os.path.exists(os.path.join(proj, "notes.txt")), out)
    ok, out = step(p, "open('yes.txt', 'w').write('kept')",
                   r"apply these changes to your files\? \[y/N\] ")
    ok, out = step(p, "y", r"kiln python> ")
    ok, out = step(p, "print('seen', repr(open('yes.txt').read()))", r"ok: exit 0")
    check("after yes, the session and the folder agree",
          "seen 'kept'" in out and open(os.path.join(proj, "yes.txt")).read() == "kept", out)
    p.send(":quit\r")
    p.wait()
    shutil.rmtree(tmp, ignore_errors=True)


def elapsed_checks():
    # With a status line (a terminal that takes colour), a run that lasts
    # shows how long it has run.
    tmp = tempfile.mkdtemp()
    env = env_for(tmp, KILN_LLM_URL="http://127.0.0.1:9", TERM="xterm")
    env.pop("NO_COLOR")
    p = Pty([KILN, "shell"], env)
    p.read_until(r"kiln python> ")
    ok, out = step(p, "import time; time.sleep(2.6)", r"ok: exit 0", 30)
    check("the status line shows the elapsed time of a run",
          re.search(r"running\.\.\. 2 s", out) is not None, repr(out[-400:]))
    p.send(":quit\r")
    p.wait()


def streaming_checks(url, tmp):
    """With a status line, the code shows as the model writes it."""
    env = env_for(tmp, KILN_LLM_URL=url, KILN_MODEL="fake-slow", TERM="xterm")
    env.pop("NO_COLOR")
    p = Pty([KILN, "shell"], env)
    p.read_until(r"kiln> ", 30)
    ok, out = step(p, "add up the numbers [[answer:plot]]", r"\[r/e/s\]", 60)
    # The plot answer's lines, one after the other, each on the status line.
    seen = re.findall(r"writing \((\d+) lines?\): ([^\x1b\r\n]*)", out)
    check("the status line streams the code as the model writes it (lines so far, the last)",
          ok and any(t.startswith("import pandas") for _, t in seen) and
          any(t.startswith("monthly.plot") for _, t in seen) and
          [int(n) for n, _ in seen] == sorted(int(n) for n, _ in seen), repr(seen)[-600:])
    step(p, "s", r"skipped")
    p.send(":quit\r")
    p.wait()


def answer_history_checks():
    tmp = tempfile.mkdtemp()
    fake = subprocess.Popen(["/usr/bin/python3", os.path.join(_here, "..", "fake-model",
                                                              "fake_model.py"),
                             "--port-file", tmp + "/port", "--max-seconds", "120"],
                            stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            if os.path.exists(tmp + "/port") and open(tmp + "/port").read().strip():
                break
            time.sleep(0.1)
        url = "http://127.0.0.1:" + open(tmp + "/port").read().strip()
        p = Pty([KILN, "shell"], env_for(tmp, KILN_LLM_URL=url, KILN_MODEL="fake-coder"))
        p.read_until(r"kiln> ")
        ok, out = step(p, "say hello", r"\[r/e/s\]")
        ok, out = step(p, "s", r"skipped")
        p.send(":quit\r")
        p.wait()
        hist = open(tmp + "/state/kiln/shell_history").read()
        lines = [l for l in hist.splitlines() if not l.startswith("_HiStOrY_V2_")]
        check("run/edit/skip answers stay out of the line history",
              any("say" in l for l in lines) and "s" not in lines, repr(lines))

        # The edit path: an editor that changes nothing goes back to the
        # question; an edit is shown and asked about before it runs.
        ed = tmp + "/ed.sh"
        with open(ed, "w") as f:
            f.write("#!/bin/sh\n[ -e %s/noop ] && exit 0\n"
                    "sed -i 's/hello from kiln/edited by me/' \"$1\"\n" % tmp)
        os.chmod(ed, 0o755)
        open(tmp + "/noop", "w").close()
        p = Pty([KILN, "shell"], env_for(tmp, KILN_LLM_URL=url, KILN_MODEL="fake-coder",
                                         EDITOR=ed, VISUAL=""))
        p.read_until(r"kiln> ")
        step(p, "say hello", r"\[r/e/s\]")
        ok, out = step(p, "e", r"\[r/e/s\]")
        check("an editor left without a change goes back to the question",
              ok and "unchanged" in out and "skipped" not in out, out)
        os.unlink(tmp + "/noop")
        ok, out = step(p, "e", r"\[r/e/s\]")
        check("edited code is shown before it runs, and asked about",
              ok and "your edit:" in out and "edited by me" in out and
              "ok: exit 0" not in out, out)
        ok, out = step(p, "r", r"ok: exit 0")
        check("the edited code is what runs", ok and "\nedited by me\n" in out, out)
        p.send(":quit\r")
        p.wait()
        streaming_checks(url, tmp)
        ask_checks(url, tmp)
        repair_checks(url, tmp)
    finally:
        fake.kill()
        fake.wait()


def ask(url, tmp, *args):
    env = env_for(tmp, KILN_LLM_URL=url, KILN_MODEL="fake-coder")
    return subprocess.run([KILN, "ask", *args], env=env, capture_output=True, text=True,
                          timeout=120)


def ask_checks(url, tmp):
    import json
    import urllib.request
    r = ask(url, tmp, "--yes", "say hello")
    check("kiln ask: stdout is the program's output, kiln's lines are on stderr",
          r.returncode == 0 and r.stdout == "hello from kiln\n" and "verdict: allow" in r.stderr,
          repr([r.returncode, r.stdout, r.stderr]))
    r = ask(url, tmp, "--yes", "--json", "say hello")
    try:
        o = json.loads(r.stdout)
    except ValueError:
        o = {}
    check("kiln ask --json prints one JSON object with the proposal, the run and its output",
          r.returncode == 0 and o.get("proposal", {}).get("verdict") == "allow" and
          o.get("approve", {}).get("ok") is True and o.get("stdout") == "hello from kiln\n" and
          o.get("exitStatus") == 0, repr([r.returncode, r.stdout[:500]]))
    r = ask(url, tmp, "say hello")
    check("kiln ask without --yes shows the proposal, runs nothing, and says how to run it",
          r.returncode == 0 and r.stdout == "" and "not run; to run it: kiln ask --yes" in
          r.stderr, repr([r.returncode, r.stdout, r.stderr[-300:]]))
    r = ask(url, tmp, "--yes", "loop [[answer:warnloop]]")
    check("kiln ask --yes does not run a warn verdict, and says how to",
          r.returncode == 4 and "--allow-warn" in r.stderr and "looped" not in r.stdout,
          repr([r.returncode, r.stdout, r.stderr[-300:]]))
    r = ask(url, tmp, "--yes", "--allow-warn", "loop [[answer:warnloop]]")
    check("kiln ask --yes --allow-warn runs a warn verdict", r.returncode == 0 and
          r.stdout == "looped\n", repr([r.returncode, r.stdout, r.stderr[-300:]]))
    # --session NAME: what ran is kept and replayed into the next one's
    # session, whose names the model is told.
    d = tmp + "/state/kiln/sessions"
    os.makedirs(d, exist_ok=True)
    with open(d + "/data.json", "w") as f:
        json.dump({"cells": ["x = 41"]}, f)
    r = ask(url, tmp, "--yes", "--session", "data", "say hello")
    last = json.load(urllib.request.urlopen(url + "/_last"))
    user = [m["content"] for m in last.get("messages", []) if m.get("role") == "user"]
    # The last request is the explanation's; the intent's names the session.
    told = any("- x: int = 41" in u for u in user)
    kept = json.load(open(d + "/data.json")).get("cells")
    check("kiln ask --session NAME replays what ran before and keeps what ran now",
          r.returncode == 0 and kept == ["x = 41", "print('hello from kiln')\n"],
          repr([r.returncode, kept, r.stderr[-400:]]))
    check("kiln ask --session NAME tells the model the session's names", told, repr(user))
    r = ask(url, tmp, "--session", "../x", "say hello")
    check("kiln ask --session refuses a name that is not a plain name", r.returncode == 2,
          repr([r.returncode, r.stderr]))


def repair_checks(url, tmp):
    """The fake model's first code fails (a NameError); its repair prints 3.
    The repair runs only once the person says so, or with automatic repair."""
    env = env_for(tmp, KILN_LLM_URL=url, KILN_MODEL="fake-repair")
    p = Pty([KILN, "shell"], env)
    p.read_until(r"kiln> ")
    step(p, "add up 0, 1 and 2", r"\[r/e/s\]")
    ok, out = step(p, "r", r"\[r/e/s\]", 60)
    check("kiln shell: a repair waits for the person's answer before it runs",
          ok and "NameError" in out and "needs your approval" in out and "print(total)" in out
          and "\n3\n" not in out, out)
    ok, out = step(p, "r", r"ok: exit 0", 60)
    check("kiln shell: the approved repair runs", ok and "\n3\n" in out, out)
    ok, out = step(p, ":auto-repair on", r"automatic repair: on")
    check(":auto-repair on says so", ok, out)
    step(p, "add up 0, 1 and 2", r"\[r/e/s\]")
    ok, out = step(p, "r", r"ok: exit 0|\[r/e/s\]", 60)
    check("kiln shell with :auto-repair on: an allowed repair runs without asking",
          ok and "NameError" in out and "\n3\n" in out and "needs your approval" not in out,
          out)
    p.send(":quit\r")
    p.wait()

    # kiln ask --yes at a terminal asks before a repair runs.
    p = Pty([KILN, "ask", "--yes", "add up 0, 1 and 2"], env)
    asked = p.read_until(r"run the repaired code\? \[y/N\] ", 60)
    before = p.text()
    p.mark()
    p.send("y\r")
    st = p.wait(60)
    check("kiln ask --yes at a terminal asks before the repair runs, and runs it on y",
          asked and "\n3\n" not in before and "print(total)" in before and
          "\n3\n" in p.since() and st is not None and os.WEXITSTATUS(st) == 0,
          repr([before[-600:], p.since()[-300:], st]))
    p = Pty([KILN, "ask", "--yes", "add up 0, 1 and 2"], env)
    p.read_until(r"run the repaired code\? \[y/N\] ", 60)
    p.mark()
    p.send("n\r")
    st = p.wait(60)
    check("kiln ask --yes: a repair refused at the terminal does not run (exit 1)",
          "\n3\n" not in p.text() and st is not None and os.WEXITSTATUS(st) == 1,
          repr([p.text()[-600:], st]))
    # Without a terminal: printed, not run, and how to let it run said.
    r = subprocess.run([KILN, "ask", "--yes", "add up 0, 1 and 2"], env=env,
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    check("kiln ask --yes without a terminal prints the repair, does not run it, names "
          "--auto-repair", r.returncode == 1 and r.stdout == "" and "print(total)" in r.stderr
          and "--auto-repair" in r.stderr, repr([r.returncode, r.stdout, r.stderr[-600:]]))
    r = subprocess.run([KILN, "ask", "--yes", "--auto-repair", "add up 0, 1 and 2"], env=env,
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    check("kiln ask --yes --auto-repair runs the allowed repair and shows its code",
          r.returncode == 0 and r.stdout == "3\n" and "repaired code (attempt 2)" in r.stderr
          and "print(total)" in r.stderr, repr([r.returncode, r.stdout, r.stderr[-600:]]))


# A 1x1 grey PNG and 10 KiB more (kitty takes it in several chunks),
# displayed through an object's _repr_png_: a display image/png without
# matplotlib's start-up.
PNG_HEX = ("89504e470d0a1a0a0000000d49484452000000010000000108000000003a7e9b55"
           "0000000a49444154789c636000000002000148afa4710000000049454e44ae426082")
PNG_LINE = ("P = type('P', (), {'_repr_png_': lambda self: bytes.fromhex('%s') + "
            "bytes(range(256)) * 40}); P()" % PNG_HEX)


def image_run(extra_env):
    """kiln shell on a pty with extra_env, displaying the PNG: (the raw
    bytes written to the terminal, the saved file's path or None)."""
    tmp = tempfile.mkdtemp()
    env = env_for(tmp, KILN_LLM_URL="http://127.0.0.1:9", **extra_env)
    env.pop("NO_COLOR", None)
    p = Pty([KILN, "shell"], env)
    p.read_until(r"kiln python> ")
    p.mark()
    p.send(PNG_LINE + "\r")
    p.read_until(r"ok: exit 0", 60)
    raw = p.out[p.start:]
    p.send(":quit\r")
    p.wait()
    m = re.search(rb"display image/png saved: (?:\x1b\]8;;file://[^\x1b]*\x1b\\)?([^\x1b\r\n]+\.png)",
                  raw)
    return raw, (m.group(1).decode() if m else None)


def image_checks():
    import base64
    png = bytes.fromhex(PNG_HEX) + bytes(range(256)) * 40
    raw, path = image_run({"TERM": "xterm-kitty"})
    chunks = re.findall(rb"\x1b_G([^;]*);([A-Za-z0-9+/=]*)\x1b\\", raw)
    check("on kitty the PNG is drawn inline (kitty graphics protocol, no reply asked)",
          len(chunks) > 1 and chunks[0][0].startswith(b"f=100,a=T,q=2,") and
          all(c[0].endswith(b"m=1") for c in chunks[:-1]) and chunks[-1][0] == b"m=0" and
          base64.b64decode(b"".join(c[1] for c in chunks)) == png and
          path and open(path, "rb").read() == png, repr(raw[-600:]))
    check("the saved path is a clickable OSC 8 link where the terminal takes it",
          re.search(rb"saved: \x1b\]8;;file://[^\x1b]*\.png\x1b\\[^\x1b]*\.png\x1b\]8;;\x1b\\", raw)
          is not None, repr(raw[-600:]))
    raw, path = image_run({"TERM": "xterm-256color", "TERM_PROGRAM": "iTerm.app"})
    m = re.search(rb"\x1b\]1337;File=inline=1;size=(\d+);preserveAspectRatio=1:([A-Za-z0-9+/=]+)\x07",
                  raw)
    check("on iTerm2 the PNG is drawn inline (iTerm2 inline images)",
          m is not None and int(m.group(1)) == len(png) and base64.b64decode(m.group(2)) == png,
          repr(raw[-600:]))
    raw, path = image_run({"TERM": "xterm-kitty", "TMUX": "/tmp/tmux-0/default,1,0"})
    check("inside tmux no image escape is written (the path is still printed)",
          b"\x1b_G" not in raw and b"1337;File" not in raw and path is not None, repr(raw[-600:]))
    raw, path = image_run({"TERM": "dumb"})
    check("a dumb terminal gets the path only: no image, no link",
          b"\x1b_G" not in raw and b"1337;File" not in raw and b"\x1b]8;;" not in raw and
          path is not None, repr(raw[-600:]))


def main():
    image_checks()
    typed_code_checks()
    decline_checks()
    elapsed_checks()
    answer_history_checks()
    print("%d passed, %d failed" % (passed, failed))


if __name__ == "__main__":
    main()
