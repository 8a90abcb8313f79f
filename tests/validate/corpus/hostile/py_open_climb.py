# expect: PY-FILE-WRITE-OUTSIDE
open('../../outside.txt', 'w').write('x')
