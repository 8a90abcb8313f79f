# expect: PY-DESERIALIZE
import pandas as pd
df = pd.read_pickle('frame.pkl')
print(df)
