import re
from collections import Counter
from pathlib import Path

text = Path("book.txt").read_text(encoding="utf-8")
words = re.findall(r"[a-zà-ÿ']+", text.lower())
stop = {"the", "and", "a", "of", "to", "in"}
freq = Counter(w for w in words if w not in stop)
with open("wordfreq.tsv", "w", encoding="utf-8") as out:
    for word, n in freq.most_common(100):
        out.write(f"{word}\t{n}\n")
