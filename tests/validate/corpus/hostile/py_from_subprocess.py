# expect: PY-IMPORT-PROCESS
from subprocess import Popen, PIPE
Popen(['sh'], stdin=PIPE)
