# expect: PY-FILE-WRITE-OUTSIDE
f = open('/tmp/out.txt', mode='w')
f.write('x')
