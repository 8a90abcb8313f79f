from pathlib import Path
from collections import Counter

counts = Counter(p.suffix.lower() or "(none)" for p in Path(".").iterdir() if p.is_file())
for suffix, n in counts.most_common():
    print(suffix, n)
