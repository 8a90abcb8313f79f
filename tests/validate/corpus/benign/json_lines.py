import json
from collections import defaultdict

by_level = defaultdict(int)
with open("app.log.jsonl", encoding="utf-8") as f:
    for line in f:
        if not line.strip():
            continue
        record = json.loads(line)
        by_level[record.get("level", "unknown")] += 1
print(json.dumps(by_level, indent=2))
