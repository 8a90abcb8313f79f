# expect: PY-OS-PROCESS
import os
os.spawnlp(os.P_NOWAIT, 'sleep', 'sleep', '100')
