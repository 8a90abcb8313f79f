# expect: PY-DYNAMIC-CODE
expr = input()
print(eval(expr))
