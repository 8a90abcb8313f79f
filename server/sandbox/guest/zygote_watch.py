# zygote_watch.py: the live masks of a run the zygote makes, as
# child_watch.c's are for a box kiln builds itself: C forks a watcher
# (W) locked down as C is so far, then adds the filter that asks W
# before each open, rename and link the code makes, and hands W its
# listener. W makes each call itself, checks what it reached by the path
# the kernel gives that object (a name to hide, anywhere under the
# workspace, or W's own /proc entry: refused with EACCES), and hands the
# code the descriptor (SECCOMP_IOCTL_NOTIF_ADDFD). The check is on the
# object, so no thread of the code can change the answer after it.
# docs/security.md, "Names made during a run".

# The live masks' filter and its listener's ioctls, from the hello.
WATCH = {}

_NOTIF = struct.Struct("=QIIiIQ6Q")  # struct seccomp_notif
_RESP = struct.Struct("=QqiI")  # struct seccomp_notif_resp
_ADDFD = struct.Struct("=QIIII")  # struct seccomp_notif_addfd
_HOW = struct.Struct("=QQQ")  # struct open_how
_AT_FDCWD = -100
_AT_SYMLINK_FOLLOW, _AT_EMPTY_PATH = 0x400, 0x1000
_O_PATH, _O_TMPFILE = 0o10000000, 0o20000000  # (__O_TMPFILE: without O_DIRECTORY)
_CAP_SYS_PTRACE = 19

_W = {"self": "", "ws": "", "patterns": []}


def _w_hidden(name):
    return any(fnmatch.fnmatchcase(name, p) for p in _W["patterns"])


def _w_refused(fd):
    """child_watch.c's refused(): the object fd reaches is under the
    workspace with a hidden name on its path, or W's own /proc entry."""
    try:
        real = os.readlink("/proc/self/fd/%d" % fd)
    except OSError:
        return True
    me = _W["self"]
    if real == me or real.startswith(me + "/"):
        return True
    ws = _W["ws"]
    if real != ws and not real.startswith(ws + "/"):
        return False
    if real.endswith(" (deleted)"):
        try:
            if os.fstat(fd).st_nlink == 0:
                real = real[:-len(" (deleted)")]
        except OSError:
            return True
    return any(c and _w_hidden(c) for c in real[len(ws):].split("/"))


def _w_in_ws(fd):
    try:
        real = os.readlink("/proc/self/fd/%d" % fd)
    except OSError:
        return True
    ws = _W["ws"]
    return real == ws or real.startswith(ws + "/")


def _w_openat2(dirfd, path, flags, mode=0, resolve=0):
    how = ctypes.create_string_buffer(_HOW.pack(flags, mode, resolve), _HOW.size)
    r = _syscall(NR["openat2"], ctypes.c_int(dirfd), os.fsencode(path), how,
                 ctypes.c_size_t(_HOW.size))
    if r < 0:
        raise OSError(ctypes.get_errno(), "openat2")
    return r


def _w_split(path):
    """child_watch.c's split(): (directory or ".", last component)."""
    end = len(path)
    while end > 1 and path[end - 1] == "/":
        end -= 1
    cut = path.rfind("/", 0, end) + 1
    if cut == 0:
        return ".", path
    d = path[:cut].rstrip("/") or "/"
    return d, path[cut:]


def _w_own(path, pid):
    for frm, to in (("/proc/self", ""), ("/proc/thread-self", ""), ("/dev/fd", "/fd"),
                    ("/dev/stdin", "/fd/0"), ("/dev/stdout", "/fd/1"), ("/dev/stderr", "/fd/2")):
        if path == frm or path.startswith(frm + "/"):
            return "/proc/%d%s%s" % (pid, to, path[len(frm):])
    return path


def _w_start(pid, dirfd, path):
    if path.startswith("/"):
        return _AT_FDCWD, None
    p = "/proc/%d/cwd" % pid if dirfd == _AT_FDCWD else "/proc/%d/fd/%d" % (pid, dirfd)
    fd = os.open(p, _O_PATH | os.O_CLOEXEC)
    return fd, fd


