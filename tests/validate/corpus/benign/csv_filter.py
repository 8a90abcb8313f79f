import csv

with open("inventory.csv", newline="") as src, open("low_stock.csv", "w", newline="") as dst:
    reader = csv.DictReader(src)
    writer = csv.DictWriter(dst, fieldnames=reader.fieldnames)
    writer.writeheader()
    for row in reader:
        if int(row["stock"]) < int(row["reorder_level"]):
            writer.writerow(row)
