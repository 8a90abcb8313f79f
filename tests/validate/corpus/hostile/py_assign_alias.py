# expect: PY-OS-PROCESS
import os
run = os.system
run('id')
