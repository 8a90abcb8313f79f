# expect: PY-FILE-DELETE
import os
os.chown('data', 0, 0)
