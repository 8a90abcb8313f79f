# expect: PY-OS-PROCESS
import os
os.execv('/bin/sh', ['sh'])
