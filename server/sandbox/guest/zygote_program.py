# zygote_program.py: C, the program's process in a run's box made by the
# zygote: it locks itself down as child_program.c's program() does,
# waits for its run, sets the run's rlimits, runs the code in its copy
# of the interpreter (the one-shot runner, a script or the session
# driver) and reports its own end to B. A part of the zygote's one
# program: kiln embeds zygote.py, zygote_pid1.py, zygote_program.py and
# zygote_serve.py one after the other (module.mk), so names come from
# the parts before.

class _LandlockAttr(ctypes.Structure):
    _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("access", ctypes.c_uint64), ("fd", ctypes.c_int32)]


class _Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _landlock(ws):
    """child_lockdown.c's child_apply_landlock(): reads everywhere, writes to /work, /tmp,
    the workspace ws (or None) and the /dev nodes; with ABI 6, signals and
    abstract sockets scoped."""
    abi = LANDLOCK_ABI
    if abi <= 0:
        return 0
    allf = (1 << 13) - 1
    if abi >= 2:
        allf |= 1 << 13
    if abi >= 3:
        allf |= 1 << 14
    if abi >= 5:
        allf |= 1 << 15
    read = 1 | (1 << 2) | (1 << 3)  # EXECUTE, READ_FILE, READ_DIR
    dev = read | (1 << 1) | ((1 << 14) if abi >= 3 else 0)
    attr = _LandlockAttr(allf, 0, 3 if abi >= 6 else 0)
    size = ctypes.sizeof(attr) if abi >= 6 else 8
    rs = _syscall(NR["landlock_create_ruleset"], ctypes.byref(attr), ctypes.c_size_t(size), 0)
    if rs < 0:
        return -1
    rules = [("/", read), ("/work", allf), ("/tmp", allf), ("/dev", dev)]
    if ws:
        rules.append((ws, allf))  # the workspace's overlay, writable
    for path, acc in rules:
        try:
            fd = os.open(path, os.O_PATH)
        except FileNotFoundError:
            continue
        pb = _PathBeneath(acc, fd)
        r = _syscall(NR["landlock_add_rule"], rs, 1, ctypes.byref(pb), 0)
        os.close(fd)
        if r < 0:
            return -1
    r = _syscall(NR["landlock_restrict_self"], rs, 0)
    os.close(rs)
    return r


def _drop_caps(keep=0):
    if _prctl(PR_SET_SECUREBITS, SECUREBITS_LOCKED, 0, 0, 0) < 0:
        return -1
    for cap in range(64):
        if _prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0:
            if ctypes.get_errno() == 22:
                break
            return -1
    if _prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0:
        return -1
    hdr = (ctypes.c_uint32 * 2)(0x20080522, 0)
    data = (ctypes.c_uint32 * 6)(keep, keep, 0, 0, 0, 0)  # effective, permitted
    return _syscall(NR["capset"], hdr, data)


_IN_PROGRAM = False
_ST = None  # B's status socket
# C's end of its end-report pipe (_program), and C's pid (_run_code): the
# report is C's alone, not that of a process the code forked.
_END_FD = None
_END_PID = 0
# The end report: magic, wait status, CPU time (user, system, in
# microseconds), peak resident set (KiB), as getrusage has them.
_END = struct.Struct("=4siqqq")
_END_MAGIC = b"kend"