def _w_open(d, path, flags, mode, resolve):
    """child_watch.c's do_open(): the new fd, or raises OSError."""
    if not flags & (os.O_ACCMODE | os.O_CREAT | os.O_TRUNC | _O_PATH | _O_TMPFILE):
        # Only read, as most opens: made as asked, then checked.
        f = _w_openat2(d, path, flags, mode, resolve)
        if _w_refused(f):
            os.close(f)
            raise OSError(errno.EACCES, "hidden")
        return f
    try:
        o = _w_openat2(d, path, _O_PATH | os.O_CLOEXEC | (flags & (os.O_NOFOLLOW | os.O_DIRECTORY)),
                       0, resolve)
    except OSError as e:
        if e.errno != errno.ENOENT or not flags & os.O_CREAT:
            raise
        dpart, base = _w_split(path)
        p = _w_openat2(d, dpart, _O_PATH | os.O_DIRECTORY | os.O_CLOEXEC, 0, resolve)
        try:
            if _w_refused(p) or (_w_in_ws(p) and _w_hidden(base.rstrip("/"))):
                raise OSError(errno.EACCES, "hidden")
            f = _w_openat2(p, base, flags, mode, resolve)
        finally:
            os.close(p)
        if _w_refused(f):
            os.close(f)
            raise OSError(errno.EACCES, "hidden")
        return f
    try:
        if _w_refused(o):
            raise OSError(errno.EACCES, "hidden")
        if flags & _O_PATH:
            o2, o = o, -1
            return o2
        st = os.fstat(o)
        if stat.S_ISLNK(st.st_mode):
            raise OSError(errno.ELOOP, "link")
        if stat.S_ISDIR(st.st_mode):
            f = _w_openat2(o, ".", flags & ~(os.O_NOFOLLOW | os.O_CREAT | os.O_EXCL), mode)
        else:
            f = os.open("/proc/self/fd/%d" % o, flags & ~(os.O_NOFOLLOW | os.O_CREAT), mode)
        if flags & os.O_CREAT and flags & os.O_EXCL:
            os.close(f)
            raise OSError(errno.EEXIST, "exists")
        return f
    finally:
        if o >= 0:
            os.close(o)


