# expect: PY-OS-PROCESS
import sys
sys.modules["os"].system("id")
