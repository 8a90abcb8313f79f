# Only known-harmless reach: the partly known modules' listed parts.
import os
import sys
import shutil
import platform
import uuid
import pickle
from os import getcwd, listdir
from operator import itemgetter

rows = sorted([(2, "b"), (1, "a")], key=itemgetter(0))
print(rows, getcwd(), len(listdir(".")), os.sep, sys.version_info[:2])
print(platform.python_version(), uuid.uuid4().hex[:4], shutil.which("ls"))
blob = pickle.dumps(rows)
print(len(blob), getattr(rows, "count")(1))
print(getattr(os, "getcwd")(), getattr(sys, "maxsize"))
