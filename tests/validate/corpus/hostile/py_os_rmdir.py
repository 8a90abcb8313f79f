# expect: PY-FILE-DELETE verdict=warn
import os
os.rmdir('build')
