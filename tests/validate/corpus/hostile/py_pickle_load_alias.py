# expect: PY-DESERIALIZE
import pickle as pk
with open('m.pkl', 'rb') as f:
    model = pk.load(f)
