#!/usr/bin/env python3
"""figures.py: the bench's machine-readable ratios, its baseline, its table.

Each bench script prints its figures for people and, when run.sh sets
KILN_BENCH_FIGURES to a file, also appends one line a ratio to it:

    name<TAB>ratio<TAB>lower-is-better|higher-is-better<TAB>kiln<TAB>peer

(kiln and peer are optional text for the table: "2.57 ms"). From shell:
`python3 tests/bench/figures.py add NAME RATIO DIRECTION [KILN [PEER]]`
(does nothing when KILN_BENCH_FIGURES is unset); from Python: add().

Subcommands (run.sh calls them; see docs/performance.md, "The baseline"):
  add NAME RATIO DIRECTION [KILN [PEER]]
  compare BASELINE RUN --load L --quiet-below Q
      each figure's change against the baseline; a ratio worse by more
      than WORSE (15%) is marked "WORSE", and on a run whose load average
      (1 min) is not below Q the marks are not a verdict. Exit 0 always:
      the bench never fails on a slowdown.
  baseline RUN OUT --load L --quiet-below Q --commit C
      write OUT (the committed baseline) from RUN.
  table RUN PAGE OUT --load L --quiet-below Q --commit C
      write PAGE (docs/performance.md) to OUT with the "Today's figures"
      rows this run produced regenerated; rows it does not produce are
      copied as they are.
"""
import math
import os
import sys
import time

WORSE = 0.15
DIRECTIONS = ("lower-is-better", "higher-is-better")
FIELD_CAP = 200  # characters kept of a kiln/peer text


def add(name, ratio, direction, kiln="", peer=""):
    """Append one figure to $KILN_BENCH_FIGURES (nothing when unset)."""
    path = os.environ.get("KILN_BENCH_FIGURES")
    if not path:
        return
    if direction not in DIRECTIONS:
        raise SystemExit(f"figures.py: direction {direction!r} is not one of {DIRECTIONS}")
    try:
        r = float(ratio)
    except ValueError:
        r = math.nan
    clean = lambda s: "".join(c if c.isprintable() else "?" for c in str(s))[:FIELD_CAP]
    with open(path, "a") as f:
        f.write(f"{clean(name)}\t{r:.6g}\t{direction}\t{clean(kiln)}\t{clean(peer)}\n")


def read(path):
    """Figures of a run or a baseline file: {name: (ratio, direction, kiln, peer)},
    and the header's '# key<TAB>value' lines."""
    figs, head = {}, {}
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            if line.startswith("#"):
                k, _, v = line[1:].strip().partition("\t")
                head[k.strip()] = v.strip()
                continue
            p = line.split("\t")
            if len(p) < 3 or p[0] == "name":
                continue
            try:
                r = float(p[1])
            except ValueError:
                continue
            figs[p[0]] = (r, p[2], p[3] if len(p) > 3 else "", p[4] if len(p) > 4 else "")
    return figs, head


def change(base, now, direction):
    """How much worse `now` is than `base` (0.2 = 20% worse; negative: better)."""
    if not (base > 0 and now > 0) or math.isnan(base) or math.isnan(now):
        return math.nan
    return now / base - 1 if direction == "lower-is-better" else base / now - 1


def compare(base_path, run_path, load, quiet_below, out=sys.stdout):
    base, head = read(base_path)
    run, _ = read(run_path)
    quiet = load < quiet_below
    out.write(f"against the baseline {base_path} ({head.get('date', '?')}, "
              f"{head.get('commit', '?')}, load {head.get('load', '?')}):\n")
    marked = []
    for name in sorted(run):
        r, d, _, _ = run[name]
        if name not in base:
            out.write(f"  {name:<40} {r:9.4g}x  (no baseline)\n")
            continue
        b = base[name][0]
        c = change(b, r, d)
        mark = ""
        if not math.isnan(c) and c > WORSE:
            mark = "  WORSE" if quiet else "  worse (loaded run: not a verdict)"
            marked.append(name)
        cs = "n/a" if math.isnan(c) else f"{(r / b - 1) * 100:+.0f}%"
        word = "" if math.isnan(c) else (" worse" if c > 0 else " better" if c < 0 else "")
        out.write(f"  {name:<40} {r:9.4g}x  baseline {b:9.4g}x  {cs:>6}{word} ({d}){mark}\n")
    for name in sorted(set(base) - set(run)):
        out.write(f"  {name:<40} not measured in this run (baseline {base[name][0]:.4g}x)\n")
    if quiet:
        out.write(f"quiet run (load average {load:.2f}, below {quiet_below:g}): "
                  f"{len(marked)} ratio(s) worse by more than {WORSE:.0%}"
                  + (": " + ", ".join(marked) if marked else "") + "\n")
    else:
        out.write(f"NOT A VERDICT: load average {load:.2f} is not below {quiet_below:g}; "
                  f"on a loaded machine the comparison says nothing about a slowdown "
                  f"(run again on a quiet one)\n")
    return marked, quiet


def header(load, quiet_below, commit):
    return (f"# date\t{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n"
            f"# commit\t{commit}\n"
            f"# load\t{load:.2f}\n"
            f"# quiet\t{'yes' if load < quiet_below else 'no'} (threshold {quiet_below:g})\n")


def write_baseline(run_path, out_path, load, quiet_below, commit):
    run, _ = read(run_path)
    with open(out_path, "w") as f:
        f.write("# kiln bench baseline: the ratios of one `make bench`, written by\n"
                "# `BENCH_UPDATE_BASELINE=1 make bench` (docs/performance.md, \"The baseline\").\n")
        f.write(header(load, quiet_below, commit))
        f.write("name\tratio\tdirection\tkiln\tpeer\n")
        for name in sorted(run):
            r, d, k, p = run[name]
            f.write(f"{name}\t{r:.6g}\t{d}\t{k}\t{p}\n")