def _report_end(wstatus):
    """C, its program over (output flushed): close every fd, so that its
    pipes see EOF now if no other process holds them, and tell B how it
    ended with its rusage (its own and its reaped children's), read here
    because B, reporting before C's exit, cannot wait for C's. The code
    can write such a report too: only for its own run (the pipe is this
    box's alone), as it could call os._exit()."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    rec = _END.pack(_END_MAGIC, wstatus, int((me.ru_utime + kids.ru_utime) * 1e6),
                    int((me.ru_stime + kids.ru_stime) * 1e6),
                    max(me.ru_maxrss, kids.ru_maxrss))
    fd = _END_FD
    try:
        os.closerange(0, fd)
        os.closerange(fd + 1, 1 << 30)
        os.write(fd, rec)
        # What is left of C, its exit's teardown, yields to the server
        # and the next run (the zygote makes its spare now).
        os.setpriority(os.PRIO_PROCESS, 0, 19)
    except OSError:
        pass


def _read_end(fd):
    """B: C's end report, as (wstatus, rusage), or None when what came is
    none (C's pipe closed without one) or not a plausible one."""
    try:
        # One record: a pipe keeps each write of one whole (under
        # PIPE_BUF), whatever else the code writes after it.
        b = os.read(fd, _END.size)
    except OSError:
        return None
    if len(b) != _END.size:
        return None
    magic, ws, ut, st, rss = _END.unpack(b)
    # An exit code (0-255) or a signal (1-64, no core flag): what a
    # wait status of an ended process can be.
    if magic != _END_MAGIC or not (0 <= ws <= 0xff00 and ws & 0xff == 0 or 1 <= ws <= 64):
        return None
    return ws, types.SimpleNamespace(ru_utime=max(ut, 0) / 1e6, ru_stime=max(st, 0) / 1e6,
                                     ru_maxrss=max(rss, 0))


def _program(out, err, ch, end_w):
    """C: lock down as child_program.c's program() does, wait for the run, then
    run the code. ch is B's channel: "r" when locked down, the run's
    rlimits and path back, a failure record if one fails; closed (as a
    successful execve would close it) before the code runs. end_w is the
    pipe of its end report (_report_end), kept at _END_FD, out of the
    code's way, for a one-shot or script run."""
    global _IN_PROGRAM, _END_FD
    _IN_PROGRAM = True
    # Its fd is closed below with the rest: the object must not close
    # that number again later, when it may be the code's.
    _ST.detach()
    pfd = ch
    try:
        # First, before the dup2s below could land on it: the highest
        # fd the box's open-files limit allows, close-on-exec (the code
        # opens files from 3 up, as on the normal path; a program it
        # execs never has it).
        high = min(resource.getrlimit(resource.RLIMIT_NOFILE)[0], 1024) - 1
        if high <= 3 or high in (out, err, ch):
            # (A tiny limit: above the fds moved below, wherever free.)
            high = fcntl.fcntl(end_w, fcntl.F_DUPFD_CLOEXEC, max(4, out + 1, err + 1, ch + 1))
            os.close(end_w)
        elif end_w != high:
            os.dup2(end_w, high, inheritable=False)
            os.close(end_w)
        _END_FD = high
        _check("session", _prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0))
        os.setsid()
        nul = os.open("/dev/null", os.O_RDONLY)
        os.dup2(nul, 0)
        os.dup2(out, 1)
        os.dup2(err, 2)
        # Only B's channel stays, close-on-exec as it is (at 3).
        if pfd != 3:
            os.dup2(pfd, 3)
            pfd = 3
        os.set_inheritable(3, False)
        if (_syscall(NR["close_range"], 4, ctypes.c_uint(_END_FD - 1), 0) < 0 or
                _syscall(NR["close_range"], _END_FD + 1, ctypes.c_uint(0xFFFFFFFF), 0) < 0):
            raise OSError(ctypes.get_errno(), "close_range")
        # The channel as a socket object, for a session's fd with the run
        # (detached before the code runs: the object never closes 3).
        chs = socket.socket(fileno=pfd)
    except OSError as e:
        _report(pfd, STEP["stdio"], e.errno or 1)
    except _Fail as f:
        _report(pfd, f.step, f.err)
    # What an execve would give the program: its /proc files its own.
    _prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)
    try:
        os.chdir(_WS or "/work")
    except OSError as e:
        _report(pfd, STEP["chdir"], e.errno or 1)
    os.umask(0o022)
    if _syscall(NR["keyctl"], KEYCTL_JOIN_SESSION_KEYRING, 0) < 0:
        _report(pfd, STEP["keyring"], ctypes.get_errno())
    if _prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0:
        _report(pfd, STEP["nnp"], ctypes.get_errno())
    if _landlock(_WS) < 0:
        _report(pfd, STEP["landlock"], ctypes.get_errno())
    for s in range(1, signal.NSIG):
        if s in (signal.SIGKILL, signal.SIGSTOP):
            continue
        try:
            h = _STARTUP_SIGNALS.get(s)
            signal.signal(s, signal.SIG_DFL if h is None else h)
        except (OSError, ValueError, RuntimeError, TypeError):
            pass
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    # With a workspace, the watcher of names made during the run
    # (zygote_watch.py): forked here, in this process's Landlock domain,
    # while it still has a capability to keep.
    watch = None
    if _WS and _HIDE_PATTERNS:
        try:
            watch = _watch_start(_WS, _HIDE_PATTERNS)
        except OSError as e:
            _report(pfd, STEP["watch"], e.errno or 1)
    if _drop_caps() < 0:
        _report(pfd, STEP["caps"], ctypes.get_errno())
    buf = ctypes.create_string_buffer(FILTER, len(FILTER))
    prog = _Fprog(len(FILTER) // 8, ctypes.cast(buf, ctypes.c_void_p))
    # From here on the filter applies to every call this process and the
    # code make.
    if _prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(prog), 0, 0) < 0:
        _report(pfd, STEP["seccomp"], ctypes.get_errno())
    if watch is not None:
        try:
            _watch_listen(watch)
        except OSError as e:
            _report(pfd, STEP["watch"], e.errno or 1)
    _warm()
    # Locked down: wait for the run. The rlimits are lowered here, under
    # the filter (no capability is needed to lower one; prlimit64 is
    # refused only on pid 1).
    try:
        os.write(pfd, b"r")
        msg, fds, _flags, _addr = socket.recv_fds(chs, 1 << 16, 1)
    except OSError:
        msg, fds = b"", []
    if not msg:
        os._exit(0)  # no run for this box
    run = json.loads(msg.decode("utf-8"))
    if fds:
        # A session's channel: the driver's stdin (then closed at its
        # number, as the channel below).
        try:
            os.dup2(fds[0], 0)
            os.close(fds[0])
        except OSError as e:
            _report(pfd, STEP["stdio"], e.errno or 1)
    try:
        for res, soft, hard in run["rlimits"]:
            resource.setrlimit(res, (soft, hard))
    except (OSError, ValueError) as e:
        _report(pfd, STEP["rlimit"], getattr(e, "errno", None) or 22)
    # /proc/self/cmdline says "kiln", as pid 1's does.
    _set_cmdline(b"kiln")
    chs.detach()
    os.close(pfd)  # as a successful execve would
    mode = run.get("mode", "script")
    if mode == "session":
        # A session's driver outlives its runs: it ends as before.
        os.close(_END_FD)
        _END_FD = None
    _run_code(run["path"], mode)


