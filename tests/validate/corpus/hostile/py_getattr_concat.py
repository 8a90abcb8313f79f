# expect: PY-OS-PROCESS PY-GETATTR-COMPUTED
import os
getattr(os, 'sys' + 'tem')('id')
