# expect: PY-SYS-MODULES
import sys
sys.meta_path.insert(0, object())
