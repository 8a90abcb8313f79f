# expect: PY-IMPORT-PROCESS
import multiprocessing
p = multiprocessing.Process(target=print)
p.start()
