import re
from collections import Counter

pattern = re.compile(r'(?P<ip>\d+\.\d+\.\d+\.\d+) .* "(?P<method>GET|POST) (?P<path>\S+)')
hits = Counter()
with open("access.log") as f:
    for line in f:
        m = pattern.search(line)
        if m:
            hits[m.group("path")] += 1
for path, n in hits.most_common(10):
    print(n, path)
