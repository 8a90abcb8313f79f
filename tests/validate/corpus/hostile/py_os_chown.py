# expect: PY-FILE-DELETE verdict=warn
import os
os.chown('data', 0, 0)
