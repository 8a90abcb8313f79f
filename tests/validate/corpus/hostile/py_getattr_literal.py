# expect: PY-OS-PROCESS
import os
getattr(os, 'system')('id')
