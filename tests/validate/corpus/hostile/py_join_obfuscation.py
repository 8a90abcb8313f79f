# expect: PY-DYNAMIC-CODE PY-OS-PROCESS
m = __import__(''.join(['o', 's']))
m.system('id')
