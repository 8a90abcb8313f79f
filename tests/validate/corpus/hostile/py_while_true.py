# expect: PY-LOOP-UNBOUNDED verdict=warn
total = 0
while True:
    total += 1