def _warm():
    """C, before its run: walk what _run_code walks first (the
    environment, compiling and running a module), so that the pages it
    writes are this process's own copies before the run comes (each
    first write to a page shared with the zygote is a copy-on-write
    fault). Nothing of it stays: _run_code does it all again. Not the
    reseeding: that stays _run_code's alone (one place to test)."""
    try:
        os.environ.clear()
        os.environ.update(ENV)
        main = types.ModuleType("__main__")
        exec(compile("pass\n", "/code/warm.py", "exec"), main.__dict__)
    except Exception:
        pass


def _report(pfd, step, err):
    try:
        os.write(pfd, struct.pack("ii", step, err or 1))
    finally:
        os._exit(127)


def _trim(tb):
    # The zygote's own frames are not the program's: a traceback starts
    # in the code's file, as `python3 FILE` shows it.
    while tb is not None and tb.tb_frame.f_code.co_filename == ZYGOTE_FILE:
        tb = tb.tb_next
    return tb


def _excepthook(kind, value, tb):
    tb = _trim(tb)
    if isinstance(value, BaseException):
        value.__traceback__ = tb  # what the printer reads
    sys.__excepthook__(kind, value, tb)


def _exit_code(e):
    """What the interpreter makes of an uncaught SystemExit."""
    code = e.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    try:
        print(code, file=sys.stderr)
    except Exception:
        pass
    return 1


