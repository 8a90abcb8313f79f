#!/usr/bin/env python3
"""zygote_fork.py: the Python zygote (server/sandbox/pools/zygote.h) is
fork-safe: random generators reseeded per child, no thread, socket or
secret in the child (so none in the zygote before the fork), and one
zygote per interpreter (a changed interpreter file retires it and a new
one is built).

Run as zygote.py is (its main(), usage and output), against a server
of its own.
"""
import json
import os
import shutil
import sys
import tempfile

from zygote import MARK, Server, ZygoteSuite, main


class ForkSuite(ZygoteSuite):
    """The children of one zygote: what the fork leaves them."""

    def cases(self):
        self.case("zygote-random-reseeded", self.random_case())
        self.case("zygote-child-has-no-thread-socket-or-secret", self.clean_case())
        self.case("zygote-rebuilt-when-the-interpreter-changes", self.interpreter_case())

    def random_case(self):
        code = ("import random, numpy\n"
                "print(random.random(), random.getrandbits(64), numpy.random.rand(),"
                " numpy.random.randint(1 << 62))\n")

        def run():
            seen = []
            for _ in range(3):
                rc, out, err, res = self.kiln_run("python", code)
                if rc != 0:
                    return "rc=%s %r" % (rc, err[-300:])
                seen.append(out.split())
            for i, what in enumerate(("random", "random", "numpy", "numpy")):
                if len({s[i] for s in seen}) != len(seen):
                    return "%s repeats across children of one zygote: %r" % (what, seen)
            return None
        return run

    def clean_case(self):
        # The secret's prefix is in this code, never a whole secret: a hit
        # followed by its 16 hex digits is the server's secret (or another).
        code = (
            "import os, re\n"
            "status = open('/proc/self/status').read()\n"
            "print('THREADS', status.split('Threads:')[1].split()[0])\n"
            "socks = []\n"
            "for fd in os.listdir('/proc/self/fd'):\n"
            "    try:\n"
            "        if os.readlink('/proc/self/fd/' + fd).startswith('socket:'):\n"
            "            socks.append(fd)\n"
            "    except OSError:\n"
            "        pass\n"
            "print('SOCKETS', socks)\n"
            "pat = re.compile(rb'kiln-sec' rb'ret-[0-9a-f]{16}')\n"
            "hits = 0\n"
            "mem = open('/proc/self/mem', 'rb', buffering=0)\n"
            "for line in open('/proc/self/maps'):\n"
            "    f = line.split()\n"
            "    lo, hi = (int(x, 16) for x in f[0].split('-'))\n"
            "    if 'r' not in f[1] or hi - lo > (512 << 20) or (len(f) > 5 and f[5].startswith('[v')):\n"
            "        continue\n"
            "    try:\n"
            "        mem.seek(lo)\n"
            "        if pat.search(mem.read(hi - lo)):\n"
            "            hits += 1\n"
            "    except (OSError, OverflowError, ValueError):\n"
            "        pass\n"
            "print('SECRETS', hits)\n")

        def run():
            rc, out, err, res = self.kiln_run("python", code)
            want = ["THREADS 1", "SOCKETS []", "SECRETS 0"]
            got = out.splitlines()
            missing = [w for w in want if w not in got]
            return "rc=%s saw %r (%r)" % (rc, got, err[-300:]) if missing or rc != 0 else None
        return run

    def interpreter_case(self):
        """A server whose python is a copy of python3 in a folder of its
        own: replacing that file retires the zygote, and the next one is
        new (its start time differs)."""
        def run():
            # Not under /tmp, which every box covers with its own.
            top = tempfile.mkdtemp(prefix="kiln-zygote-py-", dir="/var/tmp")
            self.cleanup.append(top)
            os.chmod(top, 0o755)
            pydir = os.path.join(top, "bin")
            os.makedirs(pydir)
            py = os.path.join(pydir, "python3")
            shutil.copy2("/usr/bin/python3", py)
            os.chmod(py, 0o755)
            cfg_path = os.path.join(self.scratch, "cfg-interp.json")
            with open(self.base_config) as f:
                cfg = json.load(f)
            cfg["sandbox"]["languages"] = {"python": {"argv": [py, "{file}"],
                                                      "file": "snippet.py"}}
            cfg["sandbox"]["zygotePreload"] = ["json"]
            with open(cfg_path, "w") as f:
                json.dump(cfg, f)
            srv = Server(self.kiln, cfg_path, self.env, log=cfg_path + ".log")
            try:
                if not srv.wait_ready():
                    return "no zygote with the copied interpreter"
                probe = MARK + "import sys\nprint(sys.modules['kiln_zygote'].STARTED_NS)\n"
                out, err, _, _ = srv.run(probe)
                first = out.splitlines()
                os.unlink(py)
                shutil.copy(sys.executable if os.path.realpath(sys.executable).startswith("/usr/")
                            else "/usr/bin/python3", py)
                os.chmod(py, 0o755)
                out2, _, _, _ = srv.run(probe)
                if out2.startswith("KILN-ZYGOTE 1"):
                    return "the old zygote served a run after its interpreter changed"
                if not srv.wait_ready():
                    return "no new zygote after the interpreter changed"
                out3, _, _, _ = srv.run(probe)
                second = out3.splitlines()
                if len(first) < 2 or len(second) < 2 or first[1] == second[1]:
                    return "not a new zygote: %r then %r (%r)" % (first, second, err[-200:])
                return None
            finally:
                rc = srv.stop()
                if rc != 0:
                    print("interpreter case: its server exited %s" % rc, flush=True)

        return run


if __name__ == "__main__":
    main(ForkSuite)
