# expect: PY-LOOP-UNBOUNDED verdict=warn
while 1:
    print('again')
