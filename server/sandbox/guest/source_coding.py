# source_coding.py: Python source is read as UTF-8 in kiln, so a coding
# declaration (PEP 263) naming any other encoding is refused. CPython
# decodes a file by the `coding:` comment of its first two lines; the
# editor, the validator and the person read UTF-8. In UTF-7 a comment's
# "+AAo-" is a line break and what follows it runs; unicode_escape's
# "\x0a" and a multi-byte codec's backslash byte do the same. kiln embeds
# this file ahead of the one-shot runner and the session driver, and the
# validator's CPython worker (validate/pyworker.c) ahead of its own
# program, so every place that compiles a person's Python says the same
# (docs/sandbox.md, "Python source is UTF-8"). UTF-8, ASCII and their
# aliases (as CPython's codecs name them) stay allowed: with them CPython
# reads what the editor shows.


def _kiln_coding_of(line):
    """The encoding a line declares, as CPython's tokenizer finds it
    (get_coding_spec): on a line that is a comment, the first "coding"
    followed by ':' or '=', blanks, and a name of letters, digits, '-',
    '_' or '.'. Returns (name, its column) or None."""
    s = line.lstrip(" \t\f")
    if not s.startswith("#"):
        return None
    lead = len(line) - len(s)
    i = s.find("coding")
    while i >= 0:
        t = i + 6
        if s[t:t + 1] in (":", "="):
            t += 1
            while s[t:t + 1] in (" ", "\t"):
                t += 1
            b = t
            while t < len(s) and (s[t] in "-_." or (s[t].isascii() and s[t].isalnum())):
                t += 1
            if t > b:
                return s[b:t], lead + b
        i = s.find("coding", i + 1)
    return None


def _kiln_coding_allowed(name):
    """UTF-8, ASCII or an alias of one. CPython itself takes "utf-8" and
    "utf-8-..." (either case, '_' for '-', as get_normal_name does) for
    UTF-8 before it asks the codecs."""
    buf = name[:12].lower().replace("_", "-")
    if buf == "utf-8" or buf.startswith("utf-8-"):
        return True
    import codecs
    try:
        return codecs.lookup(name).name in ("utf-8", "ascii")
    except Exception:
        return False


def _kiln_check_coding(src, filename):
    """Raise SyntaxError, as CPython does for an unknown encoding, when src
    (the code's bytes, or its text) declares an encoding other than UTF-8
    or ASCII on its first two lines. As in CPython, the second line is
    read only when the first is blank or a comment, and a line ends at
    \\n, \\r\\n or a lone \\r."""
    text = isinstance(src, str)
    nl, cr, bom = ("\n", "\r", "\ufeff") if text else (b"\n", b"\r", b"\xef\xbb\xbf")
    pos = len(bom) if src.startswith(bom) else 0
    for lineno in (1, 2):
        end = src.find(nl, pos)
        end = len(src) if end < 0 else end
        r = src.find(cr, pos, end)
        end = end if r < 0 else r
        line = src[pos:end]
        if not text:
            line = line.decode("utf-8", "replace")  # only its ASCII matters
        found = _kiln_coding_of(line)
        if found is not None:
            name, col = found
            if _kiln_coding_allowed(name):
                return
            raise SyntaxError(
                "encoding declaration '%s' refused: kiln reads Python source as UTF-8 "
                "(declare utf-8, or remove the declaration)" % name,
                (filename, lineno, col + 1, line, lineno, col + 1 + len(name)))
        if line.lstrip(" \t\f")[:1] not in ("", "#") or end == len(src):
            return
        pos = end + (2 if src[end:end + 2] == cr + nl else 1)
