# expect: PY-DYNAMIC-CODE
code = 'imp' + 'ort o' + 's'
exec(code + '; os.system("id")')
