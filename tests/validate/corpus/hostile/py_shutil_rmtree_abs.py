# expect: PY-FILE-DELETE PY-FILE-WRITE-OUTSIDE
import shutil
shutil.rmtree('/home/user/projects')
