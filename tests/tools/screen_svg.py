#!/usr/bin/env python3
"""screen_svg.py IN.ansi OUT.svg: a terminal screen as an SVG picture.

IN is what `tmux capture-pane -e -p` printed: the pane's lines with SGR
escape sequences (colours, bold, underline, reverse, strike-through). OUT
shows those lines as the terminal drew them, one monospace cell per
column (two for East Asian wide characters), so the editor suites can put
a real screenshot of Neovim or Emacs in a terminal into docs/editors.md.

Only SGR (`ESC [ ... m`) is read; any other escape sequence is dropped, and
any other control character is drawn as a visible `^X`, never passed into
the SVG. The pane is capped at 200 lines of 400 columns.

    python3 tests/tools/screen_svg.py --self-test   checks the converter
"""
import html
import re
import sys
import unicodedata

MAX_ROWS, MAX_COLS = 200, 400
CELL_W, CELL_H, FONT = 8.4, 17, 14

# xterm's default 16 colours.
BASE16 = [
    "#000000", "#cd0000", "#00cd00", "#cdcd00", "#0000ee", "#cd00cd", "#00cdcd", "#e5e5e5",
    "#7f7f7f", "#ff0000", "#00ff00", "#ffff00", "#5c5cff", "#ff00ff", "#00ffff", "#ffffff",
]
DEFAULT_FG, DEFAULT_BG = "#d0d0d0", "#1e1e1e"


