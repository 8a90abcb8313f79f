import csv

rows = [("name", "score"), ("ana", 91), ("bo", 78), ("chen", 85)]
with open("scores.csv", "w", newline="") as f:
    writer = csv.writer(f)
    writer.writerows(rows)
print("wrote", len(rows) - 1, "rows")
