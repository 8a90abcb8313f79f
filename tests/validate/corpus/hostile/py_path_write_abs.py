# expect: PY-FILE-WRITE-OUTSIDE
from pathlib import Path
Path('/etc/motd').write_text('owned')
