# expect: PY-IMPORT-PROCESS
import subprocess as sp
print(sp.check_output('id', shell=True))
