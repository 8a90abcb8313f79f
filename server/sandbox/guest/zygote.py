# zygote.py: the program a kiln zygote runs in its box (see
# server/sandbox/pools/zygote.h and docs/sandbox.md, "The zygote"). kiln embeds
# this file in its binary and writes it read-only into the box: with the
# rest of the program, which is in files by part: zygote_pid1.py (B, a
# run's pid 1), zygote_program.py (C, the program's process) and
# zygote_serve.py (the zygote's own loop, and main()), embedded after
# this one as one file (module.mk). Here: what they share (the imports,
# kernel constants, the channel, failures and status messages).
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
#                    "oneshot": oneshot.py's text, "display": kiln_display.py's,
#                    "ahead": whether to clone the first spare's pid 1 ahead}
#                   {"op": "spare", "tmpfs": bytes, "inodes", "userQuotas",
#                    "procHidden", "ahead": whether to clone the next spare's
#                    pid 1 ahead once this one is on its way (both false
#                    with kiln's sandbox.warmBoxes off: nothing is made
#                    ahead)} with three fds: the run's stdout
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
# The zygote clones the next spare's pid 1 ahead (unless kiln says not
# to: "ahead"), as soon as it has passed a request on: when kiln asks, the zygote sends it that child's pidfd at
# once and hands the child the request (the child then says "kiln-spare"
# as its command line, as the spare does until its run).
#
# The zygote holds no secret (its environment is the box's), no socket but
# its channel and the one to the child cloned ahead (closed in that
# child), and no thread when it forks; kiln checks the last two in the
# tests (tests/sandbox/zygote_fork.py).
import builtins
import errno
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
