import hashlib
from pathlib import Path

for path in sorted(Path("downloads").glob("*.csv")):
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    print(digest[:16], path.name)
