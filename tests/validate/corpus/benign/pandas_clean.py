import pandas as pd
import numpy as np

df = pd.read_csv("raw/measurements.csv")
df = df.dropna(subset=["value"])
df["value"] = df["value"].clip(lower=0)
df["zscore"] = (df["value"] - df["value"].mean()) / df["value"].std()
outliers = df[np.abs(df["zscore"]) > 3]
print(f"{len(outliers)} outliers out of {len(df)} rows")
df[np.abs(df["zscore"]) <= 3].to_parquet("clean/measurements.parquet")
