import pandas as pd

df = pd.DataFrame({"city": ["Oslo", "Lima", "Pune"], "temp": [3.5, 19.2, 31.0]})
df["hot"] = df["temp"] > 25
print(df.to_string(index=False))
df.to_html("cities.html", index=False)
