# expect: PY-DYNAMIC-CODE
c = compile('print(1)', 'x', 'exec')
exec(c)
