import pandas as pd

df = pd.read_csv("sales.csv", parse_dates=["date"])
df["month"] = df["date"].dt.to_period("M")
summary = df.groupby(["region", "month"])["amount"].agg(["sum", "mean", "count"])
print(summary.head(20))
summary.to_csv("summary_by_region.csv")
