# expect: PY-REACH-UNKNOWN verdict=warn
# os reached through numpy's own namespace.
import numpy as np
np.lib.npyio.os.getcwd()
