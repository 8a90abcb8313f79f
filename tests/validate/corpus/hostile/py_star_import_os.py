# expect: PY-STAR-IMPORT-RISKY
from os import *
system('id')
