# expect: PY-SYS-MODULES
import sys
sys.modules['json'] = None
