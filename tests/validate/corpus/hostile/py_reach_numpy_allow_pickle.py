# expect: PY-REACH-CODE verdict=warn
# allow_pickle=True unpickles object arrays, which can run code.
import numpy as np
data = np.load("arrays.npy", allow_pickle=True)
