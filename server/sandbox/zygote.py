# zygote.py: the program a kiln zygote runs in its box (see
# server/sandbox/zygote.h and docs/sandbox.md, "The zygote"). kiln embeds
# this file in its binary and writes it read-only into the box.
#
# It imports what data code needs once (the modules kiln names in its
# hello), then waits. kiln asks it for a *spare*, the next run's box made
# ahead of its run: the zygote clones a child into fresh user, mount, pid,
# network, IPC and UTS namespaces (B, pid 1 of the run's box), which
# mounts the run's own /proc, /tmp and /work, reports to kiln on the
# run's status socket as a box's pid 1 does (child.h: READY, FAIL, EXIT),
# and forks the program's process (C), which locks itself down
# (capabilities, no_new_privs, Landlock, kiln's seccomp filter) and waits.
# When a run comes, kiln sends it to B alone: B writes the code to /code
# and hands C the run's rlimits; C sets them and only then runs the
# user's code in its copy of this interpreter. No user code ever runs in
# the zygote or in B.
#
# With a workspace, the zygote's box holds the project folder read-only
# at wsLower (the zygote never reads it); B mounts the run's overlay at
# the folder's own path (lower: that folder, upper: a fresh tmpfs, whose
# fd kiln gets for the diff) and covers wsLower, C adds the folder to its
# Landlock rules and starts in it, and when the run comes B masks what
# kiln's list names (made for this run, after it was asked for) before C
# may run the code: as child.c does at GO.
#
# The channel to kiln is a SOCK_SEQPACKET socket given as stdin and
# stdout; it moves to a private fd and both become /dev/null. Messages are
# one JSON object per datagram:
#   kiln -> zygote  {"op": "hello", "preload": [...], "filter": BPF in hex,
#                    "landlock": abi, "nr": {name: number}, "steps": {...},
#                    "oneshot": oneshot.py's text, "display": kiln_display.py's}
#                   {"op": "spare", "tmpfs": bytes, "inodes", "userQuotas",
#                    "procHidden"} with three fds: the run's stdout
#                    and stderr pipes, its status socket; with cgroups a
#                    fourth, the run's cgroup.procs opened for writing by
#                    kiln (B writes itself into it before it forks C:
#                    since Linux 5.16 the opener's rights count); with the
#                    workspace also "ws" (its path), "wsLower" (where the
#                    zygote's box holds the folder) and "hidePatterns"
#   zygote -> kiln  {"op": "ready", "imported": [...], "failed": [...]}
# and on a spare's status socket, once B has sent its pidfd:
#   kiln -> B       {"op": "run", "path", "rlimits": [[res, soft, hard]],
#                    "tmpfs": bytes, "inodes", "codeLen", "mode"} with the
#                    code (a memfd); with "mode": "session", a second fd:
#                    the session driver's channel, its stdin; with
#                    "hide": true, then "h" with the list of what to hide
#                    in the workspace (a sealed memfd, hide.h)
# and from C to B, on a pipe of their own (C's end at its highest fd):
#   C -> B          its end report, just before its _exit (_report_end):
#                   B kills what is left and sends EXIT at once, without
#                   waiting for the kernel to tear C's memory down.
# The mode says what C runs: "oneshot", the code through kiln's one-shot
# runner (oneshot.py, as python's argv has it: last expression and
# figures displayed); "script", the code as `python3 FILE` (a language
# argv without the runner); "session", the session driver (the "code")
# with its channel as stdin (session.h).
# The zygote clones the next spare's pid 1 ahead, as soon as it has passed
# a request on: when kiln asks, the zygote sends it that child's pidfd at
# once and hands the child the request (the child then says "kiln-spare"
# as its command line, as the spare does until its run).
#
# The zygote holds no secret (its environment is the box's), no socket but
# its channel and the one to the child cloned ahead (closed in that
# child), and no thread when it forks; kiln checks the last two in the
# tests (tests/sandbox/zygote_fork.py).
import builtins
import ctypes
import fcntl
import fnmatch
import gc
import importlib
import json
import os
import random
import resource
import signal
import socket
import stat
import struct
import sys
import time
import traceback
import types

ZYGOTE_FILE = __file__
STARTED_NS = time.monotonic_ns()  # tells one zygote from the next (tests)
ENV = dict(os.environ)
IDS = (os.getuid(), os.getgid())

_ch = socket.socket(fileno=os.dup(0))
_nul = os.open("/dev/null", os.O_RDWR)
os.dup2(_nul, 0)
os.dup2(_nul, 1)
os.close(_nul)

