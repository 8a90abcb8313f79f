# expect: PY-IMPORT-PROCESS
import pty
pty.spawn('/bin/sh')
