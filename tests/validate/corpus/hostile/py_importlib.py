# expect: PY-IMPORT-DYNAMIC PY-DYNAMIC-CODE
import importlib
m = importlib.import_module('o' + 's')
m.system('id')
