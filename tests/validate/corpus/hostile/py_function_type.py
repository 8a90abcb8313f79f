# expect: PY-DYNAMIC-CODE PY-DUNDER-WALK
import types
f = types.FunctionType((lambda: 0).__code__, {})
f()
