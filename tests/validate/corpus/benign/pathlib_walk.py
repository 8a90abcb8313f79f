from pathlib import Path

root = Path("data")
sizes = {}
for path in root.rglob("*.csv"):
    sizes[path.name] = path.stat().st_size
for name, size in sorted(sizes.items(), key=lambda kv: kv[1], reverse=True):
    print(f"{size:>10} {name}")
