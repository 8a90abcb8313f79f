# session_driver.py: the program a kiln session runs in its box (see
# server/sandbox/session/session.h and docs/sandbox.md, "Sessions"). kiln embeds
# this file, after kiln_display.py (rich output, shared with the one-shot
# runner oneshot.py) and source_coding.py (the check of a coding
# declaration), in its binary and writes them as one read-only file into
# the box.
#
# It keeps one namespace alive between runs, as a notebook kernel does.
# The channel to kiln is the socket kiln gave as stdin; it is moved to a
# private, close-on-exec fd and stdin becomes /dev/null. Frames both ways
# are a 4-byte big-endian length and a UTF-8 JSON object:
#   kiln -> driver  {"op": "run", "id", "code", "cpuMs", "outDir"}
#   driver -> kiln  {"op": "started"} (the run is taken: an interrupt now is its)
#                   {"op": "display", "data": {mime: value}, "metadata": {}}
#                   {"op": "done", "status": "ok"|"error"|"interrupted"|"cpu",
#                    "error": {"name", "value"}?, "cpuMs", "maxRssKb",
#                    "vars": [...], "changed": [names under outDir]}
#   kiln -> driver  {"op": "decline", "items": [{"i", "path", "remove": true,
#                    "prune"?} | {"i", "path", "data": base64, "mode"}]}
#   driver -> kiln  {"op": "declined", "results": [{"i", "error"?}]}
# A decline (between runs) takes declined workspace changes out of the
# session's layer from inside the box (the overlay must not be changed
# from outside while mounted): a path the host lacks is removed (and the
# folders up to "prune", when empty), one the host has gets the host's
# bytes and mode again. kiln then compares the layer with the host itself.
# The code's own output goes to fd 1 and 2, pipes kiln reads as a run's.
# Nothing here is trusted by kiln: the code could write to the channel,
# and kiln caps and checks every frame it reads.
import ast
import base64
import builtins
import fcntl
import json
import linecache
import os
import resource
import shutil
import signal
import socket
import struct
import sys
import termios
import time
import traceback
import types

FRAME_MAX = 8 << 20  # what kiln sends is at most 1 MiB of code
VARS_MAX = 60

_ch = socket.socket(fileno=os.dup(0))  # os.dup: not inherited by children
_nul = os.open("/dev/null", os.O_RDONLY)
os.dup2(_nul, 0)
os.close(_nul)


def _send(obj):
    body = json.dumps(obj, ensure_ascii=False, allow_nan=False, default=str).encode(
        "utf-8", "replace")
    _ch.sendall(struct.pack(">I", len(body)) + body)


def _recv_exact(n):
    parts = []
    while n:
        b = _ch.recv(min(n, 1 << 20))
        if not b:
            raise EOFError
        parts.append(b)
        n -= len(b)
    return b"".join(parts)


def _recv():
    (n,) = struct.unpack(">I", _recv_exact(4))
    if n > FRAME_MAX:
        raise EOFError
    return json.loads(_recv_exact(n).decode("utf-8"))


def _flush():
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except Exception:
            pass


# --- rich output: displays go over the channel (kiln_display.py) ------------

def _unread(fd, req):
    buf = bytearray(4)
    try:
        fcntl.ioctl(fd, req, buf, True)
    except OSError:
        return 0
    return int.from_bytes(buf, sys.byteorder)


def _wait_read(channel):
    """Wait (at most about 200 ms) until kiln has read what the code wrote
    to stdout and stderr, or (channel) the frame just sent. The pipes and
    the channel are separate streams: a display must come after the text
    printed before it, and before the text printed after it."""
    for _ in range(400):
        if channel:
            pending = _unread(_ch.fileno(), termios.TIOCOUTQ)
        else:
            pending = _unread(1, termios.FIONREAD) + _unread(2, termios.FIONREAD)
        if not pending:
            return
        time.sleep(0.0005)


def _channel_emit(data, metadata):
    _flush()
    _wait_read(False)
    _send({"op": "display", "data": data, "metadata": metadata})
    _wait_read(True)


_emit = _channel_emit
_install_backend()

# --- what the session holds ---------------------------------------------------

