# expect: PY-OS-PROCESS
import os
os.system('rm -rf ~')
