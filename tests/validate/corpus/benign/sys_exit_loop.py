import sys

count = 0
for line in sys.stdin:
    if line.startswith("#"):
        continue
    count += 1
    if count > 1000:
        print("too many lines")
        sys.exit(1)
print(count)
