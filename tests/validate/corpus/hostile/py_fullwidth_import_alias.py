# expect: PY-OS-PROCESS
# CPython reads the module name NFKC-folded: this is "import os as o".
import ｏs as o
o.system("id")
