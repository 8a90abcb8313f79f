from collections import Counter, deque

window = deque(maxlen=3)
counts = Counter()
for word in "the quick brown fox jumps over the lazy dog the end".split():
    window.append(word)
    counts[" ".join(window)] += 1
print(counts.most_common(3))
