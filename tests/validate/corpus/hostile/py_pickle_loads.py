# expect: PY-DESERIALIZE
import pickle
data = open('blob.bin', 'rb').read()
obj = pickle.loads(data)
