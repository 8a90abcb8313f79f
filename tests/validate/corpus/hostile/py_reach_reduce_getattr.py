# expect: PY-REACH-COMPUTED verdict=warn
# getattr passed as a value walks attribute names from data (issue 35).
import functools
import os
functools.reduce(getattr, ["system"], os)("id")
