# expect: PY-FILE-DELETE verdict=warn
import shutil
shutil.move('data.csv', 'archive.csv')
