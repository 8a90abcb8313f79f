import pandas as pd

df = pd.read_csv("loans.csv")
df = df.eval("ratio = debt / income")
risky = df.query("ratio > 0.4 and term >= 36")
print(len(risky), "risky loans")
print(risky.describe())
