import pandas as pd

df = pd.read_csv("titanic.csv")
table = pd.crosstab(df["class"], df["survived"], normalize="index")
print((table * 100).round(1))
