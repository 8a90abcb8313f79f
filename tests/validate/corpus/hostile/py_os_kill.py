# expect: PY-OS-PROCESS
import os, signal
os.kill(1, signal.SIGKILL)
