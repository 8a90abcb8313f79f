import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

df = pd.read_csv("temperature.csv", parse_dates=["day"])
fig, ax = plt.subplots(figsize=(8, 4))
ax.plot(df["day"], df["celsius"], label="daily")
ax.plot(df["day"], df["celsius"].rolling(7).mean(), label="7-day mean")
ax.set_xlabel("day")
ax.set_ylabel("°C")
ax.legend()
fig.tight_layout()
fig.savefig("temperature.png", dpi=150)
