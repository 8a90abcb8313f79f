# expect: PY-FILE-DELETE verdict=warn
import shutil
shutil.rmtree('results')
