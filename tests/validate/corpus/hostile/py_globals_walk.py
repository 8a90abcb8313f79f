# expect: PY-DUNDER-WALK
def f():
    pass
b = f.__globals__['__builtins__']
print(b)
