# zygote_serve.py: the zygote itself: the hello (what to import, the
# filter, the steps), then a spare for each request, whose pid 1 it
# clones ahead; its last line starts the program. A part of the
# zygote's one program: kiln embeds zygote.py, zygote_pid1.py,
# zygote_program.py and zygote_serve.py one after the other (module.mk),
# so names come from the parts before.

def _clone():
    """A child in fresh namespaces (B), as os.fork() makes one: the
    interpreter's before/after-fork steps around a raw clone()."""
    flags = (CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC |
             CLONE_NEWUTS | signal.SIGCHLD)
    ctypes.pythonapi.PyOS_BeforeFork()
    pid = _raw_clone(ctypes.c_long(NR["clone"]), ctypes.c_ulong(flags), None, None, None, None)
    e = ctypes.get_errno()
    if pid == 0:
        ctypes.pythonapi.PyOS_AfterFork_Child()
    else:
        ctypes.pythonapi.PyOS_AfterFork_Parent()
    return pid, e


def _be_pid1(req, fds):
    """The child's life as B; never returns."""
    try:
        _pid1(req, fds)
    except BaseException:
        if _IN_PROGRAM:
            raise  # the code's own, in its process: up to the top level
        # A bug of B's: said on the status socket, as text.
        try:
            os.write(fds[2], b"E" + traceback.format_exc()[-2000:].encode())
        finally:
            os._exit(127)
    os._exit(127)


# The zygote's end of its channel to the child it cloned ahead (the next
# spare's pid 1, waiting for its request), or None; and its pid.
_ahead = None
_ahead_pid = 0


def _clone_ahead():
    """Clone the next spare's pid 1 now, while nothing waits for it: when
    kiln asks for the spare, the request only has to be passed on, and
    the pidfd kiln waits for comes back without a clone in between."""
    global _ahead, _ahead_pid
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    pid, _e = _clone()
    if pid == 0:
        ours.close()
        try:
            _set_cmdline(b"kiln-spare")
            msg, fds, _flags, _addr = socket.recv_fds(theirs, 1 << 16, 4)
        except (OSError, _Fail):
            os._exit(0)
        theirs.close()
        if not msg or len(fds) not in (3, 4):
            os._exit(0)  # the zygote is ending
        _be_pid1(json.loads(msg.decode("utf-8")), fds)
    theirs.close()
    if pid < 0:
        ours.close()
    else:
        _ahead, _ahead_pid = ours, pid


def _serve_one(msg, fds):
    global _ahead
    req = json.loads(msg.decode("utf-8"))
    if req.get("op") != "spare" or len(fds) not in (3, 4):
        for fd in fds:
            os.close(fd)
        return
    sent = False
    if _ahead is not None:
        # The pidfd kiln waits for, from here at once: the child may wait
        # for a CPU before it runs (the last run's processes are ending).
        try:
            pidfd = os.pidfd_open(_ahead_pid)
            with socket.socket(fileno=os.dup(fds[2])) as st:
                req["pidfdSent"] = _msg(st, ZYG_MSG_PIDFD, fd=pidfd)
            os.close(pidfd)
            socket.send_fds(_ahead, [json.dumps(req).encode("utf-8")], fds)
            sent = True
        except OSError:
            pass  # it is gone: clone one now (kiln may hear of it as a failure)
        _ahead.close()
        _ahead = None
    if not sent:
        pid, e = _clone()
        if pid == 0:
            _be_pid1(req, fds)
        if pid < 0:
            with socket.socket(fileno=os.dup(fds[2])) as st:
                _msg(st, SBX_MSG_FAIL, step=0, err=e or 1)
    for fd in fds:
        os.close(fd)
    # kiln's warmBoxes off: nothing made ahead; the next request clones.
    if req.get("ahead", True):
        _clone_ahead()


def _preload(names):
    imported, failed = [], []
    for name in names:
        try:
            importlib.import_module(name)
            imported.append(name)
        except BaseException as e:  # a module may fail any way it likes
            failed.append("%s: %s" % (name, e))
    # matplotlib's pyplot would pick its backend at first use: pick it now,
    # as MPLBACKEND says, so that no child repeats the search.
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        try:
            plt.get_backend()
        except Exception:
            pass
    return imported, failed


def _display_module(oneshot, display):
    """oneshot.py compiled once, and kiln_display.py as the module
    kiln_display: the runner and the session driver use it when they find
    it (each sets its _emit). With pyplot preloaded, its backend is made
    kiln's (module://kiln_mpl, Agg whose show() displays) here, once: a
    switch in each child costs about 10 ms."""
    global ONESHOT, DISPLAY_SRC
    DISPLAY_SRC = display
    ONESHOT = compile(oneshot, "<string>", "exec")
    mod = types.ModuleType("kiln_display")
    exec(compile(display, "<string>", "exec"), mod.__dict__)
    sys.modules["kiln_display"] = mod
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        sys.meta_path.append(mod._BackendFinder())
        try:
            plt.switch_backend("module://kiln_mpl")
        except Exception:
            pass


_STARTUP_SIGNALS = {}


def main():
    global FILTER, LANDLOCK_ABI, NR
    for s in range(1, signal.NSIG):
        try:
            _STARTUP_SIGNALS[s] = signal.getsignal(s)
        except (OSError, ValueError):
            pass
    msg = _ch.recv(1 << 20)
    hello = json.loads(msg.decode("utf-8"))
    FILTER = bytes.fromhex(hello["filter"])
    WATCH.update(hello["watch"])
    WATCH["filter"] = bytes.fromhex(hello["watch"]["filter"])
    LANDLOCK_ABI = int(hello.get("landlock", 0))
    NR = {k: int(v) for k, v in hello["nr"].items()}
    STEP.update({k: int(v) for k, v in hello["steps"].items()})
    imported, failed = _preload(hello.get("preload", []))
    _display_module(hello.get("oneshot", ""), hello.get("display", ""))
    sys.modules["kiln_zygote"] = sys.modules["__main__"]
    # Children are reaped by the kernel; nothing waits for them here.
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    gc.collect()
    # Objects made so far are never collected in a child: its GC does not
    # touch (and so copy) the pages they share with the zygote.
    gc.freeze()
    threads = sum(1 for _ in os.scandir("/proc/self/task"))
    _send({"op": "ready", "imported": imported, "failed": failed, "threads": threads,
           "pid": os.getpid()})
    if hello.get("ahead", True):
        _clone_ahead()
    while True:
        try:
            msg, fds, _flags, _addr = socket.recv_fds(_ch, 1 << 16, 4)
        except InterruptedError:
            continue
        except OSError:
            break
        if not msg:
            break
        _serve_one(msg, fds)
    # kiln is done with this zygote: its runs still going end first (the
    # box ends with its program); the child cloned ahead ends now.
    if _ahead is not None:
        _ahead.close()
    try:
        os.wait()
    except ChildProcessError:
        pass
    os._exit(0)


main()
