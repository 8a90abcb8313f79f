# expect: PY-OS-PROCESS
from os import system as s
s('id')
