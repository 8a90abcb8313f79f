# expect: PY-DYNAMIC-CODE PY-OS-PROCESS
__import__('o' + 's').system('id')
