# expect: PY-DYNAMIC-CODE PY-OS-PROCESS
__import__('os').system('id')
