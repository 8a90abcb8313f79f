#!/usr/bin/env python3
"""attacks.py: the sandbox attack suite. Each case runs code through
`kiln run` (or the server, for the protocol cases), asserts that the attack
failed or was contained, and then checks the host: no process of the box is
left, and no file outside the run's own directory changed.

  attacks.py --kiln KILN --attack ATTACK_BIN [--only NAME]... [--no-box]

Prints "ok NAME" / "not ok NAME: why" per case and a last line
"N passed, N failed"; exits 1 when any case failed. The cases are listed
first: one that did not run (the suite stopped on an exception of its
own) is reported "not ok NAME: not run" and counted as failed. Everything it starts is bounded in time and talks
only to 127.0.0.1 or abstract sockets on this machine.
"""
import argparse
import base64
import ctypes
import hashlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback

sys.path[:0] = [os.path.dirname(os.path.abspath(__file__)),
                os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib")]
import kilnrpc as rpcmod  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
# The cases that hold without any box (kiln refuses the request before a
# box is asked for); with --no-box they are not run, every other case must
# fail.
PASS_WITHOUT_BOX = {"protocol-bad-requests", "no-user-namespaces-refuses"}


def own_cgroup2():
    """This process's cgroup v2 directory, as kiln's "auto" finds it, or
    None (no cgroup2 mount, no 0:: line)."""
    try:
        with open("/proc/self/cgroup") as f:
            path = next((ln[3:].strip() for ln in f if ln.startswith("0::")), None)
        with open("/proc/self/mountinfo") as f:
            mounts = [ln.split() for ln in f if " - cgroup2 " in ln]
    except OSError:
        return None
    for m in mounts:
        root, point = m[3], m[4].replace("\\040", " ")
        if path is not None and (root == "/" or path == root or path.startswith(root + "/")):
            rel = path[len(root):] if root != "/" else path
            return os.path.normpath(point + "/" + rel)
    return None


# The pids of the processes this suite started: every subprocess.Popen
# (subprocess.run and kilnrpc's servers go through it, and so do the
# suites built on this one, zygote.py's), and the servers rpc.py started
# (it reports their pid). A kiln-<pid> cgroup counts as left behind only
# when its pid is one of these: servers of other suites and sessions
# running beside this one leave theirs (killed on purpose, or still
# ending) in the same directory, and those are not this suite's to judge.
OUR_PIDS = set()


class _TrackedPopen(subprocess.Popen):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        OUR_PIDS.add(self.pid)


subprocess.Popen = _TrackedPopen


def stale_kiln_cgroups_after_reapers():
    """stale_kiln_cgroups(), once kiln run's reapers had a moment: kiln
    run exits as soon as its program's status is known, and the reaper
    it forks removes the box's cgroup (its kiln-<pid>) just after, once
    pid 1 is gone (docs/sandbox.md, "One run, step by step"). A cgroup
    still there after 5 s is left behind."""
    for _ in range(50):
        stale = stale_kiln_cgroups()
        if not stale:
            break
        time.sleep(0.1)
    return stale


def stale_kiln_cgroups():
    """kiln-<pid> cgroups of this suite's servers (OUR_PIDS) whose
    server is gone: a run's cleanup failed. Only where this suite's
    servers can make cgroups at all: as nobody they cannot."""
    d = own_cgroup2()
    found = []
    if not d or not os.path.isdir(d) or not os.access(d, os.W_OK):
        return found
    for name in os.listdir(d):
        if name.startswith("kiln-") and name[5:].isdigit() and \
                int(name[5:]) in OUR_PIDS and not os.path.exists("/proc/%s" % name[5:]):
            found.append(os.path.join(d, name))
    return found


# Python program text for a box's code: drained(fd) waits (a bounded
# while) until kiln has read all that is in the pipe fd writes to, so the
# next write reaches kiln as a read of its own.
DRAINED = ("import os, fcntl, termios, struct, time\n"
           "def drained(fd):\n"
           "    for _ in range(5000):\n"
           "        b = fcntl.ioctl(fd, termios.FIONREAD, b'\\0\\0\\0\\0')\n"
           "        if struct.unpack('i', b)[0] == 0:\n"
           "            return\n"
           "        time.sleep(0.002)\n")


class Suite:
    def __init__(self, args):
        self.kiln = os.path.abspath(args.kiln)
        self.kiln_release = os.path.abspath(args.kiln_release or args.kiln)
        self.attack_bin = args.attack
        self.only = set(args.only or [])
        self.passed = 0
        self.failed = 0
        self.no_box = args.no_box
        self.listing = False  # True: case() only records names
        self.listed = []
        self.ran = set()
        self.token = secrets.token_hex(8)
        self.secret = "kiln-secret-" + secrets.token_hex(8)
        self.dir = tempfile.mkdtemp(prefix="kiln-attacks-")
        os.chmod(self.dir, 0o700)
        self.home = os.path.join(self.dir, "home")
        os.makedirs(os.path.join(self.home, ".ssh"))
        with open(os.path.join(self.home, ".ssh", "id_rsa"), "w") as f:
            f.write(self.secret + "\n")
        self.canary = os.path.join(self.dir, "canary")
        os.makedirs(self.canary)
        for i in range(3):
            with open(os.path.join(self.canary, "file%d" % i), "w") as f:
                f.write("canary %d\n" % i)
        # The suite's own files (snippets, configs) live in scratch/,
        # which the host check leaves out, like the artifact copies.
        self.scratch = os.path.join(self.dir, "scratch")
        os.makedirs(self.scratch)
        self.config = os.path.join(self.dir, "config.json")
        with open(self.config, "w") as f:
            # The attacks test the sandbox, not the validator: let their
            # snippet/run requests override a deny verdict.
            json.dump({"sandbox": {"env": {
                "KILN_TEST_MARK": self.token,
                "KILN_TEST_HOSTDIR": self.dir,
                "KILN_TEST_HOSTHOME": self.home,
            # The box itself is under attack here, with nothing of the
            # host shown: `kiln run` starts in this directory, which would
            # otherwise be its workspace. The workspace's own attacks are
            # tests/workspace/workspace.py (32-workspace.sh). Built boxes
            # only: the zygote's runs are tests/sandbox/zygote.py's.
            }, "workspace": {"mode": "none"}, "zygote": False},
                "validator": {"allowOverride": True}}, f)
        self.env = {
            "PATH": "/usr/bin:/bin",
            "HOME": self.home,
            "XDG_CACHE_HOME": os.path.join(self.home, ".cache"),
            "KILN_SECRET_API_KEY": self.secret,
            "LANG": "C.UTF-8",
        }
        with open(self.attack_bin, "rb") as f:
            self.attack_b64 = base64.encodebytes(f.read()).decode()
        self.snapshot = self.host_state()

    # --- host checks -------------------------------------------------------

    def host_state(self):
        """Hashes of every file under the suite's dir except the
        artifact copies (the run's own directory on the host)."""
        state = {}
        for root, dirs, files in os.walk(self.dir):
            dirs[:] = [d for d in dirs if d not in ("kiln-artifacts", "scratch")]
            for name in files:
                p = os.path.join(root, name)
                try:
                    with open(p, "rb") as f:
                        state[p] = hashlib.sha256(f.read()).hexdigest()
                except OSError as e:
                    state[p] = str(e)
        return state

    def box_processes(self):
        """Host pids whose environment carries this suite's mark."""
        return rpcmod.marked_processes(self.token)

    def check_host(self):
        # A box's processes die with pid 1; give the kernel a moment.
        for _ in range(50):
            left = self.box_processes()
            if not left:
                break
            time.sleep(0.1)
        if left:
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            return "processes of the box are still alive on the host: %s" % left
        stale = stale_kiln_cgroups_after_reapers()
        if stale:
            return "cgroups left behind: %s" % stale
        now = self.host_state()
        if now != self.snapshot:
            changed = sorted(set(now.items()) ^ set(self.snapshot.items()))
            self.snapshot = now
            return "files outside the run directory changed: %s" % changed[:5]
        return None

    def after_sigkill(self):
        """A killed server cannot remove its cgroup: the next kiln to
        start must (its kiln-<pid> is stale once the pid is gone)."""
        if not stale_kiln_cgroups():
            return None
        self.kiln_run("bash", "true\n")
        left = stale_kiln_cgroups_after_reapers()
        return "the next kiln left stale cgroups: %s" % left if left else None

    # --- running code --------------------------------------------------------

    def kiln_run(self, lang, code, timeout=None, wrap=None, extra_env=None):
        path = os.path.join(self.scratch, "snippet")
        with open(path, "w") as f:
            f.write(code)
        # --override: these are attacks on the box itself, meant to get
        # past the validator (which denies most of them) to the sandbox.
        cmd = [self.kiln, "run", "--json", "--override", "--config", self.config,
               "--lang", lang]
        if timeout:
            cmd += ["--timeout", str(timeout)]
        cmd.append(path)
        if wrap:
            cmd = wrap + cmd
        env = dict(self.env)
        env.update(extra_env or {})
        p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=90, cwd=self.dir)
        out = p.stdout.decode("utf-8", "replace")
        err = p.stderr.decode("utf-8", "replace")
        result = None
        for line in reversed(err.splitlines()):
            if line.startswith("{"):
                try:
                    result = json.loads(line)
                    break
                except ValueError:
                    pass
        return p.returncode, out, err, result

    def attack_code(self, name, *args):
        return ("base64 -d > /work/a <<'KILN_EOF'\n%sKILN_EOF\nchmod +x /work/a\n"
                "exec /work/a %s %s\n" % (self.attack_b64, name, " ".join(args)))

    def case(self, name, fn):
        if self.listing:
            self.listed.append(name)
            return
        if self.only and name not in self.only:
            return
        self.ran.add(name)
        if self.no_box and name in PASS_WITHOUT_BOX:
            print("skip %s: needs no box" % name, flush=True)
            return
        try:
            why = fn()
        except Exception as e:  # a crash of the check is a failure too
            why = "%s: %s" % (type(e).__name__, e)
        host = self.check_host()
        if why is None and host:
            why = host
        if self.no_box:
            # Where no box can start, every case must fail: one that
            # passes would pass with the sandbox gone.
            why = "passes although no box could start" if why is None else None
        if why is None:
            self.passed += 1
            print("ok %s" % name, flush=True)
        else:
            self.failed += 1
            print("not ok %s: %s" % (name, why), flush=True)

    # --- the cases ------------------------------------------------------------

    def contained(self, name, *args, lang="bash", wrap=None, timeout=20):
        def run():
            rc, out, err, res = self.kiln_run(lang, self.attack_code(name, *args),
                                              timeout=timeout, wrap=wrap)
            if "ESCAPED" in out or "RESULT: CONTAINED" not in out:
                return "rc=%s out=%r err=%r" % (rc, out[-600:], err[-300:])
            if rc != 0:
                return "exit %s: %r" % (rc, err[-300:])
            return None
        return run

    def killed_by(self, attack, sig):
        def run():
            rc, out, err, res = self.kiln_run("bash", self.attack_code(attack), timeout=20)
            if "ESCAPED" in out:
                return out
            if not res or res.get("signal") != sig:
                return "expected %s, got %r (%r)" % (sig, res and res.get("signal"), err[-300:])
            return None
        return run

    def config_with(self, section, key, value):
        """A config like the suite's with section.key set to value."""
        path = os.path.join(self.scratch, "cfg-%s.json" % secrets.token_hex(4))
        with open(self.config) as f:
            cfg = json.load(f)
        cfg[section][key] = value
        with open(path, "w") as f:
            json.dump(cfg, f)
        return path

    def with_limits(self, limits):
        """A config like the suite's with these sandbox.limits."""
        return self.config_with("sandbox", "limits", limits)

    def python_case(self, code, check, limits_timeout=20, limits=None):
        def run():
            saved = self.config
            if limits:
                self.config = self.with_limits(limits)
            try:
                rc, out, err, res = self.kiln_run("python", code, timeout=limits_timeout)
            finally:
                self.config = saved
            return check(rc, out, err, res)
        return run

    def cgroup_case(self):
        # With a writable cgroup v2 (as root here: the controllerless
        # /sys/fs/cgroup/unified), the whole box is born in a cgroup of
        # its own: the CPU a double-forked grandchild burns is charged to
        # it (300 ms of CPU time, not of wall time: on a loaded machine
        # the two differ). Without one (nobody here), the result says null
        # and the limits name the rlimits that enforce them.
        code = ("import os, time\n"
                "r, w = os.pipe()\n"
                "if os.fork() == 0:\n"
                "    if os.fork() == 0:\n"
                "        t = time.process_time()\n"
                "        while time.process_time() - t < 0.3:\n"
                "            pass\n"
                "        os.write(w, b'x')\n"
                "    os._exit(0)\n"
                "os.close(w)\n"
                "os.read(r, 1)\n")
        d = own_cgroup2()
        writable = d if d and os.access(d, os.W_OK) and \
            os.access(os.path.join(d, "cgroup.procs"), os.W_OK) else None

        def check(rc, out, err, res):
            if not res:
                return "no result: rc=%s err=%r" % (rc, err[-300:])
            cg = res.get("cgroup", "missing")
            mem = res["limits"]["memoryBytes"]["enforcedBy"]
            if writable is None:
                if cg is not None:
                    return "a cgroup although none is writable: %r" % cg
                return None if mem.startswith("rlimit") else "memoryBytes: %r" % mem
            if not isinstance(cg, dict):
                return "no cgroup although %s is writable: %r" % (writable, cg)
            if cg["cpuMs"] < 200:
                return "the grandchild's CPU is not in the box's cgroup: %r" % cg
            return None
        self.case("cgroup-holds-the-whole-box", self.python_case(code, check))

    def no_userns_case(self):
        # Where user namespaces cannot be had, kiln refuses to run code
        # and says why: from the terminal and through the server, whose
        # warm box fails first (quietly) and whose run then fails aloud.
        # The suite makes such a place with a user namespace of its own
        # whose user.max_user_namespaces is 0.
        inner = 'echo 0 > /proc/sys/user/max_user_namespaces && exec "$0" "$@"'
        wrap = ["unshare", "--user", "--map-root-user", "sh", "-c", inner]

        def run():
            rc, out, err, res = self.kiln_run("bash", "echo RAN\n", wrap=wrap)
            if rc != 125 or "RAN" in out or "user.max_user_namespaces" not in err:
                return "kiln run: rc=%s out=%r err=%r" % (rc, out, err[-400:])
            script = os.path.join(self.scratch, "kiln-no-userns")
            with open(script, "w") as f:
                f.write("#!/bin/sh\nexec unshare --user --map-root-user sh -c '%s' %s \"$@\"\n"
                        % (inner, self.kiln))
            os.chmod(script, 0o755)
            d = self.rpc([("bash", "echo RAN\n")], kiln=script)
            err = (d["replies"][0] or {}).get("error") or {}
            if d["output"] or err.get("code") != -32803 or \
                    "user.max_user_namespaces" not in err.get("message", ""):
                return "server: %r" % d
            return None
        return run

    def all_cases(self):
        self.case("tiocsti-and-tioclinux", self.contained("tiocsti"))
        self.case("proc-1-exe", self.contained("proc1exe"))
        self.case("inherited-fds", self.contained("fds"))
        self.case("cwd-escape", self.contained("cwd"))
        self.case("server-environment-and-home",
                  self.contained("env", self.secret))
        attack_host = os.path.abspath(self.attack_bin)
        self.case("session-keyring", self.contained(
            "keyring", wrap=[attack_host, "plant-key"]))
        self.case("ptrace-pid1-and-siblings", self.contained("ptrace"))
        self.case("kill-parent-and-minus-one", self.contained("kill"))
        self.case("nested-namespaces", self.contained("unshare"))
        self.case("io-uring-userfaultfd-perf-bpf", self.contained("kernel"))
        self.case("personality", self.contained("personality"))
        self.case("landlock-ioctl-and-signal-scope", self.contained("landlock"))
        self.case("x32-syscall-killed", self.killed_by("x32", "SIGSYS"))
        # Some hypervisors (this one) give int 0x80 a SIGSEGV even outside
        # any sandbox; then that is what the box must show too.
        host = subprocess.run([self.attack_bin, "int80"], stdout=subprocess.DEVNULL)
        self.case("int80-32bit-syscall-killed", self.killed_by(
            "int80", "SIGSEGV" if host.returncode == -signal.SIGSEGV else "SIGSYS"))
        self.case("quotas-refused-inside", self.contained("quotas"))
        self.case("host-quotas-while-box-hogs", self.hog_case())
        self.case("pid1-untunable-and-quiet", self.contained("pid1"))
        self.case("socket-families", self.contained("sockets"))
        self.case("host-abstract-socket", self.abstract_case())
        self.case("host-tcp-and-interfaces", self.tcp_case())
        self.case("host-sysv-shm", self.shm_case())
        self.case("cgroup-sys-proc-mount-chroot-writes", self.contained("fs"))
        self.case("capabilities-setuid-core", self.contained("privs"))
        # The fork bomb reads its limit back and counts its forks before
        # the first refusal: RLIMIT_NPROC counts per user namespace here
        # (docs/sandbox.md), so at most `processes` live at once.
        self.case("fork-bomb", self.python_case(
            "import os, resource\nprint('NPROC', *resource.getrlimit(resource.RLIMIT_NPROC), flush=True)\n"
            "n = 0\nwhile True:\n    try:\n        if os.fork() == 0:\n            while True:\n"
            "                os.pause()\n        n += 1\n    except OSError:\n"
            "        print('FORKS', n, flush=True)\n        break\n"
            "while True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n",
            lambda rc, out, err, res: None if res and res["timedOut"] and "NPROC 19 19" in out
            and any(ln.startswith("FORKS ") and 0 < int(ln.split()[1]) < 19 for ln in out.splitlines())
            else "fork bomb: %r %r" % (out[-300:], res), limits_timeout=3,
            limits={"processes": 19}))
        self.case("limits-read-back-inside", self.limits_case())
        self.case("memory-bomb", self.python_case(
            "a = []\ntry:\n    while True:\n        a.append(bytearray(16 << 20))\n"
            "except MemoryError:\n    print('CONTAINED: MemoryError at', len(a) * 16, 'MiB')\n",
            lambda rc, out, err, res: None if "CONTAINED" in out and rc == 0 and
            res["maxRssKb"] < 300 * 1024 else "rc=%s out=%r res=%r" % (rc, out, res),
            limits={"memoryBytes": 256 << 20}))
        # Memory RLIMIT_DATA does not count, by every route, with
        # memoryBytes 256 MiB and tmpfsBytes 8 MiB: shared anonymous
        # mappings and shared /dev/zero (RLIMIT_AS: 256 + 512 MiB), a
        # memfd filled with write() (memfd_create refused), SysV shm left
        # after detach (shmget refused), POSIX shm in
        # /dev/shm (the /tmp tmpfs: 8 MiB). Each route is tried up to
        # 1 GiB, four times memoryBytes.
        self.case("shared-memory-bounded", self.python_case(
            "import ctypes, errno, mmap, os\n"
            "MB = 1 << 20\n"
            "def route(name, step, fn):\n"
            "    got, keep = 0, []\n"
            "    try:\n"
            "        while got < 1024 * MB:\n"
            "            keep.append(fn(step))\n"
            "            got += step\n"
            "        print(name, got // MB, 'ALL')\n"
            "    except OSError as e:\n"
            "        print(name, got // MB, errno.errorcode.get(e.errno, e.errno))\n"
            "    return keep\n"
            "def anon(n):\n"
            "    m = mmap.mmap(-1, n, flags=mmap.MAP_SHARED)\n"
            "    m[0] = 1\n"
            "    return m\n"
            "route('ANON', 64 * MB, anon)\n"
            "z = os.open('/dev/zero', os.O_RDWR)\n"
            "route('ZERO', 64 * MB, lambda n: mmap.mmap(z, n, flags=mmap.MAP_SHARED))\n"
            "def memfd(n):\n"
            "    fd = os.memfd_create('x')\n"
            "    for _ in range(n // MB):\n"
            "        os.write(fd, b'x' * MB)\n"
            "    return fd\n"
            "route('MEMFD', 64 * MB, memfd)\n"
            "libc = ctypes.CDLL(None, use_errno=True)\n"
            "libc.shmat.restype = ctypes.c_void_p\n"
            "def sysv(n):\n"
            "    i = libc.shmget(0, ctypes.c_size_t(n), 0o1600)\n"
            "    if i < 0:\n"
            "        raise OSError(ctypes.get_errno(), 'shmget')\n"
            "    a = libc.shmat(i, None, 0)\n"
            "    ctypes.memset(a, 1, n)\n"
            "    libc.shmdt(ctypes.c_void_p(a))\n"
            "    return i\n"
            "route('SYSV', MB, sysv)\n"
            "def posix(n):\n"
            "    fd = os.open('/dev/shm/s%d' % len(os.listdir('/dev/shm')), os.O_CREAT | os.O_RDWR)\n"
            "    os.write(fd, b'x' * n)\n"
            "    return fd\n"
            "route('POSIX', MB, posix)\n",
            self.shared_memory_check, limits={"memoryBytes": 256 << 20, "tmpfsBytes": 8 << 20}))
        # The calls that would put pages the program can still change into
        # its stdout (the relay moves those pages to the client after its
        # check: protocol-relay-pages-fixed) are absent (ENOSYS), from a
        # built box and (zygote.py) from the zygote's child alike.
        self.case("page-sharing-refused", self.python_case(
            "import ctypes, errno, os\n"
            "fd = os.open('/tmp/p', os.O_RDWR | os.O_CREAT, 0o600)\n"
            "os.write(fd, b'x' * 4096)\n"
            "r, w = os.pipe()\n"
            "libc = ctypes.CDLL(None, use_errno=True)\n"
            "class iovec(ctypes.Structure):\n"
            "    _fields_ = [('base', ctypes.c_void_p), ('len', ctypes.c_size_t)]\n"
            "b = ctypes.create_string_buffer(4096)\n"
            "iov = iovec(ctypes.addressof(b), 4096)\n"
            "def vmsplice():\n"
            "    if libc.vmsplice(w, ctypes.byref(iov), 1, 0) < 0:\n"
            "        raise OSError(ctypes.get_errno(), 'vmsplice')\n"
            "for name, call in (('splice', lambda: os.splice(fd, w, 4096, offset_src=0)),\n"
            "                   ('sendfile', lambda: os.sendfile(w, fd, 0, 4096)),\n"
            "                   ('vmsplice', vmsplice)):\n"
            "    try:\n"
            "        call()\n"
            "        print(name, 'ALLOWED')\n"
            "    except OSError as e:\n"
            "        print(name, errno.errorcode.get(e.errno, e.errno))\n",
            lambda rc, out, err, res: None if out.split() == [
                "splice", "ENOSYS", "sendfile", "ENOSYS", "vmsplice", "ENOSYS"] else out + err))
        self.case("fill-tmp", self.python_case(
            "import errno\ntry:\n    with open('/tmp/fill', 'wb') as f:\n"
            "        while True:\n            f.write(b'x' * (1 << 20))\n"
            "except OSError as e:\n    print('CONTAINED' if e.errno == errno.ENOSPC else 'ESCAPED', e)\n",
            lambda rc, out, err, res: None if "CONTAINED" in out else out + err,
            limits={"tmpfsBytes": 8 << 20}))
        # 200 000 empty directories cost no page of a tmpfs's size but
        # about 200 MiB of kernel memory: each tmpfs kiln mounts has
        # nr_inodes, one per page of its size (256 for 1 MiB).
        self.case("empty-directories-bounded", self.python_case(
            "import errno, os\n"
            "for d in ('/work', '/tmp'):\n"
            "    n = 0\n"
            "    try:\n"
            "        while n < 200000:\n"
            "            os.mkdir('%s/d%d' % (d, n))\n"
            "            n += 1\n"
            "    except OSError as e:\n"
            "        print('DIRS', d, n, errno.errorcode[e.errno])\n"
            "    print('FREE', d, os.statvfs(d).f_files)\n",
            lambda rc, out, err, res: None if all(
                any(ln.startswith("DIRS %s " % d) and ln.endswith(" ENOSPC") and
                    0 < int(ln.split()[2]) <= 256 for ln in out.splitlines()) and
                "FREE %s 256" % d in out.splitlines()
                for d in ("/work", "/tmp")) else "rc=%s out=%r err=%r" % (rc, out, err[-300:]),
            limits={"tmpfsBytes": 1 << 20}))
        self.case("huge-file", self.python_case(
            "import errno\ntry:\n    with open('/work/big', 'wb') as f:\n"
            "        f.seek(10 << 30)\n        f.write(b'x')\n"
            "except OSError as e:\n    print('CONTAINED' if e.errno == errno.EFBIG else 'ESCAPED', e)\n",
            lambda rc, out, err, res: None if "CONTAINED" in out else out + err))
        self.case("busy-loop-ignoring-sigxcpu", self.cpu_case())
        self.case("billion-bytes-of-output", self.output_case())
        self.case("double-forked-daemon", self.daemon_case())
        self.cgroup_case()
        self.case("ignores-sigterm", self.python_case(
            "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
            "print('started', flush=True)\nwhile True:\n    time.sleep(1)\n",
            lambda rc, out, err, res: None if res and res["timedOut"] and rc == 124 else
            "rc=%s res=%r" % (rc, res), limits_timeout=1.5))
        self.case("stops-itself", self.python_case(
            "import os, signal\nprint('stopping', flush=True)\nos.kill(os.getpid(), signal.SIGSTOP)\n",
            lambda rc, out, err, res: None if res and res["timedOut"] else
            "rc=%s res=%r" % (rc, res), limits_timeout=1.5))
        self.case("core-dump", self.python_case(
            "import os, resource\nprint(resource.getrlimit(resource.RLIMIT_CORE))\nos.abort()\n",
            lambda rc, out, err, res: None if res and res["signal"] == "SIGABRT" and
            "(0, 0)" in out and not [f for f in os.listdir(self.dir) if f.startswith("core")]
            else "rc=%s out=%r res=%r" % (rc, out, res)))
        self.case("write-outside-work", self.python_case(
            "import os\nbad = []\n"
            "for p in ['/x', '/usr/x', '/etc/x', '/code/x', os.environ['KILN_TEST_HOSTDIR'] + '/canary/file0',\n"
            "          os.environ['KILN_TEST_HOSTHOME'] + '/.ssh/id_rsa']:\n"
            "    try:\n        open(p, 'w').write('pwned')\n        bad.append(p)\n"
            "    except OSError:\n        pass\n"
            "print('ESCAPED' if bad else 'CONTAINED', bad)\n",
            lambda rc, out, err, res: None if "CONTAINED" in out else out + err))
        self.case("not-root-inside-even-as-root", self.python_case(
            "import os\nprint(os.getuid(), os.geteuid(), os.getgid(), os.getgroups())\n",
            lambda rc, out, err, res: None if out.startswith("1000 1000 1000 ") else out))
        self.protocol_cases()
        self.case("no-user-namespaces-refuses", self.no_userns_case())

    def shared_memory_check(self, rc, out, err, res):
        got = dict((ln.split()[0], ln.split()[1:]) for ln in out.splitlines() if ln.split())
        want = {"ANON": (768, "ENOMEM"), "ZERO": (768, "ENOMEM"), "MEMFD": (0, "ENOSYS"),
                "SYSV": (0, "ENOSYS"), "POSIX": (8, "ENOSPC")}
        bad = []
        for k, (most, why) in want.items():
            if k not in got or int(got[k][0]) > most or got[k][1] != why:
                bad.append("%s %r (want at most %d MiB, then %s)" % (k, got.get(k), most, why))
        print("# pinned per route (MiB): %s" % ", ".join(
            "%s %s" % (k, got.get(k, ["?"])[0]) for k in want), flush=True)
        return "; ".join(bad) + " err=%r" % err[-300:] if bad else None

    def hog_case(self):
        # While a box takes every inotify instance and watch, queued
        # signal and pipe page it can, a host process of the box's owner
        # (the suite's own user: root's boxes count against root) can
        # still have each.
        def run():
            path = os.path.join(self.scratch, "hog")
            with open(path, "w") as f:
                f.write(self.attack_code("hog"))
            proc = subprocess.Popen([self.kiln, "run", "--override", "--config", self.config,
                                     "--lang", "bash", "--timeout", "60", path], env=self.env,
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                    cwd=self.dir)
            try:
                lines = []
                deadline = time.time() + 60
                while time.time() < deadline:
                    ln = proc.stdout.readline().decode("utf-8", "replace")
                    if not ln:
                        break
                    lines.append(ln.strip())
                    if ln.startswith("HOGGING"):
                        break
                if not lines or not lines[-1].startswith("HOGGING"):
                    return "the box did not start hogging: %r" % lines
                print("# in the box: %s" % "; ".join(lines), flush=True)
                host = subprocess.run([self.attack_bin, "host-quotas"], stdout=subprocess.PIPE,
                                      timeout=30).stdout.decode()
                if "RESULT: CONTAINED" not in host:
                    return "the owner lost quotas to the box: %s" % " | ".join(
                        ln for ln in host.splitlines() if ln.startswith("ESCAPED"))
                return None
            finally:
                proc.send_signal(signal.SIGINT)
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        return run

    def abstract_case(self):
        def run():
            name = "kiln-test-" + self.token
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.bind("\0" + name)
            s.listen(1)
            s.setblocking(False)
            try:
                fn = self.contained("abstract", name)
                why = fn()
                try:
                    s.accept()
                    return "the host listener got a connection"
                except BlockingIOError:
                    pass
                return why
            finally:
                s.close()
        return run

    def tcp_case(self):
        def run():
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            s.listen(1)
            s.setblocking(False)
            port = s.getsockname()[1]
            try:
                why = self.contained("tcp", str(port))()
                try:
                    s.accept()
                    return "the host listener got a connection"
                except BlockingIOError:
                    pass
                return why
            finally:
                s.close()
        return run

    def shm_case(self):
        def run():
            libc = ctypes.CDLL(None, use_errno=True)
            key = 0x6b6c0000 | (int(self.token[:4], 16))
            shmid = libc.shmget(key, 4096, 0o1600)  # IPC_CREAT | 0600
            if shmid < 0:
                return "cannot create the host segment: errno %d" % ctypes.get_errno()
            try:
                return self.contained("shm", hex(key), str(shmid))()
            finally:
                libc.shmctl(shmid, 0, None)  # IPC_RMID
        return run

    def limits_case(self):
        # Every limit as the program sees it: its rlimits, the size of
        # /work and /tmp, the namespace sysctls. Odd values, so that no
        # default or hard-coded number can pass for them.
        limits = {"processes": 23, "openFiles": 77, "fileSizeBytes": 5 << 20,
                  "memoryBytes": 300 << 20, "tmpfsBytes": 9 << 20, "cpuMs": 7000}
        code = ("import os, resource as r\n"
                "for n in ('NPROC', 'NOFILE', 'FSIZE', 'DATA', 'CPU', 'CORE', 'SIGPENDING',\n"
                "          'MSGQUEUE', 'MEMLOCK', 'RTPRIO', 'NICE', 'AS'):\n"
                "    print(n, *r.getrlimit(getattr(r, 'RLIMIT_' + n)))\n"
                "for d in ('/work', '/tmp'):\n"
                "    s = os.statvfs(d)\n    print('SIZE', d, s.f_blocks * s.f_frsize)\n"
                "for n in ('user', 'mnt', 'net', 'pid', 'ipc', 'uts', 'cgroup', 'time'):\n"
                "    print('SYSCTL', n, open('/proc/sys/user/max_%s_namespaces' % n).read().strip())\n"
                "for n in ('instances', 'watches'):\n"
                "    print('INOTIFY', n, open('/proc/sys/user/max_inotify_%s' % n).read().strip())\n")
        want = ["NPROC 23 23", "NOFILE 77 77", "FSIZE %d %d" % (5 << 20, 5 << 20),
                "DATA %d %d" % (300 << 20, 300 << 20), "CPU 7 8", "CORE 0 0",
                "SIZE /work %d" % (9 << 20), "SIZE /tmp %d" % (9 << 20),
                # Fixed quotas, never the server's own (inherited, they
                # would be its 8 MiB of MEMLOCK, thousands of signals).
                "SIGPENDING 128 128", "MSGQUEUE 0 0", "MEMLOCK 65536 65536", "RTPRIO 0 0",
                "AS %d %d" % ((300 + 512) << 20, (300 + 512) << 20),
                "NICE 0 0", "INOTIFY instances 8", "INOTIFY watches 1024"] + \
            ["SYSCTL %s 0" % n for n in ("user", "mnt", "net", "pid", "ipc", "uts", "cgroup", "time")]

        def check(rc, out, err, res):
            got = out.splitlines()
            missing = [w for w in want if w not in got]
            return "not as configured: %r; the program saw %r (%r)" % (missing, got, err[-200:]) \
                if missing or rc != 0 else None
        return self.python_case(code, check, limits=limits)

    def cpu_case(self):
        def run():
            code = ("import signal\nsignal.signal(signal.SIGXCPU, signal.SIG_IGN)\n"
                    "while True:\n    pass\n")
            path = os.path.join(self.scratch, "cfg-cpu.json")
            with open(self.config) as f:
                cfg = json.load(f)
            cfg["sandbox"]["limits"] = {"cpuMs": 1000}
            with open(path, "w") as f:
                json.dump(cfg, f)
            saved, self.config = self.config, path
            try:
                rc, out, err, res = self.kiln_run("python", code, timeout=30)
            finally:
                self.config = saved
            if not res or res["signal"] != "SIGKILL" or res["timedOut"]:
                return "rc=%s res=%r err=%r" % (rc, res, err[-300:])
            return None
        return run

    def output_case(self):
        def run():
            code = "import sys\nb = b'y' * (1 << 20)\nfor _ in range(1000):\n    sys.stdout.buffer.write(b)\n"
            path = os.path.join(self.scratch, "cfg-out.json")
            with open(self.config) as f:
                cfg = json.load(f)
            cfg["sandbox"]["limits"] = {"outputBytes": 2 << 20}
            with open(path, "w") as f:
                json.dump(cfg, f)
            saved, self.config = self.config, path
            try:
                rc, out, err, res = self.kiln_run("python", code, timeout=30)
            finally:
                self.config = saved
            if not res or not res["truncated"] or res["timedOut"]:
                return "res=%r" % res
            if "[kiln: output stopped after" not in out or len(out) > (2 << 20) + 200:
                return "output was %d bytes, marker %s" % (len(out), "[kiln:" in out)
            return None
        return run

    def daemon_case(self):
        def run():
            code = ("(setsid bash -c 'sleep 1000' < /dev/null > /dev/null 2>&1 &)\n"
                    "(bash -c 'trap \"\" TERM HUP; exec sleep 1001' < /dev/null > /dev/null 2>&1 &)\n"
                    "sleep 0.2; echo parent-done\n")
            rc, out, err, res = self.kiln_run("bash", code, timeout=20)
            if rc != 0 or "parent-done" not in out or res["timedOut"]:
                return "rc=%s out=%r res=%r" % (rc, out, res)
            if res["durationMs"] > 15000:
                return "the run waited for its daemon"
            return None
        return run

    # --- through the server --------------------------------------------------

    def rpc(self, runs, *extra, kiln=None):
        files = []
        for i, (lang, code) in enumerate(runs):
            p = os.path.join(self.scratch, "rpc%d" % i)
            with open(p, "w") as f:
                f.write(code)
            files.append("%s=%s" % (lang, p))
        cmd = [sys.executable, os.path.join(HERE, "rpc.py"), kiln or self.kiln, "--config",
               self.config] + list(extra) + files
        p = subprocess.run(cmd, env=self.env, stdout=subprocess.PIPE, timeout=150)
        d = json.loads(p.stdout)
        OUR_PIDS.add(d["server_pid"])
        # A sanitizer report (leak, overflow) makes the server exit non-zero.
        if d["server_exit"] != 0:
            raise AssertionError("the server exited with %s" % d["server_exit"])
        return d

    def cgroup_ahead_case(self, zygote):
        """The next box's cgroup is made ahead, off the loop (a mkdir
        under cgroupfs waits for the kernel's cgroup lock while a process
        anywhere moves between cgroups: sandbox_cgroup_take): once the
        server idles, the newest cgroup under its kiln-<pid> is an empty
        one, and the next box (the warm box built after the next run; with
        the zygote, the spare asked for after it) is born in that one, not
        in one made then. Where kiln can make no cgroup (as nobody) there
        is nothing to see."""
        def run():
            d = own_cgroup2()
            if not d or not os.access(os.path.join(d, "cgroup.procs"), os.W_OK):
                return None
            cfg, lang, code = self.config, "bash", "echo ran\n"
            if zygote:
                cfg = os.path.join(self.scratch, "ahead-zygote.json")
                with open(self.config) as f:
                    c = json.load(f)
                c["sandbox"]["zygote"] = True
                with open(cfg, "w") as f:
                    json.dump(c, f)
                lang, code = "python", "import sys\nprint('kiln_zygote' in sys.modules)\n"
            srv = rpcmod.Server(self.kiln, env=self.env, args=["--config", cfg])
            top = os.path.join(d, "kiln-%d" % srv.p.pid)

            def boxes():
                """{number: populated} of the boxes' cgroups (b<N>)."""
                got = {}
                for n in os.listdir(top) if os.path.isdir(top) else []:
                    if n[:1] == "b" and n[1:].isdigit():
                        try:
                            with open(os.path.join(top, n, "cgroup.procs")) as f:
                                got[int(n[1:])] = bool(f.read().strip())
                        except OSError:
                            pass
                return got

            def snippet():
                """The run's result (or None) and its stdout."""
                srv.id += 1
                srv.send({"jsonrpc": "2.0", "id": srv.id, "method": "snippet/run",
                          "params": {"language": lang, "code": code, "override": True}})
                out = ""
                while True:
                    m = srv.read()
                    if m.get("method") == "run/output" and m["params"]["stream"] == "stdout":
                        out += m["params"]["text"]
                    elif m.get("id") == srv.id:
                        return m.get("result"), out or json.dumps(m)

            def idle():
                """Until the same cgroups three looks in a row (the server
                idles: the next box built, the last run's cgroup gone)."""
                seen, same = None, 0
                deadline = time.time() + 60
                while time.time() < deadline and same < 3:
                    now = boxes()
                    same = same + 1 if now == seen else 0
                    seen = now
                    time.sleep(0.2)
                return seen
            try:
                # With the zygote: until a run comes from it (then its
                # spare waits for the next).
                deadline = time.time() + 120
                while True:
                    res, out = snippet()
                    if not res:
                        return "the run failed: %s" % out
                    if not zygote or out == "True\n":
                        break
                    if time.time() > deadline:
                        return "no run came from the zygote"
                    time.sleep(0.5)
                before = idle()
                if not before or not any(before.values()) or before[max(before)]:
                    return "no box waiting beside an empty cgroup made ahead: %r" % before
                ahead = max(before)
                res, out = snippet()
                if not res:
                    return "the second run failed: %s" % out
                deadline = time.time() + 60
                while time.time() < deadline:
                    now = boxes()
                    if now.get(ahead):
                        return None
                    if ahead not in now:
                        return "b%d, made ahead, went unused: %r -> %r" % (ahead, before, now)
                    time.sleep(0.1)
                return "no box was born in b%d, made ahead: %r -> %r" % (ahead, before, boxes())
            finally:
                rc = srv.close()
                if rc != 0:
                    print("# cgroup-made-ahead: the server exited %s" % rc, flush=True)
        return run

    def protocol_cases(self):
        def streaming():
            code = ("import sys, time\nfor i in range(3):\n    print('out', i, flush=True)\n"
                    "    print('err', i, file=sys.stderr, flush=True)\n    time.sleep(0.05)\n"
                    "sys.stdout.buffer.write(b'bad \\xff\\xfe bytes and split \\xe2\\x82')\n"
                    "sys.stdout.flush(); time.sleep(0.1)\nsys.stdout.buffer.write(b'\\xac done\\n')\n"
                    "open('/work/out/plot.png', 'wb').write(b'\\x89PNG\\r\\n\\x1a\\n' + b'0' * 10)\n"
                    "import os; os.symlink('/etc/passwd', '/work/out/link')\n")
            d = self.rpc([("python", code)])
            rep = d["replies"][0]
            if not rep or "result" not in rep:
                return "no result: %r" % rep
            o = d["output"].get(rep["result"]["runId"])
            if not o or "out 2" not in o["stdout"] or "err 2" not in o["stderr"]:
                return "output missing: %r" % o
            if "bad \ufffd\ufffd bytes and split \u20ac done" not in o["stdout"]:
                return "UTF-8 repair wrong: %r" % o["stdout"]
            names = sorted(a["name"] for a in d["artifacts"])
            if names != ["plot.png"] or d["artifacts"][0]["mimeType"] != "image/png":
                return "artifacts: %r" % d["artifacts"]
            return None
        self.case("protocol-streaming-utf8-artifacts", streaming)

        def interleaved():
            # stdout and stderr alternate; each chunk waits until kiln has
            # read it from its pipe (FIONREAD of the pipe is 0), so kiln
            # reads them interleaved, and well within its 20 ms of
            # coalescing: its notifications must keep the order it read
            # them in, o0 e0 o1 e1 ..., not all of stdout then all of
            # stderr, and never one stream's text under the other's name.
            code = (DRAINED +
                    "for i in range(5):\n"
                    "    os.write(1, b'o%d\\n' % i); drained(1)\n"
                    "    os.write(2, b'e%d\\n' % i); drained(2)\n")
            d = self.rpc([("python", code)])
            res = d["replies"][0].get("result") if d["replies"][0] else None
            if not res or res["exitCode"] != 0:
                return "%r" % d["replies"][0]
            seq = d["output"].get(res["runId"], {}).get("seq", [])
            want = [[s, "%s%d\n" % (s[3], i)] for i in range(5) for s in ("stdout", "stderr")]
            # Coalescing may join chunks of one stream, never across.
            got = [[s, t] for s, t in seq]
            return None if got == want else "notifications out of order: %r" % got
        self.case("protocol-output-order-kept", interleaved)

        # Output that needs no escape is spliced from the box's pipe to
        # the client's (the relay, docs/performance-log.md, "The output
        # relay"), the rest copied and escaped: a mix of both, on both
        # streams, long clean runs and short dirty pieces, characters
        # split between two writes,
        # invalid bytes, while the client first reads nothing (its pipe
        # fills: the relay waits, or finishes a message through the
        # queue). Every byte must arrive once, in order, escaped where
        # needed, in whole messages (rpc.py parses each frame).
        relay_gen = (
            "import random\n"
            "def gen():\n"
            "    r = random.Random(7)\n"
            "    plain = bytes(c for c in range(0x20, 0x80) if c not in b'\"\\\\')\n"
            "    multi = ['\u00e9', '\u20ac', '\U0001d11e']\n"
            "    held = {1: b'', 2: b''}\n"
            "    for i in range(160):\n"
            "        fd = r.choice((1, 1, 2))\n"
            "        k = r.randrange(7)\n"
            "        if k <= 1:\n"
            "            b = bytes(r.choice(plain) for _ in range(64)) * r.randrange(1, 3000)\n"
            "        elif k == 2:\n"
            "            b = ''.join(r.choice(multi) + 'ab' for _ in range(r.randrange(1, 9000))).encode()\n"
            "        elif k == 3:\n"
            "            b = b'line \"q\" \\\\ tab\\t ctl\\x01\\x1f del\\x7f\\n' * r.randrange(1, 900)\n"
            "        elif k == 4:\n"
            "            b = b'x' * r.randrange(20000, 90000) + b'\\n' + b'y' * r.randrange(20000, 90000)\n"
            "        elif k == 5:\n"
            "            ones = (b'\\xff', b'\\\\', b'\"', b'\\x01', b'\\n')\n"
            "            b = b''.join(b'z' * r.randrange(1, 30000) + r.choice(ones) for _ in range(5))\n"
            "        else:\n"
            "            b = b'v' * r.randrange(16000, 70000)\n"
            "        b, held[fd] = held[fd] + b, b''\n"
            "        if k == 6:\n"
            "            e = '\\u20ac'.encode()\n"
            "            c = r.randrange(1, 3)\n"
            "            b, held[fd] = b + e[:c], e[c:]\n"
            "        yield fd, b\n"
            "    for fd in (1, 2):\n"
            "        yield fd, held[fd]\n")

        def relay_mixed():
            code = relay_gen + (
                "import os\n"
                "for fd, b in gen():\n"
                "    while b:\n"
                "        b = b[os.write(fd, b):]\n")
            ns = {}
            exec(relay_gen, ns)
            want = {1: b"", 2: b""}
            for fd, b in ns["gen"]():
                want[fd] += b
            d = self.rpc([("python", code)], "--stall", "1.5", "--limits",
                         json.dumps({"outputBytes": 256 << 20, "wallMs": 60000}))
            res = d["replies"][0].get("result") if d["replies"][0] else None
            if not res or res["exitCode"] != 0:
                return "%r" % d["replies"][0]
            o = d["output"].get(res["runId"], {"stdout": "", "stderr": ""})
            for fd, name in ((1, "stdout"), (2, "stderr")):
                exp = want[fd].decode("utf-8", "replace")
                got = o[name]
                if got != exp:
                    at = next((i for i in range(min(len(got), len(exp)))
                               if got[i] != exp[i]), min(len(got), len(exp)))
                    return "%s differs at %d of %d (got %d): %r != %r" % (
                        name, at, len(exp), len(got), got[at:at + 40], exp[at:at + 40])
            return None
        self.case("protocol-relay-mixed-exact", relay_mixed)

        def relay_interleaved():
            # Long clean chunks, stdout and stderr in turns, each read by
            # kiln before the next is written (as above): the spliced
            # messages keep the order kiln read the chunks in.
            code = (DRAINED +
                    "def put(fd, b):\n"
                    "    while b:\n"
                    "        b = b[os.write(fd, b):]\n"
                    "for i in range(6):\n"
                    "    put(1, b'%d' % i * 70000); drained(1)\n"
                    "    put(2, b'%d' % (i + 5) * 50000); drained(2)\n")
            d = self.rpc([("python", code)])
            res = d["replies"][0].get("result") if d["replies"][0] else None
            if not res or res["exitCode"] != 0:
                return "%r" % d["replies"][0]
            got = []
            for s, t in d["output"].get(res["runId"], {}).get("seq", []):
                if got and got[-1][0] == s:
                    got[-1][1] += t
                else:
                    got.append([s, t])
            want = [x for i in range(6) for x in (["stdout", str(i) * 70000],
                                                  ["stderr", str(i + 5) * 50000])]
            if got != want:
                return "out of order: %r" % [[s, t[:3], len(t)] for s, t in got]
            return None
        self.case("protocol-relay-order-kept", relay_interleaved)

        # The relay moves the box's output pages to the client's pipe
        # after checking a copy of them (run_output.c). A program that put
        # pages it can still change into its stdout (a file's page cache
        # through splice or sendfile, its own memory through vmsplice)
        # could rewrite them once checked, while the client has not read
        # them yet (it reads nothing here for 1.5 s), and write JSON-RPC
        # of its choosing into the editor's stream: the filter refuses the
        # three calls (ENOSYS), so the program copies with write(), and
        # the client gets what was written first, in valid messages.
        def relay_pages_fixed():
            code = (
                "import ctypes, errno, mmap, os, sys, time\n"
                "n = 1 << 16\n"
                "EVIL = b'\"}}\\r\\n\\r\\n{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"x\"}'\n"
                "fd = os.open('/tmp/pages', os.O_RDWR | os.O_CREAT, 0o600)\n"
                "libc = ctypes.CDLL(None, use_errno=True)\n"
                "class iovec(ctypes.Structure):\n"
                "    _fields_ = [('base', ctypes.c_void_p), ('len', ctypes.c_size_t)]\n"
                "def vmsplice(m):\n"
                "    buf = (ctypes.c_char * n).from_buffer(m)\n"
                "    iov = iovec(ctypes.addressof(buf), n)\n"
                "    r = libc.vmsplice(1, ctypes.byref(iov), 1, 0)\n"
                "    del buf\n"
                "    if r < 0:\n"
                "        raise OSError(ctypes.get_errno(), 'vmsplice')\n"
                "    return r\n"
                "for name, fill in (('splice', b'A'), ('sendfile', b'B'), ('vmsplice', b'C')):\n"
                "    os.pwrite(fd, fill * n, 0)\n"
                "    m = mmap.mmap(fd, n)\n"
                "    try:\n"
                "        if name == 'splice':\n"
                "            put = os.splice(fd, 1, n, offset_src=0)\n"
                "        elif name == 'sendfile':\n"
                "            put = os.sendfile(1, fd, 0, n)\n"
                "        else:\n"
                "            put = vmsplice(m)\n"
                "        how = 'moved'\n"
                "    except OSError as e:\n"
                "        how, put = errno.errorcode.get(e.errno, str(e.errno)), 0\n"
                "    os.write(1, m[put:])\n"
                "    time.sleep(0.4)\n"
                "    m[100:100 + len(EVIL)] = EVIL\n"
                "    m.close()\n"
                "    print(name, how, file=sys.stderr, flush=True)\n")
            d = self.rpc([("python", code)], "--stall", "1.5")
            res = d["replies"][0].get("result") if d["replies"][0] else None
            if not res or res["exitCode"] != 0:
                return "%r" % d["replies"][0]
            o = d["output"].get(res["runId"], {"stdout": "", "stderr": ""})
            hows = o["stderr"].split()
            if hows != ["splice", "ENOSYS", "sendfile", "ENOSYS", "vmsplice", "ENOSYS"]:
                return "the calls: %r" % o["stderr"]
            want = "A" * 65536 + "B" * 65536 + "C" * 65536
            if o["stdout"] != want:
                at = next((i for i in range(len(want)) if o["stdout"][i:i + 1] != want[i]), 0)
                return "stdout changed at %d: %r" % (at, o["stdout"][at:at + 60])
            return None
        self.case("protocol-relay-pages-fixed", relay_pages_fixed)

        # A program can write its stdout in packet mode: O_DIRECT set on
        # its end, or a pipe2(O_DIRECT) pipe of its own tee'd into it.
        # Each write is then a pipe buffer flagged as a packet, which
        # splice and tee carry along, and a read() that ends inside a
        # packet drops the rest of it. Relayed as they were, such pages
        # reached the client's pipe, where the client's reads (here
        # Python's buffered reader: 8 KiB for each header) cut them: bytes
        # of messages were lost and the stream's framing with them. The
        # relay now finds packets (run_output.c, relay_check) and copies
        # them the usual way. The client reads nothing for 2 s, so that
        # the box's pipe fills with packets and the relay takes many at
        # once; both runs' text must arrive whole.
        def relay_packets():
            line = "abcdefghijklmnopqrstuvwxyz0123456789" * 100
            direct = ("import fcntl, os\n"
                      "fcntl.fcntl(1, fcntl.F_SETFL, fcntl.fcntl(1, fcntl.F_GETFL) | os.O_DIRECT)\n"
                      "for _ in range(600):\n"
                      "    os.write(1, b'%s')\n" % line)
            teed = ("import ctypes, os\n"
                    "libc = ctypes.CDLL(None, use_errno=True)\n"
                    "r, w = os.pipe2(os.O_DIRECT)\n"
                    "for _ in range(600):\n"
                    "    os.write(w, b'%s')\n"
                    "    if libc.tee(r, 1, %d, 0) != %d:\n"
                    "        raise OSError(ctypes.get_errno(), 'tee')\n"
                    "    os.read(r, %d)\n" % (line, len(line), len(line), len(line)))
            try:
                d = self.rpc([("python", direct), ("python", teed)], "--stall", "2")
            except json.JSONDecodeError:
                return "the client could not parse the server's output (bytes were lost)"
            for rep, how in zip(d["replies"], ("O_DIRECT", "tee")):
                res = rep.get("result") if rep else None
                if not res or res["exitCode"] != 0:
                    return "%s: %r" % (how, rep)
                got = d["output"].get(res["runId"], {}).get("stdout", "")
                if got != line * 600:
                    return "%s: %d bytes of %d arrived" % (how, len(got), len(line) * 600)
            return None
        self.case("protocol-relay-packets", relay_packets)

        # The same packets read the usual way (here a client on a socket:
        # nothing is relayed). A read stops right after a packet, and a
        # writer blocked on its full pipe wakes the server only when it
        # finds the pipe empty: with one packet read a wake-up, a program
        # writing 20 KB at a time (five pages, five packets) stalled
        # until its wallMs killed it, most of its output unsent.
        def packets_not_stalled():
            code = ("import fcntl, os\n"
                    "fcntl.fcntl(1, fcntl.F_SETFL, fcntl.fcntl(1, fcntl.F_GETFL) | os.O_DIRECT)\n"
                    "for i in range(100):\n"
                    "    os.write(1, b'%d' % (i % 10) * 20000)\n")
            d = self.rpc([("python", code)], "--socket", "--limits", json.dumps({"wallMs": 10000}))
            res = d["replies"][0].get("result") if d["replies"][0] else None
            if not res or res["exitCode"] != 0:
                return "%r" % (res and {k: res[k] for k in ("exitCode", "timedOut", "durationMs")})
            got = d["output"].get(res["runId"], {}).get("stdout", "")
            want = "".join(str(i % 10) * 20000 for i in range(100))
            return None if got == want else "%d bytes of %d arrived" % (len(got), len(want))
        self.case("protocol-packets-not-stalled", packets_not_stalled)

        def box_pipe_size():
            # The program's stdout is a pipe of one notification's worth
            # (256 KiB, box.c): the server takes what it wrote in one read
            # or one relayed message, and the pipe's pages stay in cache
            # between the program's write and the reads (1 MiB cost every
            # stage more CPU per byte: docs/performance-log.md, "Output at
            # half of cat").
            d = self.rpc([("python", "import fcntl\nprint(fcntl.fcntl(1, 1032))\n")])
            res = d["replies"][0].get("result") if d["replies"][0] else None
            if not res or res["exitCode"] != 0:
                return "%r" % d["replies"][0]
            got = d["output"].get(res["runId"], {}).get("stdout", "")
            return None if got == "%d\n" % (256 << 10) else "stdout's pipe: %r" % got
        self.case("protocol-box-pipe-one-notification", box_pipe_size)

        def artifact_names():
            # Names that are not UTF-8 reach the client as valid UTF-8 (the
            # JSON stream stays valid), inline and copied alike.
            code = ("open(b'/work/out/\\xff\\xfe.txt', 'wb').write(b'x')\n"
                    "open(b'/work/out/big\\xe2\\x82.bin', 'wb').write(b'y' * (2 << 20))\n")
            d = self.rpc([("python", code)])
            names = sorted(a["name"] for a in d["artifacts"])
            if names != ["big\ufffd\ufffd.bin", "\ufffd\ufffd.txt"]:
                return "names: %r" % names
            big = [a for a in d["artifacts"] if a["name"].startswith("big")][0]
            if "path" not in big or not big["path"].endswith("big\ufffd\ufffd.bin") or \
                    os.path.getsize(big["path"]) != 2 << 20:
                return "copy: %r" % big
            shutil.rmtree(os.path.dirname(big["path"]), ignore_errors=True)
            return None
        self.case("protocol-artifact-names-utf8", artifact_names)

        def truncation():
            code = "import sys\nb = b'z' * (1 << 20)\nfor _ in range(1000):\n    sys.stdout.buffer.write(b)\n"
            d = self.rpc([("python", code)], "--limits", json.dumps({"outputBytes": 1 << 20}))
            res = d["replies"][0].get("result")
            if not res or not res["truncated"]:
                return "not truncated: %r" % d["replies"][0]
            text = d["output"][res["runId"]]["stdout"]
            if len(text) > (1 << 20) + 200 or "output stopped" not in text:
                return "output %d bytes" % len(text)
            return None
        self.case("protocol-output-cap", truncation)

        def truncation_wire():
            # outputBytes counts what the client receives: 200,000 bytes
            # of 0x01 are 1,200,000 bytes of JSON (each a \u0001), so a
            # 256 KiB cap ends the run although the raw bytes fit in it.
            limit = 256 << 10
            code = "import sys\nsys.stdout.buffer.write(b'\\x01' * 200000)\n"
            d = self.rpc([("python", code)], "--limits", json.dumps({"outputBytes": limit}))
            res = d["replies"][0].get("result")
            if not res or not res["truncated"]:
                return "not truncated: %r" % d["replies"][0]
            text = d["output"][res["runId"]]["stdout"]
            body, sep, marker = text.partition("\n[kiln: output stopped")
            wire = len(json.dumps(body, ensure_ascii=False)) - 2
            if not sep or set(body) != {"\x01"} or not limit - 6 < wire <= limit:
                return "%d characters sent, %d bytes as JSON, marker %s" % (
                    len(body), wire, bool(sep))
            return None
        self.case("protocol-output-cap-counts-json", truncation_wire)

        def cancel():
            d = self.rpc([("python", "import time\nprint('x', flush=True)\ntime.sleep(60)\n"),
                          ("bash", "echo y; sleep 60")], "--cancel-after", "2")
            for rep in d["replies"]:
                if not rep or rep.get("error", {}).get("code") != -32800:
                    return "not cancelled: %r" % rep
            # Both runs were under way (a run that never started is not
            # a cancelled one).
            seen = sorted(o["stdout"].strip() for o in d["output"].values())
            return None if seen == ["x", "y"] else "the runs did not start: %r" % d["output"]
        self.case("protocol-cancel-kills", cancel)

        def cancel_during_copy():
            # Copying artifacts back (here 3 x 250 MiB) runs off the loop:
            # a cancel sent while the copy is under way (its first file is
            # in the artifact directory) is answered with -32800 (on the
            # loop it would wait for the copy, and the result would come
            # first), the server answers a request sent after it, and the
            # partial copies are removed.
            adir = os.path.join(self.scratch, "copies")
            cfg = os.path.join(self.scratch, "copy-config.json")
            with open(self.config) as f:
                c = json.load(f)
            c["sandbox"]["artifactDir"] = adir
            with open(cfg, "w") as f:
                json.dump(c, f)
            code = ("import os\nb = b'z' * (1 << 20)\nfor i in range(3):\n"
                    "    with open('/work/out/big%d.bin' % i, 'wb') as f:\n"
                    "        for _ in range(250):\n            f.write(b)\n"
                    "print('ready', flush=True)\n")
            limits = {"tmpfsBytes": 800 << 20, "fileSizeBytes": 300 << 20, "wallMs": 60000}
            proc = subprocess.Popen([self.kiln, "--config", cfg], env=self.env,
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.DEVNULL)
            send = lambda m: rpcmod.send(proc, m)  # noqa: E731
            try:
                send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}})
                rpcmod.recv(proc.stdout)
                send({"jsonrpc": "2.0", "id": 1, "method": "snippet/run",
                      "params": {"language": "python", "code": code, "limits": limits,
                                 "override": True}})
                got, sent_at, answered, late = [], None, None, None
                deadline = time.time() + 60
                while time.time() < deadline:
                    m = rpcmod.recv(proc.stdout)
                    if m is None:
                        break
                    got.append(m)
                    if m.get("method") == "run/output" and "ready" in m["params"]["text"]:
                        # The copy is under way once its first file is there.
                        for _ in range(1000):
                            if any(fs for _, _, fs in os.walk(adir)):
                                break
                            time.sleep(0.01)
                        sent_at = time.time()
                        send({"jsonrpc": "2.0", "method": "$/cancelRequest",
                              "params": {"id": 1}})
                        send({"jsonrpc": "2.0", "id": 2, "method": "snippet/validate",
                              "params": {"language": "python", "code": "print(1)\n"}})
                    if m.get("id") == 1:
                        answered = time.time()
                        if sent_at is None:
                            break  # answered before "ready": the run never started
                    if m.get("id") == 2:
                        late = m
                    if answered and late:
                        break
                send({"jsonrpc": "2.0", "id": 3, "method": "shutdown"})
                send({"jsonrpc": "2.0", "method": "exit"})
                proc.stdin.close()
                proc.wait(timeout=30)
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
            rep = [m for m in got if m.get("id") == 1]
            if not sent_at or not rep:
                return "no ready or no reply: %r" % [m.get("method", m.get("id")) for m in got]
            if rep[0].get("error", {}).get("code") != -32800:
                return "the copy held the cancel up: %r" % {k: v for k, v in rep[0].items()
                                                          if k != "result"}
            if any(m.get("method") == "run/artifact" for m in got):
                return "artifacts were reported after the cancel"
            if not late or "result" not in late:
                return "the request after the cancel was not answered: %r" % late
            for _ in range(50):
                left = [f for _, _, fs in os.walk(adir) for f in fs]
                if not left:
                    break
                time.sleep(0.1)
            if left:
                return "partial copies left: %r" % left
            if proc.returncode != 0:
                return "the server exited with %s" % proc.returncode
            print("# cancel during a 750 MiB copy answered in %.1f ms"
                  % ((answered - sent_at) * 1000))
            return None
        self.case("protocol-cancel-during-artifact-copy", cancel_during_copy)

        def concurrent():
            runs = [("python", "print(%d * 7)\n" % i) for i in range(6)]
            d = self.rpc(runs)
            got = sorted(d["output"][r["result"]["runId"]]["stdout"].strip()
                         for r in d["replies"] if r and "result" in r)
            want = sorted(str(i * 7) for i in range(6))
            return None if got == want else "got %r" % got
        self.case("protocol-concurrent-runs", concurrent)

        def backpressure():
            # 48 MiB written while the client reads nothing for 3 s: none
            # of it lost, and the server does not hold it meanwhile (this
            # text needs no escape: the relay waits for room in the
            # client's pipe; the next case is text the queue carries): its
            # resident memory grows by less than half of it (about 15 MiB:
            # its 8 MiB high-water mark and the rest of a run); with the
            # output never paused it grows by all of it. The release build
            # (--kiln-release): ASan's own allocations would hide the figure.
            code = "import sys\nb = b'q' * 65536\nfor _ in range(768):\n    sys.stdout.buffer.write(b)\n"
            d = self.rpc([("python", code)], "--stall", "3", "--limits",
                         json.dumps({"outputBytes": 64 << 20}), kiln=self.kiln_release)
            res = d["replies"][0].get("result")
            if not res or res["exitCode"] != 0:
                return "%r" % d["replies"][0]
            n = len(d["output"][res["runId"]]["stdout"])
            if n != 768 * 65536:
                return "lost output: %d bytes" % n
            grew = d["rss_kb"][1] - d["rss_kb"][0]
            print("# server memory grew %d KiB while the client stalled" % grew, flush=True)
            return None if grew < 24 * 1024 else \
                "the server held the output of a stalled client: +%d KiB" % grew
        self.case("protocol-backpressure-no-loss", backpressure)

        def backpressure_escaped():
            # The same through the peer's queue: a client on a socket
            # (nothing is spliced there) and text that needs escapes ("q\n":
            # 3 bytes of JSON for 2). Past the queue's high-water mark the
            # run pauses, so the server holds about 8 MiB, not the 36 MiB
            # of JSON written while the client stalls.
            code = "import sys\nb = b'q\\n' * 32768\nfor _ in range(384):\n    sys.stdout.buffer.write(b)\n"
            d = self.rpc([("python", code)], "--socket", "--stall", "3", "--limits",
                         json.dumps({"outputBytes": 64 << 20}), kiln=self.kiln_release)
            res = d["replies"][0].get("result")
            if not res or res["exitCode"] != 0:
                return "%r" % d["replies"][0]
            text = d["output"][res["runId"]]["stdout"]
            if text != "q\n" * (384 * 32768):
                return "lost or changed output: %d characters" % len(text)
            grew = d["rss_kb"][1] - d["rss_kb"][0]
            print("# server memory grew %d KiB while the client stalled" % grew, flush=True)
            return None if grew < 24 * 1024 else \
                "the server held the output of a stalled client: +%d KiB" % grew
        self.case("protocol-backpressure-escaped-no-loss", backpressure_escaped)

        def bad_requests():
            d = self.rpc([("cobol", "DISPLAY 'x'.")])
            err = d["replies"][0].get("error")
            if not err or err["code"] != -32602 or "unknown language" not in err["message"]:
                return "%r" % d["replies"][0]
            d = self.rpc([("python", "print(1)")], "--limits", json.dumps({"wallMs": -5}))
            err = d["replies"][0].get("error")
            return None if err and err["code"] == -32602 else "%r" % d["replies"][0]
        self.case("protocol-bad-requests", bad_requests)
        self.case("cgroup-made-ahead", self.cgroup_ahead_case(False))
        self.case("cgroup-made-ahead-zygote", self.cgroup_ahead_case(True))

        def server_stop():
            # End the session while a run is going: nothing may survive.
            code = "(setsid sleep 1000 &)\nsleep 1000\n"
            p = os.path.join(self.scratch, "stop.sh")
            with open(p, "w") as f:
                f.write(code)
            proc = subprocess.Popen([self.kiln, "--config", self.config], env=self.env,
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.DEVNULL)

            def send(m):
                b = json.dumps(m).encode()
                proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(b) + b)
                proc.stdin.flush()
            send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}})
            send({"jsonrpc": "2.0", "id": 1, "method": "snippet/run",
                  "params": {"language": "bash", "code": code, "override": True}})
            for _ in range(50):
                if self.box_processes():
                    break
                time.sleep(0.1)
            if not self.box_processes():
                proc.kill()
                return "the run never started"
            proc.stdin.close()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                return "the server did not stop"
            left = self.box_processes()
            return "left behind: %s" % left if left else None
        self.case("server-stop-kills-everything", server_stop)

        def children(pid):
            # {(pid, start time)} of pid's children.
            found = set()
            for p in os.listdir("/proc"):
                try:
                    with open("/proc/%s/stat" % p) as f:
                        st = f.read().rsplit(")", 1)[1].split()
                except (OSError, IndexError):
                    continue
                if int(st[1]) == pid:
                    found.add((int(p), st[19]))
            return found

        def warm_pair(runs, *extra):
            # Two runs one by one, the second in the warm box built after
            # the first: (reply set, results, stdouts, None), or why not
            # as the last.
            d = self.rpc(runs, "--one-by-one", "0.5", *extra)
            res = [r.get("result") if r else None for r in d["replies"]]
            if not all(res):
                return d, None, None, "runs failed: %r" % d["replies"]
            if not res[1]["warmBox"]:
                return d, None, None, "the second run did not get a warm box: %r" % res[1]
            return d, res, [d["output"].get(r["runId"], {}).get("stdout", "") for r in res], None

        def warm_box_fresh():
            # A warm box is built before its run's program and code are
            # known, but still serves one run only. Run 1 (python) leaves
            # traces wherever it may write, and a daemon; run 2 (bash:
            # the same box layout) gets the box built meanwhile (warmBox
            # true) and must find none of it. (Namespace inode numbers
            # would prove nothing: the kernel reuses those of namespaces
            # that are gone.)
            first = ("import subprocess\n"
                     "for p in ('/tmp/mark', '/work/mark', '/dev/shm/mark'):\n"
                     "    open(p, 'w').write('mark')\n"
                     "open('/work/out/a.txt', 'w').write('a')\n"
                     "subprocess.Popen(['setsid', 'sleep', '1000'])\n")
            second = ("for f in /tmp/mark /work/mark /work/out/a.txt /dev/shm/mark; do\n"
                      "  [ -e $f ] && echo LEFT $f\ndone\n"
                      "echo PROCS $(for p in /proc/[0-9]*; do cat $p/comm; done)\n"
                      "ls /code\n"
                      "echo x 2>/dev/null > /code/snippet.sh && echo WROTE-CODE\n"
                      "echo own > /work/out/b.txt\n")
            d, res, out, why = warm_pair([("python", first), ("bash", second)])
            if why:
                return why
            # pid 1 (kiln), bash, its subshell and cat: nothing of run 1.
            procs = [ln.split()[1:] for ln in out[1].splitlines() if ln.startswith("PROCS")]
            if not procs or not set(procs[0]) <= {"kiln", "bash", "cat"}:
                return "processes of another run visible: %r" % out[1]
            for bad in ("LEFT", "WROTE-CODE"):
                if bad in out[1]:
                    return "state crossed runs (%s): %r" % (bad, out[1])
            if "snippet.sh" not in out[1]:
                return "no code file: %r" % out[1]
            names = sorted((a["runId"], a["name"]) for a in d["artifacts"])
            want = sorted([(res[0]["runId"], "a.txt"), (res[1]["runId"], "b.txt")])
            return None if names == want else "artifacts: %r" % names
        self.case("warm-box-fresh-per-run", warm_box_fresh)

        def warm_box_run_limits():
            # The warm box's program process is prepared before its run
            # is known (docs/sandbox.md, step 10): the rlimits must still
            # be the run's, from GO, not those of the run the box was
            # built after. Run 2 asks for other limits of the same
            # layout, takes the warm box, and reads its limits back.
            show = "echo LIMITS $(ulimit -n) $(ulimit -u) $(ulimit -f)\n"
            d, res, out, why = warm_pair([("bash", show), ("bash", show)], "--limits-last",
                                         json.dumps({"openFiles": 77, "processes": 33,
                                                     "fileSizeBytes": 1 << 20}))
            if why:
                return why
            want = "LIMITS 77 33 %d" % ((1 << 20) // 1024)
            if want not in out[1] or want in out[0]:
                return "limits not the run's own: %r (want %r in the second)" % (out, want)
            return None
        self.case("warm-box-takes-the-runs-limits", warm_box_run_limits)

        def warm_box_run_cpus():
            # pid 1 pins the prepared process to its own CPU to wake it
            # there (child.c); the program must still get every CPU the
            # server has, like a fresh box's. Run 2 takes the warm box.
            show = "grep Cpus_allowed_list /proc/self/status\n"
            d, res, out, why = warm_pair([("bash", show), ("bash", show)])
            if why:
                return why
            with open("/proc/self/status") as f:
                want = [ln.strip() for ln in f if ln.startswith("Cpus_allowed_list")]
            got = [o.strip() for o in out]
            return None if got == want * 2 else "CPUs %r, the server's %r" % (got, want)
        self.case("warm-box-program-cpus", warm_box_run_cpus)

        def warm_box_dies_with_server():
            # The boxes a server keeps (the warm box waiting for code,
            # the validator's worker) end with it, stopped or killed.

            def alive(pid, start):
                try:
                    with open("/proc/%d/stat" % pid) as f:
                        return f.read().rsplit(")", 1)[1].split()[19] == start
                except OSError:
                    return False
            for how in ("stop", "kill"):
                proc = subprocess.Popen([self.kiln, "--config", self.config], env=self.env,
                                        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL)
                b = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                                "params": {}}).encode()
                proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(b) + b)
                proc.stdin.flush()
                kids = set()
                for _ in range(100):
                    kids = children(proc.pid)
                    if len(kids) >= 2:
                        break
                    time.sleep(0.05)
                if not kids:
                    proc.kill()
                    proc.wait()
                    return "no warm box appeared (%s)" % how
                if how == "stop":
                    proc.stdin.close()
                    proc.wait(timeout=10)
                else:
                    proc.kill()
                    proc.wait()
                for _ in range(50):
                    left = [k for k in kids if alive(*k)]
                    if not left:
                        break
                    time.sleep(0.1)
                if left:
                    for pid, _ in left:
                        try:
                            os.kill(pid, signal.SIGKILL)
                        except OSError:
                            pass
                    return "left behind after %s: %r" % (how, left)
            return self.after_sigkill()
        self.case("warm-box-dies-with-server", warm_box_dies_with_server)

        def warm_box_pages_copied():
            # A box's pid 1 is a clone() of the server: the server's
            # pages are shared with it, copy-on-write, while the warm box
            # waits, and the next request's first write to each would
            # copy it on the reply's path. A thread copies them once the
            # warm box is built (warm.c): the server's shared dirty
            # writable memory falls from about 0.8 MB to under 0.2 MB. The release
            # build: ASan's mappings are reservations the copy passes by.
            # Without the validator's CPython worker, whose own pid 1 (a
            # clone too, made at any time) shares them until the next
            # warm box is built.
            cfg_path = self.config_with("validator", "python", False)
            proc = subprocess.Popen([self.kiln_release, "--config", cfg_path], env=self.env,
                                    stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
            OUR_PIDS.add(proc.pid)
            b = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                            "params": {}}).encode()
            proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(b) + b)
            proc.stdin.flush()
            shared, kids = None, 0
            try:
                for _ in range(60):
                    time.sleep(0.05)
                    # Its writable mappings only: the binary's own pages
                    # are shared too, and dirty where it lies on a tmpfs.
                    shared, writable = 0, False
                    with open("/proc/%d/smaps" % proc.pid) as f:
                        for ln in f:
                            head = ln.split()
                            if head and "-" in head[0] and len(head) >= 5:
                                writable = head[1] == "rw-p"
                            elif writable and ln.startswith("Shared_Dirty:"):
                                shared += int(head[1])
                    # Only with its warm box (pid 1, its child) built.
                    kids = len(children(proc.pid))
                    if kids and shared < 200:
                        break
            finally:
                proc.stdin.close()
                proc.wait(timeout=10)
            if not kids:
                return "no warm box appeared"
            if shared is None or shared >= 200:
                return "the server still shares %s kB of its writable pages" % shared
            return None
        self.case("warm-box-pages-copied", warm_box_pages_copied)

        def warm_box_go_no_faults():
            # A warm box's pid 1 writes the pages GO's handling needs
            # (GO's buffers, the code's copy) while it waits (child.c's
            # touch_go_pages()): from GO to the program's start it takes
            # no page fault, each 1-12 us on the run's path. Its minor
            # faults (/proc/PID/stat) are read while the box waits and
            # again while the run's program sleeps. The release build:
            # ASan's shadow would fault on its own. Without the zygote
            # and the CPython worker: the server's only child is then
            # the warm box's pid 1.
            def minflt(pid):
                with open("/proc/%d/stat" % pid) as f:
                    return int(f.read().rsplit(")", 1)[1].split()[7])
            cfg = json.load(open(self.config_with("validator", "python", False)))
            cfg["sandbox"]["zygote"] = False
            cfg_path = os.path.join(self.scratch, "cfg-go-faults.json")
            with open(cfg_path, "w") as f:
                json.dump(cfg, f)
            proc = subprocess.Popen([self.kiln_release, "--config", cfg_path], env=self.env,
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.DEVNULL)
            OUR_PIDS.add(proc.pid)
            got = []
            try:
                rpcmod.send(proc, {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                                   "params": {}})
                rpcmod.recv(proc.stdout)
                for i in range(1, 4):
                    kids = set()
                    for _ in range(100):
                        time.sleep(0.05)
                        kids = children(proc.pid)
                        if len(kids) == 1:
                            break
                    if len(kids) != 1:
                        return "no warm box alone: %r" % kids
                    pid1 = next(iter(kids))[0]
                    # Waiting: its count holds still (the box may still be
                    # mapping its pages when it first appears).
                    before = minflt(pid1)
                    for _ in range(40):
                        time.sleep(0.05)
                        now = minflt(pid1)
                        if now == before:
                            break
                        before = now
                    rpcmod.send(proc, {"jsonrpc": "2.0", "id": i, "method": "snippet/run",
                                       "params": {"language": "bash", "code": "sleep 0.6"}})
                    time.sleep(0.3)
                    after = minflt(pid1)
                    while True:
                        m = rpcmod.recv(proc.stdout)
                        if m is None:
                            return "the server ended"
                        if m.get("id") == i:
                            break
                    if not m.get("result", {}).get("warmBox"):
                        return "run %d did not get the warm box: %r" % (i, m)
                    got.append(after - before)
            finally:
                proc.stdin.close()
                proc.wait(timeout=10)
            return None if got == [0, 0, 0] else "pid 1's page faults after GO: %r" % got
        self.case("warm-box-go-no-faults", warm_box_go_no_faults)

        def warm_plan_host_changed():
            # The run that takes the warm box takes the plan it was built
            # from (warm.c's warm_plan_take) only while the host is as it
            # was: here its interpreter stops being executable after the
            # box is built, and the next run must be refused as a fresh
            # plan refuses it, not handed the old plan. Under /var/tmp:
            # the box's own /tmp would cover the interpreter's folder.
            d = tempfile.mkdtemp(prefix="kiln-warm-plan.", dir="/var/tmp")
            try:
                os.chmod(d, 0o755)
                os.mkdir(os.path.join(d, "bin"), 0o755)
                tool = os.path.join(d, "bin", "tool")
                shutil.copy("/bin/true", tool)
                os.chmod(tool, 0o755)
                cfg_path = self.config_with("sandbox", "languages",
                                            {"tool": {"argv": [tool], "file": "x"}})
                proc = subprocess.Popen([self.kiln, "--config", cfg_path], env=self.env,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL)
                OUR_PIDS.add(proc.pid)
                replies = []
                try:
                    rpcmod.send(proc, {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                                       "params": {}})
                    rpcmod.recv(proc.stdout)
                    for i in (1, 2, 3):
                        time.sleep(0.5)
                        if i == 3:
                            os.chmod(tool, 0o644)
                        rpcmod.send(proc, {"jsonrpc": "2.0", "id": i, "method": "snippet/run",
                                           "params": {"language": "tool", "code": ""}})
                        while True:
                            m = rpcmod.recv(proc.stdout)
                            if m is None:
                                return "the server ended"
                            if m.get("id") == i:
                                replies.append(m)
                                break
                finally:
                    proc.stdin.close()
                    proc.wait(timeout=10)
            finally:
                shutil.rmtree(d, ignore_errors=True)
            if not (replies[1].get("result") or {}).get("warmBox"):
                return "run 2 did not get the warm box: %r" % replies[1]
            msg = (replies[2].get("error") or {}).get("message", "")
            if "is not installed" not in msg:
                return "run 3, its interpreter no longer executable: %r" % replies[2]
            return None
        self.case("warm-plan-host-changed", warm_plan_host_changed)

        def exec_failure_reported():
            # The program's execve fails in the box (its #! names an
            # interpreter the box does not have; the host check passes:
            # the file is executable). Pid 1 reads the exec pipe once the
            # program is reaped, not at the execve (child.c): the failure
            # must still reach the client as the step that failed, in a
            # box built for the run and in the warm box after it. The
            # release build: under ASan the program's process (on a stack
            # of pid 1's, CLONE_VM) dies in ASan's no-return hook before
            # it can write its record, with or without this change.
            d = tempfile.mkdtemp(prefix="kiln-exec-fail.", dir="/var/tmp")
            try:
                os.chmod(d, 0o755)
                tool = os.path.join(d, "tool")
                with open(tool, "w") as f:
                    f.write("#!/kiln-no-such-dir/interp\n")
                os.chmod(tool, 0o755)
                cfg_path = self.config_with("sandbox", "languages",
                                            {"tool": {"argv": [tool], "file": "x"}})
                proc = subprocess.Popen([self.kiln_release, "--config", cfg_path],
                                        env=self.env, stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
                OUR_PIDS.add(proc.pid)
                replies = []
                try:
                    rpcmod.send(proc, {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                                       "params": {}})
                    rpcmod.recv(proc.stdout)
                    for i in (1, 2):
                        time.sleep(0.5)
                        rpcmod.send(proc, {"jsonrpc": "2.0", "id": i, "method": "snippet/run",
                                           "params": {"language": "tool", "code": ""}})
                        while True:
                            m = rpcmod.recv(proc.stdout)
                            if m is None:
                                return "the server ended"
                            if m.get("id") == i:
                                replies.append(m)
                                break
                finally:
                    proc.stdin.close()
                    proc.wait(timeout=10)
            finally:
                shutil.rmtree(d, ignore_errors=True)
            for i, m in enumerate(replies, 1):
                msg = (m.get("error") or {}).get("message", "")
                if "executing the interpreter failed: No such file or directory" not in msg:
                    return "run %d, its execve failing: %r" % (i, m)
            return None
        self.case("exec-failure-reported", exec_failure_reported)

        def server_killed():
            # Even SIGKILL of the server takes the box down (PDEATHSIG).
            proc = subprocess.Popen([self.kiln, "run", "--override", "--config", self.config,
                                     "--lang", "bash", "-"], env=self.env, stdin=subprocess.PIPE,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            proc.stdin.write(b"(setsid sleep 1000 &)\nsleep 1000\n")
            proc.stdin.close()
            for _ in range(100):
                if len(self.box_processes()) >= 2:
                    break
                time.sleep(0.1)
            else:
                proc.kill()
                proc.wait()
                return "the box never started"
            proc.kill()
            proc.wait()
            for _ in range(50):
                if not self.box_processes():
                    return self.after_sigkill()
                time.sleep(0.1)
            return "left behind after SIGKILL of kiln: %s" % self.box_processes()
        self.case("server-sigkill-kills-everything", server_killed)

    def finish(self):
        shutil.rmtree(self.dir, ignore_errors=True)
        print("%d passed, %d failed" % (self.passed, self.failed))
        return 1 if self.failed else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--attack", required=True)
    ap.add_argument("--only", action="append")
    ap.add_argument("--kiln-release", help="the release build, for the memory figure of "
                    "the protocol-backpressure cases (default: --kiln)")
    ap.add_argument("--no-box", action="store_true",
                    help="run where no box can be built (user.max_user_namespaces 0): "
                    "each case passes only if it fails")
    run_suite(Suite(ap.parse_args()))


def run_suite(s):
    """Run suite s's cases (those --only names, or all) and exit with its
    result. The cases are listed first (building a case's closure runs
    nothing), so that any the run never reaches are counted, not dropped."""
    s.listing = True
    s.all_cases()
    s.listing = False
    want = [n for n in s.listed if not s.only or n in s.only]
    for n in sorted(s.only - set(s.listed)):
        print("not ok %s: no such case" % n, flush=True)
        s.failed += 1
    try:
        s.all_cases()
    except Exception:  # the suite's own bug: report it, then what it left
        traceback.print_exc()
        print("not ok the suite itself: stopped on an exception", flush=True)
        s.failed += 1
    for n in want:
        if n not in s.ran:
            print("not ok %s: not run (the suite stopped before it)" % n, flush=True)
            s.failed += 1
    sys.exit(s.finish())


if __name__ == "__main__":
    main()
