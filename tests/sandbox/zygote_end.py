#!/usr/bin/env python3
"""zygote_end.py: the end report of a run from the Python zygote
(server/sandbox/guest/zygote_program.py's _report_end): the program's process
tells its pid 1 it is ending, and pid 1 kills what is left and reports the
run at once, with the process's CPU time and peak memory. The code can
forge a report for its own run only; a process it forks does not end
the run.

Run as zygote.py is (its main(), usage and output), against a server
of its own.
"""
from zygote import MARK, PIPE_FDS, ZygoteSuite, main


class EndSuite(ZygoteSuite):
    """Runs whose program reports its end, or seems to."""

    def cases(self):
        self.case("zygote-end-report-forged-ends-only-its-own-run", self.forged_end_case())
        self.case("zygote-end-report-not-from-a-forked-child", self.forked_end_case())
        self.case("zygote-end-report-kills-what-is-left", self.left_end_case())
        self.case("zygote-end-report-rusage", self.rusage_end_case())

    def zygote_run(self, code, limits=None):
        """(stdout without the mark, stderr, result) of code run from the
        zygote; raises if the run failed or did not come from it."""
        out, err, res, error = self.server.run(MARK + code, limits)
        first, _, rest = out.partition("\n")
        if error or first != "KILN-ZYGOTE 1":
            raise AssertionError("run: %r %r %r" % (out[:300], err[-300:], error))
        return rest, err, res

    def forged_end_case(self):
        """The code can write its own end report (the pipe is in its
        process): that ends its run, with the status it wrote, and its
        output up to there, as os._exit() would. It cannot reach another
        run: the records it writes after the first, and those of a
        process it left behind, are never read as the next runs' ends."""
        forge = (
            "import os, struct, time\n"
            + PIPE_FDS +
            "print('PIPES', len(pipes), flush=True)\n"
            "def rec(code):\n"
            "    return struct.pack('=4siqqq', b'kend', code << 8, 0, 0, 0)\n"
            "go_r, go_w = os.pipe()\n"
            "if os.fork() == 0:\n"
            "    os.setsid()\n"
            "    os.read(go_r, 1)  # once the program's forged end is written\n"
            "    for _ in range(500):\n"
            "        for fd in pipes:\n"
            "            try:\n"
            "                os.write(fd, rec(9))\n"
            "            except OSError:\n"
            "                pass\n"
            "        time.sleep(0.01)\n"
            "    os._exit(0)\n"
            "for fd in pipes:\n"
            "    os.write(fd, rec(7))\n"
            "    for _ in range(5):\n"
            "        os.write(fd, rec(9))\n"
            "os.write(go_w, b'g')\n"
            "time.sleep(5)\n"
            "print('after the forged end')\n")
        after = [("import time\ntime.sleep(0.3)\nprint('whole')\nraise SystemExit(4)\n",
                  "whole\n", 4),
                 ("print('next')\n", "next\n", 0)]

        def run():
            out, err, res = self.zygote_run(forge)
            if out != "PIPES 1\n" or res["exitCode"] != 7:
                return "forged: %r %r exit %r signal %r" % (out, err[-300:], res["exitCode"],
                                                           res["signal"])
            for code, want, rc in after:
                out, err, res = self.zygote_run(code)
                if out != want or res["exitCode"] != rc:
                    return "the run after a forged end: %r %r exit %r signal %r" % (
                        out, err[-300:], res["exitCode"], res["signal"])
            return None
        return run

    def forked_end_case(self):
        """A process the code forks runs to the code's end too (fork in
        Python): its end is not the program's, and does not end the run."""
        code = ("import os, time\n"
                "if os.fork() == 0:\n"
                "    print('child', flush=True)\n"
                "else:\n"
                "    os.wait()\n"
                "    time.sleep(0.2)\n"
                "    print('parent')\n")

        def run():
            out, err, res = self.zygote_run(code)
            if out != "child\nparent\n" or res["exitCode"] != 0:
                return "%r %r exit %r signal %r" % (out, err[-300:], res["exitCode"],
                                                    res["signal"])
            return None
        return run

    def left_end_case(self):
        """The run is reported as soon as the program's end is: what is
        left running is killed all the same (check_host, after every
        case). First what the program started (in a session of its own,
        its output elsewhere, so that nothing holds the run open); then
        the program's own process, which closes its output and writes an
        end report (0) but goes on: pid 1 kills it on the report, not
        only once it has ended."""
        left = ("import subprocess\n"
                "for _ in range(2):\n"
                "    subprocess.Popen(['sleep', '300'], stdin=subprocess.DEVNULL,\n"
                "                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,\n"
                "                     start_new_session=True)\n"
                "print('left')\n")
        lingers = ("import os, struct, sys, time\n"
                   + PIPE_FDS +
                   "print('lingers', len(pipes), flush=True)\n"
                   "os.close(1)\n"
                   "os.close(2)\n"
                   "for fd in pipes:\n"
                   "    os.write(fd, struct.pack('=4siqqq', b'kend', 0, 0, 0, 0))\n"
                   "time.sleep(300)\n")

        def run():
            for code, want in ((left, "left\n"), (lingers, "lingers 1\n")):
                out, err, res = self.zygote_run(code)
                if out != want or res["exitCode"] != 0:
                    return "%r %r exit %r" % (out, err[-300:], res["exitCode"])
            return None
        return run

    def rusage_end_case(self):
        """CPU time and peak memory come with the end report, read in the
        program's process just before it ends: a run's own figures."""
        code = ("b = bytearray(200 << 20)\n"
                "for i in range(0, len(b), 4096):\n"
                "    b[i] = 1\n"
                "x = 0\n"
                "for i in range(3 * 10**6):\n"
                "    x += i\n"
                "print('done')\n")

        def run():
            out, err, res = self.zygote_run(code)
            if out != "done\n" or res["exitCode"] != 0:
                return "%r %r exit %r" % (out, err[-300:], res["exitCode"])
            if res["maxRssKb"] < (200 << 10) or res["cpuMs"] < 20:
                return "maxRssKb %r, cpuMs %r" % (res["maxRssKb"], res["cpuMs"])
            return None
        return run


if __name__ == "__main__":
    main(EndSuite)
