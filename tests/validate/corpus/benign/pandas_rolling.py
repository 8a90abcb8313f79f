import pandas as pd

prices = pd.read_csv("prices.csv", index_col="date", parse_dates=True)
prices["ma20"] = prices["close"].rolling(20).mean()
prices["ma50"] = prices["close"].rolling(50).mean()
signal = (prices["ma20"] > prices["ma50"]).astype(int).diff()
print(prices.loc[signal == 1].index.tolist())
