# expect: PY-SYS-MODULES
import sys, types
sys.modules.update({'os': types.ModuleType('os')})
