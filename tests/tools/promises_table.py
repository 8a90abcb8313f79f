#!/usr/bin/python3
"""promises_table.py: every test docs/security.md's table of promises
("The four promises, front end by front end") names exists: a transcript
by its file, any other by its name in the test sources (as the suite
prints it). Exits 1 naming each one that does not, or when the table is
not there with its eight front ends and four promises."""
import os
import re
import subprocess
import sys

FRONT_ENDS = ["protocol", "CLI", "shell", "Neovim", "VS Code", "Emacs", "plain LSP", "MCP"]
SOURCES = ["tests", "editor-clients", "protocol"]


def names(cell):
    for n in re.findall(r"`([^`]+)`", cell):
        if re.match(r"^[0-9]{2}-[a-z-]+( [a-z]+)?: ", n):
            n = n.split(": ", 1)[1]
        yield n


def exists(name):
    if name.startswith("*/model/"):
        return os.path.exists("protocol/transcripts/intent/model/%s.test.in" % name[8:])
    if name.endswith(".test"):
        return any(os.path.exists("protocol/transcripts/" + name + s) for s in ("", ".in"))
    name = re.sub(r"^\[[a-z0-9.-]+\] ", "", name)
    name = re.sub(r"^(inspector|roots|decline): ", "", name)
    # A name in the source may be written with escaped quotes ('run\'s').
    for form in (name, name.replace("'", "\\'")):
        # Not the mutation patches: one of them holds a name no test has.
        if subprocess.run(["grep", "-rqF", "--exclude-dir=mutations", "--", form] +
                          SOURCES).returncode == 0:
            return True
    return False


def main():
    text = open("docs/security.md", encoding="utf-8").read()
    at = text.find("## The four promises, front end by front end")
    if at < 0:
        print("docs/security.md has no table of promises")
        return 1
    rows = {}
    for line in text[at:].split("\n## ", 1)[0].splitlines():
        cells = [c.strip() for c in line.split("|")[1:-1]]
        if len(cells) == 5 and not cells[0].startswith(("front end", "---")):
            rows[cells[0]] = cells[1:]
    bad = 0
    for fe in FRONT_ENDS:
        row = next((v for k, v in rows.items() if k.split(" (")[0] == fe), None)
        if row is None:
            print("no row for %s" % fe)
            bad += 1
            continue
        for i, cell in enumerate(row):
            got = list(names(cell))
            if not got:
                print("%s, promise %d: no test named" % (fe, i + 1))
                bad += 1
            for n in got:
                if not exists(n):
                    print("%s, promise %d: no test %r" % (fe, i + 1, n))
                    bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
