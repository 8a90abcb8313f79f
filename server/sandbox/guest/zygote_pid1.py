# zygote_pid1.py: B, pid 1 of a run's box made by the zygote: it mounts
# the run's own /proc, /tmp and /work (and the workspace's overlay and
# masks), reports on the run's status socket as child.c's pid 1 does,
# forks C and, when the run comes, hands it the run, then reaps and
# reports the end. A part of the zygote's one program: kiln embeds
# zygote.py, zygote_pid1.py, zygote_program.py and zygote_serve.py one
# after the other (module.mk), so names come from the parts before.

def _write(path, text):
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _mnt(step, src, dst, fstype, flags, data=None):
    _check(step, _mount(src, dst.encode(), fstype, flags, data))


# Where this process's argv lies (arg_start, arg_end), which is what
# /proc/PID/cmdline shows; set by B, inherited by C.
_ARGV = None


def _set_cmdline(name):
    """As child.c's hide_cmdline(): /proc/1/cmdline, which the program may
    read, says "kiln", not the zygote's argv. This process's own copy of
    its argv (arg_start, arg_end: fields 48 and 49 of /proc/self/stat)
    is overwritten in place. A spare's processes say "kiln-spare" until
    their run comes (the tests tell them from a run's that way)."""
    global _ARGV
    try:
        if _ARGV is None:
            with open("/proc/self/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            _ARGV = int(fields[45]), int(fields[46])
        start, end = _ARGV
        if end - start < len(name) + 1:
            raise OSError(22, "argv too short")
        ctypes.memset(start, 0, end - start)
        ctypes.memmove(start, name, len(name))
    except (OSError, IndexError, ValueError) as e:
        raise _Fail(STEP["cmdline"], getattr(e, "errno", None) or 22)


def _loopback_up():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        ifr = struct.pack("16sH22x", b"lo", 0)
        flags = struct.unpack("16sH22x", fcntl.ioctl(s, 0x8913, ifr))[1]  # SIOCGIFFLAGS
        fcntl.ioctl(s, 0x8914, struct.pack("16sH22x", b"lo", flags | 0x41))  # UP|RUNNING
    finally:
        s.close()


def _box(req):
    """B's setup, ahead of its run: the run's own mounts over the zygote
    box's, but the code's."""
    uid, gid = IDS  # B's own are unmapped until it writes the maps
    try:
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", "%d %d 1\n" % (uid, uid))
        _write("/proc/self/gid_map", "%d %d 1\n" % (gid, gid))
    except OSError as e:
        raise _Fail(STEP["ids"], e.errno or 1)
    # As a box's pid 1: its /proc files belong to root from now on (the
    # program, which runs no exec, makes itself dumpable again).
    _prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    _set_cmdline(b"kiln-spare")
    # No namespace of any kind inside the run's (a layer under seccomp,
    # as child_lockdown.c's child_forbid_namespaces()); through the zygote box's /proc,
    # before the run's read-only one covers it.
    for n in ("user", "mnt", "net", "pid", "ipc", "uts", "cgroup", "time"):
        try:
            _write("/proc/sys/user/max_%s_namespaces" % n, "0\n")
        except OSError:
            pass
    # inotify counts per user: small quotas, as child_lockdown.c's (the filter
    # refuses inotify; these hold if it did not).
    for n, v in req["userQuotas"].items():
        try:
            _write("/proc/sys/user/%s" % n, v)
        except OSError:
            pass
    _mnt("private", None, "/", None, MS_REC | MS_PRIVATE)
    # A fresh /proc for the fresh pid namespace, read-only as a box's:
    # the mount, not its superblock (as child.c's fsmount() does), so
    # that a write to a /proc file is refused by its own check first.
    # Its key files are covered, as in child.c.
    _mnt("proc", b"proc", "/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    _mnt("proc", None, "/proc", None,
         MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)
    # Each must be covered (the boot line is the host's): a file that
    # cannot be fails the run, as in child.c; a keys file may be absent.
    for f in req["procHidden"]:
        f = "/" + f
        if not os.path.exists(f):
            continue
        _mnt("proc", b"/dev/null", f, None, MS_BIND)
        _mnt("proc", None, f, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NOEXEC)
    global _SCRATCH
    size = int(req["tmpfs"])
    _SCRATCH = (size, req["inodes"])
    _mnt("scratch", b"kiln", "/tmp", b"tmpfs", MS_NOSUID | MS_NODEV,
         b"size=%d,nr_inodes=%s,mode=1777" % (size, req["inodes"].encode()))
    _mnt("scratch", b"kiln", "/work", b"tmpfs", MS_NOSUID | MS_NODEV,
         b"size=%d,nr_inodes=%s,mode=0755" % (size, req["inodes"].encode()))
    os.mkdir("/work/out", 0o755)
    workfd = os.open("/work", os.O_RDONLY | os.O_DIRECTORY)
    upperfd = None
    if req.get("ws"):
        try:
            upperfd = _mount_workspace(req)
        except OSError as e:
            raise _Fail(STEP["workspace"], e.errno or 1)
    try:
        _loopback_up()
    except OSError as e:
        raise _Fail(STEP["loopback"], e.errno or 1)
    return workfd, upperfd


# The workspace of B's box: its path, and O_PATH fds of the masks (an
# empty directory and an empty file, mode 0, on a read-only tmpfs).
_WS = None
_MASKS = None
_HIDE_PATTERNS = []


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64),
                ("resolve", ctypes.c_uint64)]


