# expect: PY-FILE-WRITE-OUTSIDE
name = 'x'
open(f'/var/tmp/{name}.txt', 'w').write('x')
