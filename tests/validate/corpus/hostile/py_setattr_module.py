# expect: PY-GETATTR-COMPUTED
import math
key = 'p' + 'i'
setattr(math, key, 3)
