import csv
import io
import zipfile

with zipfile.ZipFile("archive.zip") as z:
    with z.open("table.csv") as raw:
        rows = list(csv.reader(io.TextIOWrapper(raw, encoding="utf-8")))
print(len(rows), "rows; header:", rows[0])