# Kernel constants (x86_64 and the generic table agree on these).
CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x20000, 0x4000000, 0x8000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_CAPBSET_DROP = 1, 4, 24
PR_SET_SECCOMP, PR_SET_SECUREBITS, PR_SET_NO_NEW_PRIVS = 22, 28, 38
PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
SECCOMP_MODE_FILTER = 2
SECUREBITS_LOCKED = 0x2f | 0x80 | 0x40  # NOROOT, NO_SETUID_FIXUP (+locks), NO_CAP_AMBIENT_RAISE (+lock)
KEYCTL_JOIN_SESSION_KEYRING = 1
SBX_MSG_READY, SBX_MSG_FAIL, SBX_MSG_EXIT, SBX_MSG_UPPER = 1, 2, 3, 5
MNT_DETACH = 2
# openat2's resolve flags: no link, no magic link, nothing above the start.
RESOLVE_NO_MAGICLINKS, RESOLVE_NO_SYMLINKS, RESOLVE_BENEATH = 0x02, 0x04, 0x08
# child.h's caps on the masks and on what pid 1 walks itself.
SBX_HIDE_MAX_MASKS, SBX_HIDE_WALK_MAX_ENTRIES, SBX_HIDE_DEPTH = 2048, 100000, 24
ZYG_MSG_PIDFD = 100
# child.h's enum sbx_step by name, from the hello: the steps B and C
# can fail at.
STEP = {}

_libc = ctypes.CDLL(None, use_errno=True)
# Held with the GIL: clone() must not run while another Python thread
# could (there is none; this keeps it so).
_pylibc = ctypes.PyDLL(None, use_errno=True)
_syscall = _libc.syscall
_syscall.restype = ctypes.c_long
_raw_clone = _pylibc.syscall
_raw_clone.restype = ctypes.c_long
_mount = _libc.mount
_mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong,
                   ctypes.c_char_p]
_umount2 = _libc.umount2
_umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
_prctl = _libc.prctl
_prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong,
                   ctypes.c_ulong]

NR = {}
FILTER = b""
LANDLOCK_ABI = 0
ONESHOT = None  # oneshot.py, compiled once (the hello)
DISPLAY_SRC = ""  # kiln_display.py's text: the runner's argument


class _Fail(Exception):
    def __init__(self, step, err):
        super().__init__(step, err)
        self.step, self.err = step, err


def _check(step, r):
    if r < 0:
        raise _Fail(STEP[step], ctypes.get_errno() or 1)
    return r


def _send(obj):
    _ch.send(json.dumps(obj).encode("utf-8"))


# --- messages on a run's status socket (struct sbx_msg, child.h) ---------------

def _msg(st, kind, step=0, err=0, wstatus=0, ru=None, fd=None):
    # struct rusage: two struct timeval, then 14 longs (ru_maxrss first).
    vals = [0] * 18
    if ru is not None:
        for i, t in enumerate((ru.ru_utime, ru.ru_stime)):
            vals[2 * i] = int(t)
            vals[2 * i + 1] = int((t - int(t)) * 1e6)
        vals[4] = ru.ru_maxrss
    body = struct.pack("iiii18q", kind, step, err, wstatus, *vals)
    fds = [fd] if fd is not None else []
    try:
        socket.send_fds(st, [body], fds)
        return True
    except OSError:
        return False


# --- B: pid 1 of the run's box --------------------------------------------------

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


# --- C: the program ---------------------------------------------------------

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


def _drop_caps():
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
    data = (ctypes.c_uint32 * 6)()
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
    if _drop_caps() < 0:
        _report(pfd, STEP["caps"], ctypes.get_errno())
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
    buf = ctypes.create_string_buffer(FILTER, len(FILTER))
    prog = _Fprog(len(FILTER) // 8, ctypes.cast(buf, ctypes.c_void_p))
    # From here on the filter applies to every call this process and the
    # code make.
    if _prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(prog), 0, 0) < 0:
        _report(pfd, STEP["seccomp"], ctypes.get_errno())
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
    main = types.ModuleType("__main__")
    main.__dict__.update({"__builtins__": builtins, "__file__": path, "__cached__": None})
    sys.modules["__main__"] = main
    sys.argv = [path]
    sys.path[0] = os.path.dirname(path)
    exec(compile(source, path, "exec"), main.__dict__)


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


# --- the zygote -------------------------------------------------------------

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
