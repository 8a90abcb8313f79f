# expect: PY-FILE-DELETE
import os
os.rmdir('build')