def _w_move(link, od, opath, nd, npath, flags):
    """child_watch.c's do_move(): rename or link after checking both ends."""
    odir, obase = _w_split(opath)
    ndir, nbase = _w_split(npath)
    fds = []
    try:
        src = None
        if link and flags & (_AT_SYMLINK_FOLLOW | _AT_EMPTY_PATH):
            src = _w_openat2(od, opath or ".", _O_PATH | os.O_CLOEXEC)
            fds.append(src)
            if _w_refused(src):
                raise OSError(errno.EACCES, "hidden")
        else:
            o = _w_openat2(od, odir, _O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
            fds.append(o)
            if _w_refused(o) or (_w_in_ws(o) and _w_hidden(obase.rstrip("/"))):
                raise OSError(errno.EACCES, "hidden")
        n = _w_openat2(nd, ndir, _O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        fds.append(n)
        if _w_refused(n) or (_w_in_ws(n) and _w_hidden(nbase.rstrip("/"))):
            raise OSError(errno.EACCES, "hidden")
        if src is not None:
            os.link("/proc/self/fd/%d" % src, nbase, dst_dir_fd=n, follow_symlinks=True)
        elif link:
            os.link(obase, nbase, src_dir_fd=o, dst_dir_fd=n, follow_symlinks=False)
        else:
            r = _syscall(NR["renameat2"], o, os.fsencode(obase), n, os.fsencode(nbase),
                         ctypes.c_uint(flags))
            if r < 0:
                raise OSError(ctypes.get_errno(), "renameat2")
    finally:
        for fd in fds:
            os.close(fd)


def _w_string(mem, addr):
    out = b""
    while len(out) < 4096:
        chunk = 4096 - ((addr + len(out)) & 4095)
        try:
            b = os.pread(mem, chunk, addr + len(out))
        except OSError:
            raise OSError(errno.EFAULT, "string")
        if not b:
            raise OSError(errno.EFAULT, "string")
        i = b.find(b"\0")
        if i >= 0:
            return os.fsdecode(out + b[:i])
        out += b
    raise OSError(errno.ENAMETOOLONG, "string")


def _w_umask(pid):
    try:
        with open("/proc/%d/status" % pid, "rb") as f:
            for line in f:
                if line.startswith(b"Umask:"):
                    os.umask(int(line.split()[1], 8) & 0o777)
                    return
    except (OSError, ValueError, IndexError):
        pass


_W_NAMES = {}


def _w_handle(lst, nid, pid, nr, a):
    """One asked call: (fd or None, cloexec); raises OSError for -errno."""
    if not _W_NAMES:
        _W_NAMES.update({NR[k]: k for k in ("open", "openat", "openat2", "creat", "rename",
                                            "renameat", "renameat2", "link", "linkat") if k in NR})
    name = _W_NAMES.get(nr)
    dirfd = dirfd2 = _AT_FDCWD
    p2 = None
    flags = mode = resolve = mflags = 0
    if name == "open":
        p1, flags, mode = a[0], a[1], a[2]
    elif name == "creat":
        p1, flags, mode = a[0], os.O_CREAT | os.O_WRONLY | os.O_TRUNC, a[1]
    elif name == "openat":
        dirfd, p1, flags, mode = a[0], a[1], a[2], a[3]
    elif name == "openat2":
        dirfd, p1 = a[0], a[1]
    elif name == "rename" or name == "link":
        p1, p2 = a[0], a[1]
    elif name in ("renameat", "renameat2", "linkat"):
        dirfd, p1, dirfd2, p2 = a[0], a[1], a[2], a[3]
        mflags = a[4] if name != "renameat" else 0
    else:
        raise OSError(errno.ENOSYS, "not asked")
    dirfd = ctypes.c_int(dirfd & 0xffffffff).value
    dirfd2 = ctypes.c_int(dirfd2 & 0xffffffff).value
    flags &= 0xffffffff
    # The asking thread's memory, kept open while the same thread asks
    # again; read afresh once when that fails (an execve, a reused pid).
    for tries in (0, 1):
        if _W.get("mem_pid") != pid or tries:
            if _W.get("mem") is not None:
                os.close(_W["mem"])
                _W["mem"] = None
            _W["mem"] = os.open("/proc/%d/mem" % pid, os.O_RDONLY | os.O_CLOEXEC)
            _W["mem_pid"] = pid
        mem = _W["mem"]
        try:
            s1 = _w_string(mem, p1)
            s2 = _w_string(mem, p2) if p2 is not None else None
            if name == "openat2":
                if a[3] < _HOW.size:
                    raise OSError(errno.EINVAL, "open_how")
                h = os.pread(mem, _HOW.size, a[2])
                if len(h) != _HOW.size:
                    raise OSError(errno.EFAULT, "open_how")
                flags, mode, resolve = _HOW.unpack(h)
            break
        except OSError as e:
            if e.errno != errno.EFAULT or tries:
                raise
    buf = bytearray(struct.pack("=Q", nid))
    fcntl.ioctl(lst, WATCH["idValid"], buf)  # raises when the caller is gone
    s1 = _w_own(s1, pid)
    d1, c1 = _w_start(pid, dirfd, s1)
    try:
        if s2 is None:
            if flags & (os.O_CREAT | _O_TMPFILE):
                _w_umask(pid)
            return _w_open(d1, s1, flags, mode, resolve), bool(flags & os.O_CLOEXEC)
        s2 = _w_own(s2, pid)
        d2, c2 = _w_start(pid, dirfd2, s2)
        try:
            _w_move(name in ("link", "linkat"), d1, s1, d2, s2, mflags)
        finally:
            if c2 is not None:
                os.close(c2)
        return None, False
    finally:
        if c1 is not None:
            os.close(c1)


def _w_serve(lst):
    req = bytearray(max(_NOTIF.size, 512))
    while True:
        for i in range(len(req)):
            req[i] = 0
        try:
            fcntl.ioctl(lst, WATCH["recv"], req)
        except OSError as e:
            if e.errno in (errno.EINTR, errno.ENOENT):
                continue
            os._exit(0)
        nid, pid, _fl, nr, _arch, _ip, *args = _NOTIF.unpack_from(req)
        err = 0
        try:
            fd, cloexec = _w_handle(lst, nid, pid, nr, args)
        except OSError as e:
            fd, err = None, -(e.errno or errno.EIO)
        except Exception:
            fd, err = None, -errno.EIO
        if fd is not None:
            add = bytearray(_ADDFD.pack(nid, WATCH["addfdSend"], fd, 0,
                                        os.O_CLOEXEC if cloexec else 0))
            try:
                fcntl.ioctl(lst, WATCH["addfd"], add)
                continue
            except OSError as e:
                if e.errno == errno.ENOENT:
                    continue
                err = -(e.errno or errno.EIO)
            finally:
                os.close(fd)
        try:
            fcntl.ioctl(lst, WATCH["send"], bytearray(_RESP.pack(nid, 0, err, 0)))
        except OSError:
            pass


def _w_main(sock, ws, patterns):
    """W: only its socket kept; CAP_SYS_PTRACE kept (to read the asking
    thread's memory under Yama's relational scope), not dumpable, under
    the deny filter, as child_watch.c's watch_main()."""
    try:
        os.dup2(sock, 3, inheritable=False)
        _syscall(NR["close_range"], 0, 2, 0)
        _syscall(NR["close_range"], 4, ctypes.c_uint(0xFFFFFFFF), 0)
        # Out of the code's process group: a session's Ctrl-C is not W's.
        os.setsid()
        for s in (signal.SIGINT, signal.SIGQUIT, signal.SIGTERM, signal.SIGHUP, signal.SIGPIPE):
            signal.signal(s, signal.SIG_IGN)
        if _drop_caps(keep=1 << _CAP_SYS_PTRACE) < 0:
            os._exit(1)
        if _prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0:
            os._exit(1)
        buf = ctypes.create_string_buffer(FILTER, len(FILTER))
        prog = _Fprog(len(FILTER) // 8, ctypes.cast(buf, ctypes.c_void_p))
        if _prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(prog), 0, 0) < 0:
            os._exit(1)
        _W["self"] = "/proc/%d" % os.getpid()
        _W["ws"] = ws
        _W["patterns"] = list(patterns)
        s = socket.socket(fileno=3)
        _msg, fds, _f, _a = socket.recv_fds(s, 1, 1)
        s.close()
        if not fds:
            os._exit(1)
        _w_serve(fds[0])
    except BaseException:
        os._exit(1)
    os._exit(0)


def _watch_start(ws, patterns):
    """C, after Landlock and before its capabilities go: fork W (through
    a middle process, so that W is pid 1's child, not one the code would
    find among its own); the socket to it."""
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    pid = os.fork()
    if pid == 0:
        try:
            if os.fork() == 0:
                _w_main(b.fileno(), ws, patterns)
            os._exit(0)
        except BaseException:
            os._exit(1)
    b.close()
    _p, st = os.waitpid(pid, 0)
    if not os.WIFEXITED(st) or os.WEXITSTATUS(st):
        a.close()
        raise OSError(errno.ECHILD, "watcher")
    return a


def _watch_listen(a):
    """C, under the deny filter: add the filter that asks W, hand W the
    listener."""
    f = WATCH["filter"]
    buf = ctypes.create_string_buffer(f, len(f))
    prog = _Fprog(len(f) // 8, ctypes.cast(buf, ctypes.c_void_p))
    lst = _syscall(NR["seccomp"], 1, ctypes.c_uint(WATCH["filterFlag"]), ctypes.byref(prog))
    if lst < 0:
        e = ctypes.get_errno()
        a.close()
        raise OSError(e, "seccomp")
    try:
        socket.send_fds(a, [b"w"], [lst])
    finally:
        os.close(lst)
        a.close()