def color256(n):
    if n < 16:
        return BASE16[n]
    if n < 232:
        n -= 16
        steps = [0, 95, 135, 175, 215, 255]
        return "#%02x%02x%02x" % (steps[n // 36], steps[(n // 6) % 6], steps[n % 6])
    v = 8 + 10 * (n - 232)
    return "#%02x%02x%02x" % (v, v, v)


class Style:
    __slots__ = ("fg", "bg", "bold", "dim", "italic", "under", "rev", "strike")

    def __init__(self):
        self.reset()

    def reset(self):
        self.fg = self.bg = None
        self.bold = self.dim = self.italic = self.under = self.rev = self.strike = False

    def key(self):
        return tuple(getattr(self, s) for s in self.__slots__)

    def apply(self, params):
        ps = [int(p) if p.isdigit() else 0 for p in params.split(";")] if params else [0]
        i = 0
        while i < len(ps):
            p = ps[i]
            if p == 0:
                self.reset()
            elif p == 1:
                self.bold = True
            elif p == 2:
                self.dim = True
            elif p == 3:
                self.italic = True
            elif p == 4:
                self.under = True
            elif p == 7:
                self.rev = True
            elif p == 9:
                self.strike = True
            elif p == 22:
                self.bold = self.dim = False
            elif p == 23:
                self.italic = False
            elif p == 24:
                self.under = False
            elif p == 27:
                self.rev = False
            elif p == 29:
                self.strike = False
            elif 30 <= p <= 37:
                self.fg = BASE16[p - 30]
            elif 90 <= p <= 97:
                self.fg = BASE16[p - 90 + 8]
            elif 40 <= p <= 47:
                self.bg = BASE16[p - 40]
            elif 100 <= p <= 107:
                self.bg = BASE16[p - 100 + 8]
            elif p == 39:
                self.fg = None
            elif p == 49:
                self.bg = None
            elif p in (38, 48) and i + 1 < len(ps):
                c = None
                if ps[i + 1] == 5 and i + 2 < len(ps):
                    c, i = color256(ps[i + 2] & 255), i + 2
                elif ps[i + 1] == 2 and i + 4 < len(ps):
                    c = "#%02x%02x%02x" % tuple(v & 255 for v in ps[i + 2:i + 5])
                    i += 4
                if p == 38:
                    self.fg = c
                else:
                    self.bg = c
            i += 1


ESC_RE = re.compile(r"\x1b(?:\[([0-9;:?]*)([@-~])|[()][0-9A-Za-z]|[@-Z\\-_])")


def visible(ch):
    o = ord(ch)
    if o < 0x20 or o == 0x7F:
        return "^" + chr(o ^ 0x40)
    if 0x80 <= o < 0xA0 or unicodedata.category(ch) in ("Cf", "Cs", "Co"):
        return "<U+%04X>" % o
    return ch


def width(ch):
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def parse(text):
    """Rows of cells: [(char, style key)], at most MAX_ROWS x MAX_COLS."""
    rows = []
    st = Style()
    for line in text.split("\n")[:MAX_ROWS]:
        row = []
        pos = 0
        while pos < len(line) and len(row) < MAX_COLS:
            m = ESC_RE.match(line, pos)
            if m:
                if m.group(2) == "m":
                    st.apply(m.group(1).replace(":", ";"))
                pos = m.end()
                continue
            ch = line[pos]
            pos += 1
            for c in visible(ch):
                row.append((c, st.key()))
                if width(c) == 2:
                    row.append(("", st.key()))
        rows.append(row[:MAX_COLS])
    while rows and not rows[-1]:
        rows.pop()
    return rows


def colors(key):
    fg, bg, bold, dim, italic, under, rev, strike = key
    fg, bg = fg or DEFAULT_FG, bg or DEFAULT_BG
    if rev:
        fg, bg = bg, fg
    return fg, bg


def render(rows):
    cols = max([len(r) for r in rows] + [1])
    w, h = cols * CELL_W + 16, len(rows) * CELL_H + 16
    out = [
        '<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" '
        'viewBox="0 0 %.0f %.0f" font-family="DejaVu Sans Mono, Menlo, Consolas, monospace" '
        'font-size="%d">' % (w, h, w, h, FONT),
        '<rect width="100%%" height="100%%" fill="%s"/>' % DEFAULT_BG,
    ]
    for y, row in enumerate(rows):
        top = 8 + y * CELL_H
        # Background runs.
        x = 0
        while x < len(row):
            _, bg = colors(row[x][1])
            x2 = x
            while x2 < len(row) and colors(row[x2][1])[1] == bg:
                x2 += 1
            if bg != DEFAULT_BG:
                out.append('<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"/>' %
                           (8 + x * CELL_W, top, (x2 - x) * CELL_W, CELL_H, bg))
            x = x2
        # Text runs of one style; each cell placed by its column.
        x = 0
        while x < len(row):
            key = row[x][1]
            x2 = x
            while x2 < len(row) and row[x2][1] == key:
                x2 += 1
            cells = row[x:x2]
            text = "".join(c for c, _ in cells)
            if text.strip():
                fg, _ = colors(key)
                attrs = ['fill="%s"' % fg]
                if key[2]:
                    attrs.append('font-weight="bold"')
                if key[3]:
                    attrs.append('opacity="0.6"')
                if key[4]:
                    attrs.append('font-style="italic"')
                deco = [d for d, on in (("underline", key[5]), ("line-through", key[7])) if on]
                if deco:
                    attrs.append('text-decoration="%s"' % " ".join(deco))
                xs = " ".join("%.1f" % (8 + (x + i) * CELL_W) for i, (c, _) in enumerate(cells) if c)
                chars = "".join(c for c, _ in cells if c)
                out.append('<text x="%s" y="%d" %s xml:space="preserve">%s</text>' %
                           (xs, top + CELL_H - 4, " ".join(attrs), html.escape(chars)))
            x = x2
    out.append("</svg>")
    return "\n".join(out) + "\n"


def self_test():
    rows = parse("\x1b[32m+ added\x1b[0m \x1b[9;31mgone\x1b[m\x07\n\x1b[1;48;5;22mok\x1b[0m \u4e2d</a>")
    svg = render(rows)
    assert 'fill="#00cd00"' in svg and "+ added" in svg, svg
    assert 'text-decoration="line-through"' in svg and 'fill="#cd0000"' in svg, svg
    assert "^G" in svg and "\x07" not in svg, svg
    assert 'fill="#005f00"' in svg and 'font-weight="bold"' in svg, svg
    assert "&lt;/a&gt;" in svg and "</a>" not in svg, svg
    assert len(rows[1]) == 2 + 1 + 2 + 4, rows[1]
    print("screen_svg: self-test passed")


def main(argv):
    if argv[1:] == ["--self-test"]:
        self_test()
        return 0
    if len(argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8", errors="replace") as f:
        rows = parse(f.read())
    if not rows:
        print("screen_svg: %s holds no screen" % argv[1], file=sys.stderr)
        return 1
    with open(argv[2], "w", encoding="utf-8") as f:
        f.write(render(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
