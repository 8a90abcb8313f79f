# expect: PY-REACH-UNKNOWN verdict=warn
# A part of os outside the list of known-harmless ones.
import os
fd = os.memfd_create("x")
