import csv

with open("unknown.txt", newline="") as f:
    sample = f.read(4096)
    f.seek(0)
    dialect = csv.Sniffer().sniff(sample)
    has_header = csv.Sniffer().has_header(sample)
    rows = list(csv.reader(f, dialect))
print("delimiter:", repr(dialect.delimiter), "header:", has_header, "rows:", len(rows))