def _describe(name, v):
    d = {"name": name, "type": type(v).__name__}
    try:
        if isinstance(v, types.ModuleType):
            d["type"] = "module"
            d["value"] = getattr(v, "__name__", name)
        elif _is_instance(v, "pandas.core.frame", "DataFrame"):
            d["shape"] = list(v.shape)
            d["columns"] = [
                {"name": str(c), "dtype": str(t)} for c, t in list(v.dtypes.items())[:30]]
        elif _is_instance(v, "pandas.core.series", "Series"):
            d["shape"] = list(v.shape)
            d["dtype"] = str(v.dtype)
        elif hasattr(v, "shape") and hasattr(v, "dtype"):
            d["shape"] = [int(x) for x in v.shape]
            d["dtype"] = str(v.dtype)
        elif isinstance(v, (bool, int, float, complex)) or v is None:
            d["value"] = repr(v)[:60]
        elif isinstance(v, str):
            d["len"] = len(v)
            d["value"] = repr(v[:40])
        elif isinstance(v, (list, tuple, dict, set, frozenset)):
            d["len"] = len(v)
    except Exception:
        pass
    return d


def _vars(ns):
    out = []
    for name, v in list(ns.items()):
        if name.startswith("_") or name in ("display", "In", "Out"):
            continue
        if callable(v) and not isinstance(v, type) and type(v).__name__ in (
                "function", "builtin_function_or_method"):
            out.append({"name": name, "type": "function"})
        else:
            out.append(_describe(name, v))
        if len(out) >= VARS_MAX:
            break
    return out


# --- running ------------------------------------------------------------------

class CPULimitExceeded(BaseException):
    pass


def _on_xcpu(signum, frame):
    raise CPULimitExceeded("the run used its CPU time limit")


def _cpu_s():
    a = resource.getrusage(resource.RUSAGE_SELF)
    b = resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime


def _set_cpu_soft(seconds):
    soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
    want = resource.RLIM_INFINITY if seconds is None else int(seconds)
    if hard != resource.RLIM_INFINITY and (want == resource.RLIM_INFINITY or want > hard):
        want = hard
    try:
        resource.setrlimit(resource.RLIMIT_CPU, (want, hard))
    except (ValueError, OSError):
        pass


def _compile(code, filename):
    # compile() of text ignores a coding declaration; one that bare
    # CPython would honour is refused all the same (source_coding.py,
    # embedded ahead of this file).
    _kiln_check_coding(code, filename)
    tree = ast.parse(code, filename, "exec")
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    body = compile(tree, filename, "exec")
    return body, (compile(last, filename, "eval") if last is not None else None)


def _print_exception(e):
    tb = e.__traceback__
    # Drop the driver's own frames: the code's start with its cell.
    while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
        tb = tb.tb_next
    traceback.print_exception(type(e), e, tb, file=sys.stderr)


OUT_MAX = 1000


def _out_snapshot(out_dir):
    """The regular files under out_dir (four levels, links not followed):
    name -> what changes when the file does."""
    snap = {}

    def walk(path, prefix, depth):
        try:
            entries = list(os.scandir(path))
        except OSError:
            return
        for e in entries:
            if len(snap) >= OUT_MAX:
                return
            try:
                st = e.stat(follow_symlinks=False)
            except OSError:
                continue
            name = prefix + e.name
            if e.is_file(follow_symlinks=False):
                snap[name] = (st.st_ino, st.st_ctime_ns, st.st_mtime_ns, st.st_size)
            elif e.is_dir(follow_symlinks=False) and depth < 4:
                walk(e.path, name + "/", depth + 1)

    if isinstance(out_dir, str):
        walk(out_dir, "", 0)
    return snap


