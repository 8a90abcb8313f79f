# expect: PY-REACH-COMPUTED verdict=warn
# operator.methodcaller names the method in a string and os is handed on
# (issue 35: allowed with no warning).
import operator
import os
cmd = "id"
operator.methodcaller("system", cmd)(os)
