# oneshot.py: how kiln runs one-shot Python (snippet/run without a
# sessionId, `kiln run`, an intent's proposal): python's argv in the
# language registry is `python3 -c RUNNER DISPLAY /work/code/snippet.py`,
# RUNNER being this file (after source_coding.py) and DISPLAY
# kiln_display.py (both embedded in kiln, server/sandbox/module.mk). The code runs as `python3
# /work/code/snippet.py` would run it: its own __main__ module holding
# exactly the names that gives it (none of the runner's: display() is a
# builtin, as in IPython), sys.argv, sys.path[0], tracebacks without the
# runner's frames, the exit status. Then, as in a notebook, the value of
# its last expression and the matplotlib figures it left open are
# displayed, and plt.show() and display() display. Displays never touch
# stdout or stderr: each bundle is a file under /work/.kiln-display (the
# box's own /work, not the workspace), which kiln reads once the run has
# ended and sends as run/display before the result (docs/sandbox.md). kiln_display.py is
# compiled only when something is displayed: this file is all a run that
# displays nothing pays for.
import os
import sys

DISPLAY_DIR = "/work/.kiln-display"
DISPLAY_MAX = 64

_display_src = sys.argv.pop(1)
_rich = None
_ndisplays = 0


def _file_emit(data, metadata):
    global _ndisplays
    n = _ndisplays
    _ndisplays += 1
    if n >= DISPLAY_MAX:
        if n == DISPLAY_MAX:
            print("kiln: only the first %d displays of a run are kept" % DISPLAY_MAX,
                  file=sys.stderr)
        return
    import json
    body = json.dumps({"data": data, "metadata": metadata}, ensure_ascii=False,
                      allow_nan=False, default=str).encode("utf-8", "replace")
    try:
        os.makedirs(DISPLAY_DIR, exist_ok=True)
        with open("%s/%04d.json" % (DISPLAY_DIR, n), "wb") as f:
            f.write(body)
    except OSError as e:
        print("kiln: cannot keep a display: %s" % e, file=sys.stderr)


def _kiln_display():
    """kiln_display.py's names, compiled on first use; in a child of
    kiln's Python zygote, the module kiln_display it loaded (whose
    matplotlib backend pyplot already has)."""
    global _rich
    if _rich is None:
        mod = sys.modules.get("kiln_display")
        if mod is not None:
            g = mod.__dict__
        else:
            g = {"__name__": "kiln_display", "__builtins__": __builtins__}
            exec(compile(_display_src, "<string>", "exec"), g)
        g["_emit"] = _file_emit
        _rich = g
    return _rich


def display(*objs, **kwargs):
    """Show each object as rich output (as IPython's display())."""
    _kiln_display()["display"](*objs, **kwargs)


class _Backend:
    """The matplotlib backend "module://kiln_mpl" (kiln_display.py's)."""

    def find_spec(self, name, path=None, target=None):
        if name != "kiln_mpl":
            return None
        return _kiln_display()["_BackendFinder"]().find_spec(name, path, target)


def _excepthook(t, v, tb):
    # The runner's own frames ("<string>") go: `python3 FILE` has none.
    while tb is not None and tb.tb_frame.f_code.co_filename == "<string>":
        tb = tb.tb_next
    try:
        v.__traceback__ = tb
    except Exception:
        pass
    sys.__excepthook__(t, v, tb)


def _compile(code, filename):
    """The code as a body and its last expression (or None). A module
    that is only its docstring keeps it in the body too: it is the
    module's __doc__, as `python3 FILE` sets it."""
    import _ast
    tree = compile(code, filename, "exec", _ast.PyCF_ONLY_AST)
    last = None
    if tree.body and isinstance(tree.body[-1], _ast.Expr):
        node = tree.body[-1]
        if len(tree.body) > 1 or not (isinstance(node.value, _ast.Constant) and
                                      isinstance(node.value.value, str)):
            tree.body.pop()
        last = _ast.Expression(node.value)
    body = compile(tree, filename, "exec")
    return body, (compile(last, filename, "eval") if last is not None else None)


def _run(path):
    import builtins
    sys.argv = sys.argv[1:]
    sys.path[0] = os.path.dirname(os.path.realpath(path))
    # __main__ as `python3 FILE` makes it, names in the same order: the
    # module's own five, __annotations__ where this interpreter gives a
    # main module one (this runner's own __main__, or in the zygote the
    # zygote's, was made by the same interpreter start), __builtins__,
    # __file__, __cached__, and __loader__ a SourceFileLoader of the file
    # (pythonrun.c's set_main_loader); __spec__ stays None. Nothing of
    # the runner's: display() is a builtin, as IPython makes it, and the
    # rest stays in this runner's own namespace.
    main = type(sys)("__main__")
    ns = main.__dict__
    if "__annotations__" in vars(sys.modules["__main__"]):
        ns["__annotations__"] = {}
    ns["__builtins__"] = builtins
    ns["__file__"] = path
    ns["__cached__"] = None
    loader = getattr(sys.modules.get("_frozen_importlib_external"), "SourceFileLoader", None)
    if loader is not None:
        ns["__loader__"] = loader("__main__", path)
    builtins.display = display
    sys.modules["__main__"] = main
    sys.excepthook = _excepthook
    sys.meta_path.append(_Backend())
    os.environ["MPLBACKEND"] = "module://kiln_mpl"
    if "kiln_display" in sys.modules:
        # A zygote's, whose backend pyplot has already: its displays
        # are this run's from the start.
        _kiln_display()
    with open(path, "rb") as f:
        code = f.read()
    # Read as UTF-8, as the editor and the validator read it
    # (source_coding.py, embedded ahead of this file).
    _kiln_check_coding(code, path)
    body, last = _compile(code, path)
    exec(body, ns)
    if last is not None:
        value = eval(last, ns)
        if value is not None:
            display(value)
    if "matplotlib.pyplot" in sys.modules:
        _kiln_display()["_show_figures"](True)


_run(sys.argv[1])
