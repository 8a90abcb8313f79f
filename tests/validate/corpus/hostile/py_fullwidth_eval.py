# expect: PY-DYNAMIC-CODE
ｅｖａｌ("__import__(\"os\")")
