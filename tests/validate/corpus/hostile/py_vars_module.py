# expect: PY-GETATTR-COMPUTED
import os
vars(os)['sys' + 'tem']('id')
