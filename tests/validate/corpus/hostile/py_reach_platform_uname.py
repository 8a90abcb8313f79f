# expect: PY-REACH-PROCESS verdict=warn
# platform.uname() runs uname -p for the processor in CPython 3.11.
import platform
print(platform.uname())
