# expect: PY-DUNDER-WALK
f = getattr(__builtins__, 'ev' + 'al')
f('1+1')