def fmt_ratio(r):
    if math.isnan(r):
        return "n/a"
    return f"{r:.3f}x" if r < 0.1 else f"{r:.2f}x"


# The rows of docs/performance.md's "Today's figures" this bench produces:
# the row's first cell, the figures in it (joined with " / "), and the
# target as (direction, bound) or None. Rows not listed stay as they are:
# numpy/pandas (two figures in one cell), the output row (its pinned turns
# are not recorded yet), idle memory (its target is in MB, not a ratio).
ROWS = [
    ("Python `print(1)`, from the zygote", ["zygote.print1"], ("lower-is-better", 0.5)),
    ("the same with a workspace", ["zygote.print1.workspace"], ("lower-is-better", 0.5)),
    ("`session/open` + a first `import pandas; print(1)`", ["session.open_first"], None),
    ("then `print(1)` in the open session", ["session.print1"], ("lower-is-better", 1.0)),
    ("`/bin/true` in a warm box, through the server", ["sandbox.warm_true"], ("lower-is-better", 1.5)),
    ("a cold `kiln run` of `exit 0` (bash), started in `/` (no workspace)", ["cold.none"],
     ("lower-is-better", 1.0)),
    ("the same in an empty project folder / a 1,900-file checkout",
     ["cold.folder", "cold.checkout"], ("lower-is-better", 1.1)),
    ("warm box against a cold one, `/bin/true` / Python",
     ["sandbox.warm_cold.true", "sandbox.warm_cold.python"], ("lower-is-better", 1.0)),
    ("model's last token → proposal at the client, 30 lines (ollama / openai)",
     ["intent.last_token.ollama", "intent.last_token.openai"], ("lower-is-better", 1.0)),
    ("`intent/approve` → first output byte (ollama / openai)",
     ["intent.approve.ollama", "intent.approve.openai"], None),
    ("JSON-RPC round trips, pinned to one CPU", ["protocol.rtt_pinned"], ("higher-is-better", 3)),
    ("20-line `snippet/validate` sent right after a 4 MiB one", ["latency.small_behind_big"],
     ("lower-is-better", 1.0)),
    ("validator, 20 lines of Python, with CPython", ["validate.s20.bandit"], ("higher-is-better", 1000)),
    ("validator, 200 lines of Python, with CPython", ["validate.s200.bandit"], ("higher-is-better", 100)),
]


def table(run_path, page_path, out_path, load, quiet_below, commit):
    run, _ = read(run_path)
    when = time.strftime("%m-%d %H:%M", time.gmtime())
    quiet = load < quiet_below
    lines = open(page_path).read().split("\n")
    out, done, section = [], [], False
    for line in lines:
        if line.startswith("## "):
            section = line.strip() == "## Today's figures"
        if section and line.startswith("| ") and not line.startswith("| ---") \
                and not line.startswith("| figure |"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            for label, names, target in ROWS:
                if cells[0] != label or not all(n in run for n in names):
                    continue
                figs = [run[n] for n in names]
                kiln = " / ".join(f[2] for f in figs if f[2])
                peer = " / ".join(dict.fromkeys(f[3] for f in figs if f[3]))
                if kiln:
                    cells[1] = kiln
                if peer:
                    cells[2] = peer
                cells[3] = " / ".join(fmt_ratio(f[0]) for f in figs)
                if target:
                    d, bound = target
                    ok = all((f[0] <= bound) if d == "lower-is-better" else (f[0] >= bound)
                             for f in figs)
                    cells[5] = "yes" if ok else "**no**"
                cells[6] = f"{when}, {commit}" + ("" if quiet else f" (load {load:.1f}: not quiet)")
                line = "| " + " | ".join(cells) + " |"
                done.append(label)
                break
        out.append(line)
    with open(out_path, "w") as f:
        f.write("\n".join(out))
    return done


def opts(argv, *keys):
    got = {}
    for k in keys:
        flag = "--" + k
        if flag not in argv:
            raise SystemExit(f"figures.py: {flag} is missing")
        i = argv.index(flag)
        got[k] = argv[i + 1]
        del argv[i:i + 2]
    return got


def main(argv):
    if not argv:
        raise SystemExit(__doc__)
    cmd, args = argv[0], list(argv[1:])
    if cmd == "add":
        if len(args) < 3:
            raise SystemExit("usage: figures.py add NAME RATIO DIRECTION [KILN [PEER]]")
        add(*args[:5])
    elif cmd == "compare":
        o = opts(args, "load", "quiet-below")
        compare(args[0], args[1], float(o["load"]), float(o["quiet-below"]))
    elif cmd == "baseline":
        o = opts(args, "load", "quiet-below", "commit")
        write_baseline(args[0], args[1], float(o["load"]), float(o["quiet-below"]), o["commit"])
    elif cmd == "table":
        o = opts(args, "load", "quiet-below", "commit")
        done = table(args[0], args[1], args[2], float(o["load"]), float(o["quiet-below"]), o["commit"])
        print(f"wrote {args[2]}: {len(done)} row(s) of \"Today's figures\" from this run; "
              f"the others are copied as they were")
    else:
        raise SystemExit(f"figures.py: no subcommand {cmd!r}\n{__doc__}")


if __name__ == "__main__":
    main(sys.argv[1:])
