# expect: PY-FILE-DELETE
import shutil
shutil.move('data.csv', 'archive.csv')
