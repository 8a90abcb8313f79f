# expect: PY-FILE-WRITE-OUTSIDE
import pandas as pd
pd.DataFrame({'a': [1]}).to_csv('/root/leak.csv')