def _open_beneath(dirfd, path, flags):
    """child.c's child_open_beneath(): path under dirfd, no link followed."""
    how = _OpenHow(flags | os.O_CLOEXEC | os.O_NOFOLLOW, 0,
                   RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)
    fd = _syscall(NR["openat2"], dirfd, path.encode(), ctypes.byref(how),
                  ctypes.c_size_t(ctypes.sizeof(how)))
    if fd < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e), path)
    return fd


def _fdpath(fd):
    return "/proc/self/fd/%d" % fd


def _mount_workspace(req):
    """child_workspace.c's child_mount_workspace(): the host folder (which the zygote's
    box holds read-only at wsLower) under a fresh tmpfs upper layer, at
    the folder's own path; then wsLower is covered by the masks' tmpfs,
    so that nothing of the folder is seen but through the overlay. The
    upper layer's fd, for kiln's diff (SBX_MSG_UPPER)."""
    global _WS, _MASKS
    ws, lower_path = req["ws"], req["wsLower"]
    size, inodes = int(req["tmpfs"]), req["inodes"].encode()
    # Under /tmp or /work the path is made in B's scratch; elsewhere the
    # zygote's root has it already (zygote.c), and mkdir says EEXIST.
    os.makedirs(ws, 0o755, exist_ok=True)
    root = os.open("/", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        mp = _open_beneath(root, ws.lstrip("/"), os.O_PATH | os.O_DIRECTORY)
    finally:
        os.close(root)
    lower = os.open(lower_path, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    # The upper tmpfs is mounted at /code only while the overlay is made
    # (overlayfs keeps private clones of its layers); the run's code
    # tmpfs goes there later.
    _mnt("workspace", b"kiln", "/code", b"tmpfs", MS_NOSUID | MS_NODEV,
         b"size=%d,nr_inodes=%s,mode=0755" % (size, inodes))
    os.mkdir("/code/u", 0o755)
    os.mkdir("/code/w", 0o755)
    upper = os.open("/code/u", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    # userxattr: overlayfs's own marks in user.overlay.* xattrs.
    _mnt("workspace", b"overlay", _fdpath(mp), b"overlay", MS_NOSUID | MS_NODEV,
         b"lowerdir=%s,upperdir=/code/u,workdir=/code/w,userxattr" % _fdpath(lower).encode())
    _check("workspace", _umount2(b"/code", MNT_DETACH))
    os.close(lower)
    os.close(mp)
    # The masks' tmpfs, over wsLower: read-only, its root mode 0.
    _mnt("workspace", b"kiln", lower_path, b"tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
         b"size=65536,nr_inodes=8,mode=0555")
    os.mkdir(lower_path + "/d", 0)
    os.close(os.open(lower_path + "/f", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0))
    _MASKS = (os.open(lower_path + "/d", os.O_PATH | os.O_CLOEXEC),
              os.open(lower_path + "/f", os.O_PATH | os.O_CLOEXEC))
    os.chmod(lower_path, 0)
    _mnt("workspace", None, lower_path, None,
         MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)
    _WS = ws
    return upper


def _walk_masked(top, pats, mask_fd):
    """child_workspace.c's walk_and_mask(): what pid 1 walks itself (another file
    system mounted in the workspace), from top (taken): every entry whose
    name matches a pattern is masked, a directory not entered once
    masked nor followed through a link; one the box cannot read is
    skipped. Past the entry cap or SBX_HIDE_DEPTH as child.c."""
    entries = [0]

    def visit(fd, depth):
        try:
            try:
                with os.scandir(fd) as it:
                    items = [(e.name, e.is_dir(follow_symlinks=False),
                              e.is_file(follow_symlinks=False)) for e in it]
            except OSError:
                items = []
            for name, is_dir, is_file in items:
                entries[0] += 1
                if entries[0] > SBX_HIDE_WALK_MAX_ENTRIES:
                    raise OSError(7, "too many entries")  # E2BIG
                if not (is_dir or is_file):
                    continue  # links are not followed; devices cannot be opened
                if (any(fnmatch.fnmatchcase(name, p) for p in pats) or
                        (is_dir and depth + 1 >= SBX_HIDE_DEPTH)):
                    tgt = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
                    try:
                        mask_fd(tgt, is_dir)
                    finally:
                        os.close(tgt)
                    continue
                if is_dir:
                    try:
                        sub = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC |
                                      os.O_NOFOLLOW, dir_fd=fd)
                    except OSError:
                        continue
                    visit(sub, depth + 1)
        finally:
            os.close(fd)
    visit(top, 0)


def _glob(pat):
    # child_workspace.c's glob_match is fnmatch(3)'s: [^...] is [!...].
    return pat.replace("[^", "[!")


def _hide_listed(listfd, patterns):
    """child_workspace.c's child_hide_listed(): mask every entry the server's list names
    (records "<kind><path>\\0", kind F, D or W), opened without following
    a link; one that is not where the list says fails the run."""
    pats = [_glob(p) for p in patterns]
    data, off = [], 0
    while True:
        b = os.pread(listfd, 1 << 20, off)
        if not b:
            break
        data.append(b)
        off += len(b)
    data = b"".join(data)
    if data and not data.endswith(b"\0"):
        raise OSError(71, "a record cut short")  # EPROTO
    ws = os.open(_WS, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC | os.O_NOFOLLOW)
    n = [0]

    def mask_fd(tgt, is_dir):
        n[0] += 1
        if n[0] > SBX_HIDE_MAX_MASKS:
            raise OSError(7, "too many masks")  # E2BIG
        _mnt("hide", _fdpath(_MASKS[0 if is_dir else 1]).encode(), _fdpath(tgt), None, MS_BIND)

    try:
        for rec in data.split(b"\0")[:-1] if data else []:
            if not rec:
                raise OSError(71, "an empty record")
            kind, path = chr(rec[0]), rec[1:].decode("utf-8", "surrogateescape")
            if kind == "W":
                try:
                    top = _open_beneath(ws, path, os.O_RDONLY | os.O_DIRECTORY)
                except PermissionError:
                    continue
                _walk_masked(top, pats, mask_fd)
                continue
            if kind not in "FD":
                raise OSError(71, "an unknown record")
            try:
                tgt = _open_beneath(ws, path, os.O_PATH)
            except PermissionError:
                continue  # the program cannot reach it either
            try:
                mode = os.fstat(tgt).st_mode
                if not (stat.S_ISDIR(mode) if kind == "D" else stat.S_ISREG(mode)):
                    raise OSError(2, "replaced by another kind of entry")
                mask_fd(tgt, kind == "D")
            finally:
                os.close(tgt)
    finally:
        os.close(ws)


# The scratch tmpfs's size and inodes as B mounted them.
_SCRATCH = None


def _run_mounts(req, codefd):
    """B's setup once its run has come: the scratch mounts at the run's
    sizes, the code where a box's would be, read-only."""
    size = int(req["tmpfs"])
    if (size, req["inodes"]) != _SCRATCH:
        for d in ("/tmp", "/work"):
            _mnt("scratch", None, d, None, MS_REMOUNT | MS_NOSUID | MS_NODEV,
                 b"size=%d,nr_inodes=%s" % (size, req["inodes"].encode()))
    path = req["path"]
    n = int(req["codeLen"])
    _mnt("code", b"kiln", os.path.dirname(path), b"tmpfs", MS_NOSUID | MS_NODEV,
         b"size=%d,mode=0755,nr_inodes=16" % (n + 65536))
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444)
        off = 0
        while off < n:
            b = os.pread(codefd, min(n - off, 1 << 20), off)
            if not b:
                raise OSError(5, "short code")
            os.write(fd, b)
            off += len(b)
        os.close(fd)
    except OSError as e:
        raise _Fail(STEP["code"], e.errno or 5)
    _mnt("code", None, os.path.dirname(path), None,
         MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)


def _await_run(st, bs):
    """B, its box ready: wait for the run, make its mounts, hand C the
    rest. What C said last (b"" once it runs the code, or a failure
    record), or None when there is no run."""
    try:
        msg, fds, _flags, _addr = socket.recv_fds(st, 1 << 16, 2)
    except OSError:
        msg, fds = b"", []
    req = json.loads(msg.decode("utf-8")) if msg else {}
    if not msg or len(fds) != (2 if req.get("mode") == "session" else 1):
        # kiln dropped the spare (or is gone): nothing of the box stays.
        for fd in fds:
            os.close(fd)
        return None
    codefd = fds[0]
    chan = fds[1] if len(fds) > 1 else None  # a session's channel
    try:
        _set_cmdline(b"kiln")
        _run_mounts(req, codefd)
        if req.get("hide"):
            # The workspace: the list of what to hide, from a pass kiln
            # made after the run was asked for (hide.h), masked before C
            # may run the code. No list, no run.
            try:
                m, lfds, _f, _a = socket.recv_fds(st, 16, 1)
            except OSError:
                m, lfds = b"", []
            if m != b"h" or len(lfds) != 1:
                for fd in lfds:
                    os.close(fd)
                if chan is not None:
                    os.close(chan)
                return None
            try:
                _hide_listed(lfds[0], _HIDE_PATTERNS)
            except OSError as e:
                raise _Fail(STEP["hide"], e.errno or 1)
            finally:
                os.close(lfds[0])
    except _Fail as f:
        _msg(st, SBX_MSG_FAIL, step=f.step, err=f.err)
        if chan is not None:
            os.close(chan)
        return b""
    finally:
        os.close(codefd)
    run = json.dumps({"path": req["path"], "rlimits": req["rlimits"],
                      "mode": req.get("mode", "script")}).encode()
    socket.send_fds(bs, [run], [chan] if chan is not None else [])
    if chan is not None:
        os.close(chan)
    return bs.recv(64)


def _pid1(req, fds):
    """B: report, build the run's mounts, start C, wait for the run, then
    only reap, forward kiln's signals and report the end (child.c's
    reap(), in Python)."""
    global _ST
    out, err, stfd = fds[:3]
    procs = fds[3] if len(fds) > 3 else None
    os.close(_ch.detach())
    st = _ST = socket.socket(fileno=stfd)
    if not req.get("pidfdSent"):
        # (A child cloned ahead: the zygote sent it, _serve_one.)
        pidfd = os.pidfd_open(os.getpid())
        # The server gave up on this box (or is gone): no box, no code.
        sent = _msg(st, ZYG_MSG_PIDFD, fd=pidfd)
        os.close(pidfd)
        if not sent:
            os._exit(0)
    # SIGIO: C's end report has come on its pipe (_read_end).
    sigs = {signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1,
            signal.SIGIO}
    # The kernel drops signals to a namespace's init that has no handler.
    for s in sigs:
        signal.signal(s, lambda *a: None)
    signal.pthread_sigmask(signal.SIG_BLOCK, sigs)
    try:
        _check("session", _prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0))
        workfd, upperfd = _box(req)
        global _HIDE_PATTERNS
        _HIDE_PATTERNS = req.get("hidePatterns", [])
        # With a cgroup: this process joins it now, before C is forked
        # (kiln set the run's limits on it, or will). Not in it: no run.
        # The fd is closed here: C and the code never have it.
        if procs is not None:
            try:
                os.write(procs, b"0")
            except OSError as e:
                raise _Fail(STEP["cgroup"], e.errno or 1)
            finally:
                os.close(procs)
        # C's channel: its "ready" once locked down, its run, and a
        # failure of its own, as a record of two ints.
        bs, cs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        # C's end report (_report_end): a pipe, read here on SIGIO.
        end_r, end_w = os.pipe()
        fcntl.fcntl(end_r, fcntl.F_SETOWN, os.getpid())
        fcntl.fcntl(end_r, fcntl.F_SETFL,
                    fcntl.fcntl(end_r, fcntl.F_GETFL) | os.O_ASYNC | os.O_NONBLOCK)
        prog = os.fork()
    except _Fail as f:
        _msg(st, SBX_MSG_FAIL, step=f.step, err=f.err)
        os._exit(127)
    except OSError as e:
        _msg(st, SBX_MSG_FAIL, step=STEP["fork"], err=e.errno or 1)
        os._exit(127)
    if prog == 0:
        # Outside every try: nothing of B's may catch what the code raises.
        bs.detach()
        os.close(end_r)
        _program(out, err, cs.detach(), end_w)
    cs.close()
    os.close(end_w)
    os.close(out)
    os.close(err)
    rec = bs.recv(64)
    if rec == b"r":
        if upperfd is not None:
            # Before READY, as child.c: the workspace's upper layer.
            _msg(st, SBX_MSG_UPPER, fd=upperfd)
            os.close(upperfd)
        _msg(st, SBX_MSG_READY, fd=workfd)
        os.close(workfd)
        rec = _await_run(st, bs)
        if rec is None:
            os.kill(-1, signal.SIGKILL)
            os._exit(0)
    bs.close()
    if len(rec) == 8:
        step, errno_ = struct.unpack("ii", rec)
        _msg(st, SBX_MSG_FAIL, step=step, err=errno_)
    elif rec:
        _msg(st, SBX_MSG_FAIL, step=STEP["fork"], err=5)
    # reported: the EXIT is sent (from C's end report, or once C is
    # reaped); done: C is reaped.
    done, reported, status = False, False, 0
    while True:
        try:
            si = signal.sigwaitinfo(sigs)
        except InterruptedError:
            continue
        if si.si_signo == signal.SIGIO:
            end = None if reported or done else _read_end(end_r)
            if end is not None:
                # The program has ended (or its code says so, which only
                # ends its own run): everything left in the box is
                # killed and the run reported at once, without waiting
                # for C's exit to tear down its copy of the zygote's
                # memory; the reaping goes on below, unhurried.
                reported = True
                try:
                    os.kill(-1, signal.SIGKILL)
                except OSError:
                    pass
                _msg(st, SBX_MSG_EXIT, wstatus=end[0], ru=end[1])
                os.setpriority(os.PRIO_PROCESS, 0, 19)
            continue
        if si.si_signo != signal.SIGCHLD:
            # Only kiln may steer pid 1: from outside the namespace, si_pid 0.
            if si.si_code != 0 or si.si_pid != 0:
                continue
            if si.si_signo == signal.SIGUSR1:
                os.kill(-1, signal.SIGKILL)
            elif not done:
                try:
                    os.kill(-prog, si.si_signo)
                except OSError:
                    pass
            continue
        while True:
            try:
                pid, st_ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                if done:
                    if not reported:
                        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
                        os.setpriority(os.PRIO_PROCESS, 0, 19)
                        _msg(st, SBX_MSG_EXIT, wstatus=status, ru=ru)
                    os._exit(0)
                break
            if pid == 0:
                break
            if pid == prog:
                done, status = True, st_
                try:
                    os.kill(-1, signal.SIGKILL)  # nothing outlives the program
                except OSError:
                    pass
