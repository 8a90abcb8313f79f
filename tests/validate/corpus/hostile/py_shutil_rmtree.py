# expect: PY-FILE-DELETE
import shutil
shutil.rmtree('results')
