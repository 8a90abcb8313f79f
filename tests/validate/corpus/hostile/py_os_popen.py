# expect: PY-OS-PROCESS
import os
print(os.popen('cat /etc/passwd').read())
