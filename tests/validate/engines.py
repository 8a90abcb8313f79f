#!/usr/bin/env python3
"""engines.py: the rule patterns matched by kiln's own walk (match.c, the
default) give exactly the diagnostics of tree-sitter's query cursor
(`"matcher": "tree-sitter"`), on every language. The files: the labelled
corpus (tests/validate/corpus), the system corpus's real code
(system-corpus.list, excluded files included), and each corpus file cut at
a third and at two thirds and spliced onto the next one's tail, which
leaves syntax errors, ERROR nodes and missing tokens for both to walk.
Both run with CPython off, so the rules alone differ, under the strict
profile (every category on) and the standard one (where kiln's matcher
skips the patterns of rules that are off). Usage: engines.py KILN.
Prints one FAIL line per file and profile that differ (with the first
differing diagnostic), then "engines: N passed, N failed" (one per file
and profile)."""
import fnmatch
import glob
import json
import os
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
kiln = sys.argv[1]
env = dict(os.environ, XDG_CONFIG_HOME=os.path.join(here, "no-config"))


def system_files():
    """The system corpus's files (system-corpus.list's sources), excluded
    ones too: the two matchers must agree on those as well."""
    files = {}
    for raw in open(os.path.join(here, "system-corpus.list"), encoding="utf-8"):
        line = raw.split()
        if len(line) < 5 or line[0] != "source":
            continue
        for g in line[4:]:
            if g.startswith("dpkg:"):
                _, pkg, pat = g.split(":", 2)
                out = subprocess.run(["dpkg", "-L", pkg], capture_output=True, text=True)
                found = [f for f in out.stdout.splitlines() if fnmatch.fnmatch(f, pat)]
            else:
                found = glob.glob(g, recursive=True)
            files.update((f, line[3]) for f in found if os.path.isfile(f))
    return sorted(files.items())


def cuts(files, tmp):
    """Each file cut at 1/3 and 2/3, and spliced onto the next file's tail."""
    out = []
    by_ext = {}
    for f in files:
        by_ext.setdefault(os.path.splitext(f)[1], []).append(f)
    for ext, group in sorted(by_ext.items()):
        for i, f in enumerate(group):
            a = open(f, "rb").read()
            b = open(group[(i + 1) % len(group)], "rb").read()
            for k, data in enumerate([a[: len(a) // 3], a[: 2 * len(a) // 3],
                                      a[: len(a) // 2] + b[len(b) // 3:]]):
                p = os.path.join(tmp, "%s.%d%s" % (os.path.basename(f)[: -len(ext) or None], k, ext))
                open(p, "wb").write(data)
                out.append(p)
    return out


def run(files, matcher, profile, tmp):
    """files: (path, language) pairs; the report of each path."""
    cfg = os.path.join(tmp, matcher + ".json")
    json.dump({"validator": {"python": False, "bash": False, "node": False, "matcher": matcher}},
              open(cfg, "w"))
    res = {}
    for lang in sorted({lg for _, lg in files}):
        mine = [f for f, lg in files if lg == lang]
        for i in range(0, len(mine), 100):
            p = subprocess.run([kiln, "validate", "--config", cfg, "--profile", profile, "--lang",
                                lang, "--format", "json"] + mine[i:i + 100],
                               capture_output=True, text=True, env=env)
            for line in p.stdout.splitlines():
                d = json.loads(line)
                res[d["file"]] = d
    return res


with tempfile.TemporaryDirectory() as tmp:
    corpus = sorted(f for f in glob.glob(os.path.join(here, "corpus", "*", "*"))
                    if os.path.splitext(f)[1] in (".py", ".sh", ".js"))
    langs = {".py": "python", ".sh": "bash", ".js": "javascript"}
    files = [(f, langs[os.path.splitext(f)[1]]) for f in corpus + cuts(corpus, tmp)]
    files += system_files()
    passed = failed = 0
    for profile in ("strict", "standard"):
        ours = run(files, "kiln", profile, tmp)
        theirs = run(files, "tree-sitter", profile, tmp)
        for f, _ in files:
            a, b = ours.get(f), theirs.get(f)
            if a is not None and a == b:
                passed += 1
                continue
            failed += 1
            da = (a or {}).get("diagnostics", [])
            db = (b or {}).get("diagnostics", [])
            diff = next(((x, y) for x, y in zip(da, db) if x != y),
                        (da[len(db):], db[len(da):]))
            print(f"FAIL {f} ({profile}): kiln's matcher {json.dumps(diff[0])[:300]} "
                  f"tree-sitter's {json.dumps(diff[1])[:300]}")
    print(f"engines: {passed} passed, {failed} failed")
