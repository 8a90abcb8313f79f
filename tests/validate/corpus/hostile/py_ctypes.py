# expect: PY-IMPORT-NATIVE
import ctypes
libc = ctypes.CDLL('libc.so.6')
libc.system(b'id')
