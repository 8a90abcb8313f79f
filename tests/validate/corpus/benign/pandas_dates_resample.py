import pandas as pd

df = pd.read_csv("energy.csv", parse_dates=["timestamp"]).set_index("timestamp")
daily = df["kwh"].resample("D").sum()
weekly = daily.resample("W").mean()
print(daily.tail())
print(weekly.describe())
weekly.to_json("weekly.json", date_format="iso")
