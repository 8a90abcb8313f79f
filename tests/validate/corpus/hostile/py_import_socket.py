# expect: PY-IMPORT-NETWORK
import socket
s = socket.socket()
s.connect(('10.0.0.1', 80))