def _name_process(path):
    """A session's driver shows as one in a built box does (`python3
    /code/kiln_session.py` in ps): its copy of the argv area, which B set
    to "kiln", is overwritten in place, as far as it goes."""
    try:
        with open("/proc/self/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        start, end = int(fields[45]), int(fields[46])
        text = (b"python3\0" + path.encode())[:end - start - 1]
        ctypes.memset(start, 0, end - start)
        ctypes.memmove(start, text, len(text))
    except (OSError, IndexError, ValueError):
        pass


def _oneshot(path):
    """The code through kiln's one-shot runner, as `python3 -c RUNNER
    DISPLAY path` runs it (oneshot.py): the runner makes the code's
    __main__, argv and path, and displays its last expression and open
    figures; kiln_display, already a module here, is the one it uses."""
    sys.argv = ["-c", DISPLAY_SRC, path]
    exec(ONESHOT, {"__name__": "__main__", "__builtins__": builtins})


def _script(path):
    """The code as `python3 path` runs it: its own __main__, argv, path."""
    with open(path, "rb") as f:
        source = f.read()
    # Its names as `python3 path` gives them, in their order (as
    # oneshot.py's _run makes them; the zygote's own __main__ was made by
    # the same interpreter start).
    main = types.ModuleType("__main__")
    ns = main.__dict__
    if "__annotations__" in vars(sys.modules["__main__"]):
        ns["__annotations__"] = {}
    ns.update({"__builtins__": builtins, "__file__": path, "__cached__": None})
    loader = getattr(sys.modules.get("_frozen_importlib_external"), "SourceFileLoader", None)
    if loader is not None:
        ns["__loader__"] = loader("__main__", path)
    sys.modules["__main__"] = main
    sys.argv = [path]
    sys.path[0] = os.path.dirname(os.path.realpath(path))
    exec(compile(source, path, "exec"), ns)


def _run_code(path, mode):
    """The code as the interpreter would run it, by mode (see the top of
    this file): the environment of the box, fresh random state; an
    exception it does not catch is printed by sys.excepthook and the exit
    status is what the interpreter's would be. The end is the
    interpreter's, without its teardown of every module (which would copy
    most of the zygote's pages for nothing): threads joined, atexit
    handlers run, output flushed, then _exit."""
    global _END_PID
    _END_PID = os.getpid()
    os.environ.clear()
    os.environ.update(ENV)
    # A child of a zygote must not replay its parent's random numbers:
    # random reseeds itself after a fork, numpy's global generator not.
    random.seed()
    np = sys.modules.get("numpy")
    if np is not None:
        try:
            np.random.seed()
        except Exception:
            pass
    if mode == "session":
        _name_process(path)
    sys.excepthook = _excepthook
    status, sigint = 0, False
    try:
        if mode == "oneshot":
            _oneshot(path)
        else:
            _script(path)
    except SystemExit as e:
        status = _exit_code(e)
    except BaseException as e:
        e.__traceback__ = _trim(e.__traceback__)
        try:
            sys.excepthook(type(e), e, e.__traceback__)
        except BaseException:
            traceback.print_exception(type(e), e, e.__traceback__)
        status, sigint = 1, isinstance(e, KeyboardInterrupt)
    threading = sys.modules.get("threading")
    try:
        if threading is not None:
            threading._shutdown()
        import atexit
        atexit._run_exitfuncs()
    except BaseException:
        pass
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except Exception:
            status = status or 120
    if _END_FD is not None and os.getpid() == _END_PID:
        _report_end(signal.SIGINT if sigint else (status & 0xFF) << 8)
    if sigint:
        # As the interpreter ends on an uncaught KeyboardInterrupt.
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(status)
