# expect: PY-FILE-DELETE verdict=warn
import os
os.remove('notes.txt')
