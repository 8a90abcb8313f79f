# expect: PY-DESERIALIZE PY-DYNAMIC-CODE
import marshal
code = marshal.loads(open('c.bin','rb').read())
exec(code)
