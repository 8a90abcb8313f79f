# expect: PY-GETATTR-COMPUTED
import os
name = input()
f = getattr(os, name)
f('id')
