# expect: PY-REACH-CODE PY-REACH-UNKNOWN verdict=warn
# sys.path changed: the next import runs whatever json.py it finds first.
import sys
sys.path.insert(0, "/tmp/x")
import json
import helpers
