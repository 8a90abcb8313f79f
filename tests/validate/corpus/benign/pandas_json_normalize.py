import json
import pandas as pd

with open("events.json", encoding="utf-8") as f:
    events = json.load(f)
df = pd.json_normalize(events, record_path="items", meta=["id", "user"])
counts = df.groupby("user")["id"].nunique()
print(counts.sort_values(ascending=False).head())
