# expect: PY-OS-PROCESS
from concurrent.futures import ProcessPoolExecutor
with ProcessPoolExecutor() as ex:
    print(list(ex.map(abs, [-1, -2])))
