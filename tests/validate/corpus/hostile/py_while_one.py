# expect: PY-LOOP-UNBOUNDED
while 1:
    print('again')
