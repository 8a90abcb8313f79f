# expect: PY-DYNAMIC-CODE
name = input()
m = __import__(name)
