# expect: PY-IMPORT-NATIVE
from ctypes import cdll
cdll.LoadLibrary('libc.so.6')
