# expect: PY-FILE-DELETE PY-FILE-WRITE-OUTSIDE
import os
os.unlink('/etc/hosts')
