# expect: PY-DYNAMIC-CODE
e = eval
print(e('2 + 2'))
