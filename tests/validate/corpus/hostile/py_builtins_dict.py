# expect: PY-DUNDER-WALK
g = globals()['__builtins__']
print(g)
