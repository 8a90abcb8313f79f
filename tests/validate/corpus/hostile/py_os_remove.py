# expect: PY-FILE-DELETE
import os
os.remove('notes.txt')
