# expect: PY-IMPORT-NETWORK
# "import socket": the rule reads the module name as CPython does.
import ｓocket
ｓocket.create_connection(("example.com", 80))
