# expect: PY-OS-PROCESS
import os as o
o.system('whoami')
