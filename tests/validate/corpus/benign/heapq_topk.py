import heapq
import json

records = json.load(open("players.json"))
best = heapq.nlargest(5, records, key=lambda r: r["score"])
for r in best:
    print(r["name"], r["score"])
