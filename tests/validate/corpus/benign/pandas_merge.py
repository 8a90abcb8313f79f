import pandas as pd

orders = pd.read_csv("orders.csv")
customers = pd.read_csv("customers.csv")
merged = orders.merge(customers, on="customer_id", how="left")
merged["total"] = merged["quantity"] * merged["unit_price"]
top = merged.sort_values("total", ascending=False).head(10)
print(top[["name", "total"]].to_string(index=False))
