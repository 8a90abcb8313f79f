# expect: PY-IMPORT-DYNAMIC PY-DYNAMIC-CODE
import builtins
builtins.exec('print(1)')
