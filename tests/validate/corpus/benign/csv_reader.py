import csv

totals = {}
with open("expenses.csv", newline="", encoding="utf-8") as f:
    reader = csv.DictReader(f)
    for row in reader:
        totals[row["category"]] = totals.get(row["category"], 0.0) + float(row["amount"])
for category, amount in sorted(totals.items(), key=lambda kv: -kv[1]):
    print(f"{category:<20} {amount:>10.2f}")
