# expect: PY-OS-PROCESS
from os import popen
popen('ls').read()
