#!/usr/bin/env python3
"""system_corpus.py: benign real code that nobody on kiln wrote, read from
the Debian packages that installed it (manifest: system-corpus.list, with
each source's package and licence; server/tools/deps.sh test installs
them). Nothing is copied into the repository. Every file must get a verdict
other than deny under the given profile (default: standard); warnings are
counted, per source. An `exclude` line names a file the profile refuses on
purpose, with the rule ids and why. Usage: system_corpus.py KILN [PROFILE]
[--list]. Prints one FAIL line per deny, the warning counts, then
"system: N passed, N failed" (one per file)."""
import fnmatch
import glob
import json
import os
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
kiln = sys.argv[1]
profile = sys.argv[2] if len(sys.argv) > 2 and not sys.argv[2].startswith("-") else "standard"
env = dict(os.environ, XDG_CONFIG_HOME=os.path.join(here, "no-config"))

sources, excluded = [], {}
for raw in open(os.path.join(here, "system-corpus.list"), encoding="utf-8"):
    line = raw.strip()
    if not line or line.startswith("#"):
        continue
    kind, rest = line.split(None, 1)
    if kind == "source":
        pkg, licence, lang, *globs = rest.split()
        sources.append((pkg, licence, lang, globs))
    elif kind == "exclude":
        path, why = rest.split(None, 1)
        excluded[path] = why
    else:
        sys.exit(f"system-corpus.list: unknown line kind '{kind}'")



def expand(g):
    """A glob, or dpkg:PACKAGE:GLOB for the files PACKAGE installed there."""
    if not g.startswith("dpkg:"):
        return glob.glob(g, recursive=True)
    _, pkg, pat = g.split(":", 2)
    out = subprocess.run(["dpkg", "-L", pkg], capture_output=True, text=True)
    return [f for f in out.stdout.splitlines() if fnmatch.fnmatch(f, pat)]


passed = failed = 0
total_warn = total_files = 0
for pkg, licence, lang, globs in sources:
    files = sorted({f for g in globs for f in expand(g) if os.path.isfile(f)})
    skipped = [f for f in files if f in excluded]
    files = [f for f in files if f not in excluded]
    if not files:
        print(f"FAIL {pkg}: no files (is it installed? server/tools/deps.sh test)")
        failed += 1
        continue
    results = {}
    for i in range(0, len(files), 100):
        out = subprocess.run([kiln, "validate", "--format", "json", "--profile", profile,
                              "--lang", lang] + files[i:i + 100],
                             capture_output=True, text=True, env=env, timeout=600)
        for l in out.stdout.splitlines():
            r = json.loads(l)
            results[r["file"]] = r
    warned = warnings = 0
    for f in files:
        r = results.get(f)
        if r is None:
            print(f"FAIL {f}: no result")
            failed += 1
            continue
        if r["verdict"] == "deny":
            failed += 1
            for d in r["diagnostics"]:
                if d["severity"] == 1:
                    s = d["range"]["start"]
                    print(f"FAIL {f}:{s['line'] + 1}:{s['character'] + 1}: denied "
                          f"{d.get('code')}: {d['message']}")
            continue
        passed += 1
        w = sum(1 for d in r["diagnostics"] if d["severity"] == 2)
        warnings += w
        warned += bool(w)
    total_warn += warnings
    total_files += len(files)
    print(f"info {pkg} ({licence}, {lang}): {len(files)} files, {len(skipped)} excluded, "
          f"{warnings} warnings in {warned} files")
print(f"info system corpus: {total_files} files, profile {profile}, {total_warn} warnings")
print(f"system: {passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
