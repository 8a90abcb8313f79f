# kiln_display.py: rich output for kiln's Python programs: the session
# driver (session_driver.py), in front of which kiln embeds it (one file
# in the box), and the one-shot runner (oneshot.py), which gets it as an
# argument (server/sandbox/module.mk). It defines display(), the MIME
# bundle of an object (Jupyter's display_data) and the matplotlib backend
# whose show() displays. Where a bundle goes is the program's: it sets
# _emit(data, metadata). Imports beyond os and sys are made when needed.
# The one-shot runner compiles this file only when something is to be
# displayed: a run that displays nothing pays nothing for it.
import os
import sys

TEXT_MAX = 256 << 10  # a display's text/plain

# Set by the program: where a display's bundle goes.
_emit = None

# --- rich output ------------------------------------------------------------

_REPRS = (("image/png", "_repr_png_"), ("image/jpeg", "_repr_jpeg_"),
          ("image/svg+xml", "_repr_svg_"), ("text/html", "_repr_html_"),
          ("text/markdown", "_repr_markdown_"), ("text/latex", "_repr_latex_"),
          ("application/json", "_repr_json_"))


def _figure_png(fig):
    import base64
    import io
    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight")
    # Shown as it is now: only a later change displays it again.
    fig.stale = False
    fig._kiln_shown = True
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _is_instance(obj, module, name):
    mod = sys.modules.get(module)
    cls = getattr(mod, name, None) if mod else None
    return isinstance(cls, type) and isinstance(obj, cls)


def _text(value):
    if isinstance(value, bytes):
        import base64
        return base64.b64encode(value).decode("ascii")
    if not isinstance(value, str):
        return None
    return value


def _bundle(obj):
    """A Jupyter-style MIME bundle: text/plain always."""
    data = {}
    if _is_instance(obj, "matplotlib.figure", "Figure"):
        data["image/png"] = _figure_png(obj)
    else:
        if _is_instance(obj, "pandas.core.series", "Series"):
            try:
                data["text/html"] = obj.to_frame()._repr_html_()
            except Exception:
                pass
        try:
            mb = getattr(obj, "_repr_mimebundle_", None)
            got = mb() if callable(mb) else None
            if isinstance(got, tuple):
                got = got[0]
            if isinstance(got, dict):
                for k, v in got.items():
                    if isinstance(k, str) and k != "text/plain":
                        t = v if k == "application/json" else _text(v)
                        if t is not None:
                            data[k] = t
        except Exception:
            pass
        for mime, meth in _REPRS:
            if mime in data:
                continue
            try:
                f = getattr(obj, meth, None)
                v = f() if callable(f) else None
            except Exception:
                v = None
            if isinstance(v, tuple):
                v = v[0]
            if v is None:
                continue
            if mime == "application/json":
                if isinstance(v, (dict, list)):
                    data[mime] = v
                continue
            t = _text(v)
            if t is not None:
                data[mime] = t
    try:
        plain = repr(obj)
    except Exception as e:
        plain = "<%s object (repr failed: %s)>" % (type(obj).__name__, e)
    if len(plain) > TEXT_MAX:
        plain = plain[:TEXT_MAX] + "\n[... %d more characters]" % (len(plain) - TEXT_MAX)
    data["text/plain"] = plain
    return data


def display(*objs, **kwargs):
    """Show each object as rich output (as IPython's display())."""
    for obj in objs:
        data = _bundle(obj)
        if _emit is not None:
            _emit(data, kwargs.get("metadata") or {})


def _show_figures(only_stale):
    """Display the open matplotlib figures: all of them (plt.show()), or
    at the end of a run those never displayed or changed since they were
    (a figure the code saved is drawn, so not stale, but not yet shown)."""
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return
    for num in list(plt.get_fignums()):
        fig = plt.figure(num)
        if (only_stale and getattr(fig, "_kiln_shown", False) and
                not getattr(fig, "stale", True)):
            continue
        try:
            display(fig)
        except Exception as e:
            print("kiln: cannot display figure %s: %s" % (num, e), file=sys.stderr)


class _BackendFinder:
    """Provides the matplotlib backend "module://kiln_mpl": Agg, whose
    show() displays the figures instead of doing nothing."""

    def find_spec(self, name, path=None, target=None):
        if name != "kiln_mpl":
            return None
        import importlib.machinery
        return importlib.machinery.ModuleSpec(name, self)

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        from matplotlib.backends import backend_agg
        module.FigureCanvas = backend_agg.FigureCanvasAgg
        module.FigureManager = getattr(backend_agg, "FigureManager",
                                       backend_agg.FigureManagerBase)

        def show(*args, **kwargs):
            _show_figures(False)
        module.show = show


def _install_backend():
    """matplotlib's backend is kiln_mpl (the environment is read when
    matplotlib is imported). In a child of kiln's Python zygote, pyplot
    has it already, from the zygote's module kiln_display: its displays
    are this program's too."""
    zd = sys.modules.get("kiln_display")
    if zd is not None and zd.__dict__ is not globals():
        zd._emit = lambda data, metadata: _emit(data, metadata)
    sys.meta_path.append(_BackendFinder())
    os.environ["MPLBACKEND"] = "module://kiln_mpl"
    # Debian's matplotlib reads /etc/matplotlibrc; where the box does not
    # show it, the packaged copy of the same defaults does.
    rc = "/usr/share/matplotlib/mpl-data/matplotlibrc"
    if "MATPLOTLIBRC" not in os.environ and not os.path.exists("/etc/matplotlibrc") \
            and os.path.exists(rc):
        os.environ["MATPLOTLIBRC"] = rc