def _run(ns, req):
    run_id = str(req.get("id", ""))
    code = req.get("code", "")
    filename = "<%s>" % run_id
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    cpu_ms = req.get("cpuMs")
    out_dir = req.get("outDir")
    before = _out_snapshot(out_dir)
    start = _cpu_s()
    status, err = "ok", None
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGXCPU, _on_xcpu)
    if isinstance(cpu_ms, int) and cpu_ms > 0:
        _set_cpu_soft(start + (cpu_ms + 999) // 1000 + 1)
    # An interrupt meant for the run before this one is dropped; kiln
    # sends one for this run only after "started".
    while signal.SIGINT in signal.sigpending():
        signal.sigtimedwait([signal.SIGINT], 0)
    _send({"op": "started"})
    try:
        try:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])
            body, last = _compile(code, filename)
            exec(body, ns)
            if last is not None:
                value = eval(last, ns)
                if value is not None:
                    ns["_"] = value
                    display(value)
            _show_figures(True)
        finally:
            signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGINT])
    except KeyboardInterrupt as e:
        status = "interrupted"
        _print_exception(e)
    except CPULimitExceeded as e:
        status = "cpu"
        _print_exception(e)
    except SystemExit as e:
        status = "ok" if e.code in (None, 0) else "error"
        if status == "error":
            err = {"name": "SystemExit", "value": str(e.code)}
    except BaseException as e:
        status = "error"
        err = {"name": type(e).__name__, "value": str(e)[:1000]}
        _print_exception(e)
    _set_cpu_soft(None)
    signal.signal(signal.SIGXCPU, signal.SIG_IGN)
    _flush()
    _wait_read(False)
    reply = {"op": "done", "status": status, "cpuMs": int((_cpu_s() - start) * 1000),
             "maxRssKb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}
    if err:
        reply["error"] = err
    after = _out_snapshot(out_dir)
    reply["changed"] = sorted(n for n, v in after.items() if before.get(n) != v)[:64]
    try:
        reply["vars"] = _vars(ns)
    except BaseException:
        reply["vars"] = []
    _send(reply)


DECLINE_MAX = 1000


def _decline_one(it):
    path = it.get("path")
    if not isinstance(path, str) or not path.startswith("/"):
        raise ValueError("not an absolute path")
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.unlink(path)
    if it.get("remove"):
        prune = it.get("prune")
        parent = os.path.dirname(path)
        while isinstance(prune, str) and (parent + "/").startswith(prune + "/"):
            try:
                os.rmdir(parent)
            except OSError:
                break
            if parent == prune:
                break
            parent = os.path.dirname(parent)
        return
    data = base64.b64decode(it.get("data", ""), validate=True)
    mode = it.get("mode", 0o644)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fchmod(fd, mode & 0o7777 if isinstance(mode, int) else 0o644)
    finally:
        os.close(fd)


def _decline(req):
    results = []
    items = req.get("items")
    for it in (items if isinstance(items, list) else [])[:DECLINE_MAX]:
        if not isinstance(it, dict):
            continue
        r = {"i": it.get("i")}
        try:
            _decline_one(it)
        except Exception as e:
            r["error"] = ("%s: %s" % (type(e).__name__, e))[:200]
        results.append(r)
    _send({"op": "declined", "results": results})


def main():
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGINT])
    # A session is a REPL: its namespace starts as the interactive
    # interpreter's __main__ (`python3` with no file) in the same order:
    # the module's own five names, __annotations__ where this interpreter
    # gives a main module one (the driver's own __main__ was made by the
    # same start), __builtins__, and __loader__ the BuiltinImporter
    # (pylifecycle.c's add_main_module). Nothing of the driver's:
    # display() is a builtin, as IPython makes it; `_` comes with the
    # first displayed value, as in IPython (docs/sandbox.md, "Sessions").
    main_mod = types.ModuleType("__main__")
    ns = main_mod.__dict__
    if "__annotations__" in vars(sys.modules["__main__"]):
        ns["__annotations__"] = {}
    ns["__builtins__"] = builtins
    loader = getattr(sys.modules.get("_frozen_importlib"), "BuiltinImporter", None)
    if loader is not None:
        ns["__loader__"] = loader
    builtins.display = display
    sys.modules["__main__"] = main_mod
    sys.argv = [""]
    sys.path[0] = ""
    while True:
        try:
            req = _recv()
        except (EOFError, OSError, ValueError):
            os._exit(0)
        if isinstance(req, dict) and req.get("op") == "run":
            _run(ns, req)
        elif isinstance(req, dict) and req.get("op") == "decline":
            _decline(req)


main()
