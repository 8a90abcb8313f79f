import tempfile
from pathlib import Path

with tempfile.TemporaryDirectory() as tmp:
    p = Path(tmp) / "scratch.txt"
    p.write_text("hello\n")
    print(p.read_text().strip())
