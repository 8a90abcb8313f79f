#!/usr/bin/env python3
"""corpus.py: run the labelled corpus through `kiln validate --format json`
and report the detection rate on hostile snippets (each must raise every
rule id on its `expect:` line, and get exactly the verdict that line names
with `verdict=warn`, deny otherwise: a hostile snippet that is only warned
about is a failure unless its line says warn is what the profile means) and the false-positive
rate on benign ones (each must be allowed: no error, no warning).
Usage: corpus.py KILN [PROFILE]. Prints one line per failure, the rates,
then "corpus: N passed, N failed"; exits 1 on any failure."""
import json
import os
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
kiln = sys.argv[1]
profile = sys.argv[2] if len(sys.argv) > 2 else "standard"
files = []
for kind in ("benign", "hostile"):
    d = os.path.join(here, "corpus", kind)
    files += [os.path.join(d, f) for f in sorted(os.listdir(d))]

env = dict(os.environ, XDG_CONFIG_HOME=os.path.join(here, "no-config"))
out = subprocess.run([kiln, "validate", "--format", "json", "--profile", profile] + files,
                     capture_output=True, text=True, env=env, timeout=600)
results = {}
for line in out.stdout.splitlines():
    r = json.loads(line)
    results[r["file"]] = r

passed = failed = 0
hostile_ids = hostile_hit = 0
benign = benign_fp = 0
for f in files:
    r = results.get(f)
    name = os.path.relpath(f, here)
    if r is None:
        print(f"FAIL {name}: no result ({out.stderr.strip()[:200]})")
        failed += 1
        continue
    codes = {d.get("code") for d in r["diagnostics"]}
    if "/benign/" in f:
        benign += 1
        bad = [d for d in r["diagnostics"] if d["severity"] <= 2]
        if r["verdict"] != "allow" or bad:
            benign_fp += 1
            failed += 1
            for d in bad:
                s = d["range"]["start"]
                print(f"FAIL {name}:{s['line'] + 1}:{s['character'] + 1}: false positive "
                      f"{d.get('code')}: {d['message']}")
        else:
            passed += 1
        continue
    with open(f, encoding="utf-8") as fh:
        first = fh.readline()
    words = first.split("expect:", 1)[1].split() if "expect:" in first else []
    expect = [w for w in words if not w.startswith("verdict=")]
    want = ([w[8:] for w in words if w.startswith("verdict=")] or ["deny"])[0]
    missing = [e for e in expect if e not in codes]
    hostile_ids += len(expect)
    hostile_hit += len(expect) - len(missing)
    if missing or r["verdict"] != want or not expect:
        failed += 1
        print(f"FAIL {name}: verdict {r['verdict']} (want {want}), missing {missing or '(no expect: line)'}, "
              f"got {sorted(c for c in codes if c)}")
    else:
        passed += 1

hostile = len(files) - benign
print(f"corpus: {len(files)} snippets ({hostile} hostile, {benign} benign), profile {profile}")
print(f"corpus: detection {hostile_hit}/{hostile_ids} expected rule ids "
      f"({100.0 * hostile_hit / max(hostile_ids, 1):.1f}%)")
print(f"corpus: false positives {benign_fp}/{benign} benign snippets "
      f"({100.0 * benign_fp / max(benign, 1):.1f}%)")
print(f"corpus: {passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
