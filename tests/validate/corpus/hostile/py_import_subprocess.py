# expect: PY-IMPORT-PROCESS
import subprocess
subprocess.run(['ls', '-la'])
