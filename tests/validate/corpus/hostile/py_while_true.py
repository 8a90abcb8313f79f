# expect: PY-LOOP-UNBOUNDED
total = 0
while True:
    total += 1
