import matplotlib.pyplot as plt
from collections import Counter

words = open("essay.txt", encoding="utf-8").read().lower().split()
common = Counter(w.strip(".,;:!?") for w in words).most_common(15)
labels, counts = zip(*common)
plt.figure(figsize=(10, 4))
plt.bar(labels, counts)
plt.xticks(rotation=45)
plt.tight_layout()
plt.savefig("word_counts.png")
