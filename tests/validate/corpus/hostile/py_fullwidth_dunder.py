# expect: PY-DUNDER-WALK
# x.__globals__ with a fullwidth g: the gate reads the folded name too.
def f():
    pass
print(f.__ｇlobals__)
