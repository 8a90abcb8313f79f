# expect: PY-IMPORT-NETWORK
s = __import__('socket')
s.socket().connect(('1.2.3.4', 9))
