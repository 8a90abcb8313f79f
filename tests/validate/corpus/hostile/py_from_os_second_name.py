# expect: PY-OS-PROCESS
# The second name of a from-import is bound too (it was not: tree-sitter
# 0.20 names only the first child of a repeated field).
from os import getcwd, system
system("id")
