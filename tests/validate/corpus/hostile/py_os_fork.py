# expect: PY-OS-PROCESS
import os
while os.fork() == 0:
    pass
