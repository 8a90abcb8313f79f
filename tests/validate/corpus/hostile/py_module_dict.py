# expect: PY-GETATTR-COMPUTED
import os
os.__dict__['system']('id')
