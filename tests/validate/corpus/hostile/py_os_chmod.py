# expect: PY-FILE-DELETE
import os
os.chmod('script.sh', 0o777)
