# expect: PY-FILE-DELETE verdict=warn
import os
os.chmod('script.sh', 0o777)
