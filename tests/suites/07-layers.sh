#!/bin/sh
# 07-layers.sh: the server's folders depend one way (docs/architecture.md,
# "Layers"). Each folder (and, inside server/sandbox/, each layer) has a
# rank; a file may include only headers of its own folder or of a folder
# ranked below it. A call needs its declaration, so an include that runs
# upward is also the only way a call can; a callback given from above is
# how a lower layer reaches its owner instead. One check per folder, and
# one that every folder has a rank.
set -u
cd "$(dirname "$0")/../.."
exec python3 - <<'PY'
import os, re, sys

# The ranks, from the bottom. Two folders of one rank may not include
# each other either.
RANKS = {
    "core": 0,
    "rpc": 1, "llm": 1, "sandbox/host": 1, "sandbox/output": 1,
    "config": 2, "replay": 2, "sandbox/box": 2,
    "sandbox/config": 3,
    "sandbox/state": 4,
    "sandbox/pools": 5, "sandbox/workspace": 5,
    "sandbox/run": 6,
    "sandbox/session": 7,
    "sandbox/sandbox": 8,
    "validate": 9,
    "kiln": 10,
    "intent": 11, "doctor": 11,
    "methods": 12,
    "cli": 13,
    "server": 14,
    "main": 15,
}


def unit(rel):
    """The folder a path under server/ belongs to: server/sandbox/ by its
    layers, the top-level files of server/ and server/sandbox/ by name."""
    parts = rel.split("/")
    if parts[0] == "sandbox":
        if len(parts) > 2:
            return "sandbox/" + parts[1]
        return "sandbox/" + os.path.splitext(parts[1])[0]
    if len(parts) > 1:
        return parts[0]
    return os.path.splitext(parts[0])[0]


bad = {u: [] for u in RANKS}
unknown = set()
for root, dirs, files in os.walk("server"):
    if root.startswith("server/tools"):
        continue
    for name in sorted(files):
        if not name.endswith((".c", ".h")):
            continue
        path = os.path.join(root, name)
        u = unit(os.path.relpath(path, "server"))
        if u not in RANKS:
            unknown.add(u)
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                m = re.match(r'#include "([^"]+)"', line)
                if not m or not os.path.exists(os.path.join("server", m.group(1))):
                    continue  # a system, generated or grammar header
                t = unit(m.group(1))
                if t == u:
                    continue
                if t not in RANKS:
                    unknown.add(t)
                elif RANKS[t] >= RANKS[u]:
                    bad[u].append("%s includes %s (%s, rank %d; %s is rank %d)"
                                  % (path, m.group(1), t, RANKS[t], u, RANKS[u]))
passed = failed = 0
for u in RANKS:
    if bad[u]:
        print("layers: not ok: %s includes a folder that is not below it:" % u)
        for b in bad[u]:
            print("  " + b)
        failed += 1
    else:
        passed += 1
if unknown:
    print("layers: not ok: folders with no rank in 07-layers.sh: " + " ".join(sorted(unknown)))
    failed += 1
else:
    passed += 1
print("layers: %d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
PY
