#!/usr/bin/env python3
"""error_messages.py: every error kiln sends follows the form
docs/protocol.md documents: its message starts with the code's standard
text ("Method not found: foo").

It plays every transcript under protocol/transcripts/ (*.test) with
`kiln replay --server WRAPPER`, where the wrapper runs kiln with
`--record`, then reads every error object kiln wrote in those sessions
(replies and batch members alike). What the transcripts expect is checked
by tests/suites/15-transcripts.sh; this only reads what kiln sent.

Usage: error_messages.py KILN. Exit 0 on success."""
import glob
import json
import os
import subprocess
import sys
import tempfile

STANDARD = {
    -32700: "Parse error",
    -32600: "Invalid Request",
    -32601: "Method not found",
    -32602: "Invalid params",
    -32603: "Internal error",
    -32002: "Server not initialized",
    -32800: "Request cancelled",
    -32803: "Request failed",
}


def errors_in(value):
    if isinstance(value, list):
        for v in value:
            yield from errors_in(v)
    elif isinstance(value, dict) and isinstance(value.get("error"), dict):
        yield value["error"]


def main():
    kiln = os.path.abspath(sys.argv[1])
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    files = sorted(glob.glob(os.path.join(root, "protocol/transcripts/**/*.test"),
                             recursive=True))
    with tempfile.TemporaryDirectory() as tmp:
        wrapper = os.path.join(tmp, "kiln-recorded")
        with open(wrapper, "w") as f:
            f.write('#!/bin/sh\nexec "%s" --record "%s/session.$$" "$@"\n' % (kiln, tmp))
        os.chmod(wrapper, 0o755)
        subprocess.run([kiln, "replay", "--server", wrapper, *files],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=900)
        sessions = glob.glob(os.path.join(tmp, "session.*"))
        seen, bad = 0, []
        for path in sessions:
            with open(path, encoding="utf-8") as f:
                for line in f:
                    if not line.startswith("<-- "):
                        continue
                    try:
                        msg = json.loads(line[4:])
                    except ValueError:
                        continue  # a recorded line cut by a crash: 15 reports it
                    for err in errors_in(msg):
                        seen += 1
                        code, text = err.get("code"), err.get("message", "")
                        std = STANDARD.get(code, "Server error")
                        if not (text == std or text.startswith(std + ":")):
                            bad.append("%d %r" % (code, text))
    if len(sessions) < len(files) // 2 or seen == 0:
        print("only %d sessions recorded for %d transcripts, %d errors seen"
              % (len(sessions), len(files), seen))
        return 1
    for b in sorted(set(bad)):
        print("not in the documented form: " + b)
    print("%d error replies in %d sessions of %d transcripts, %d not in the documented form"
          % (seen, len(sessions), len(files), len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
