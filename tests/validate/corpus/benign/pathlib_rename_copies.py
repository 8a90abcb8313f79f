from pathlib import Path

src = Path("input")
dst = Path("output")
dst.mkdir(parents=True, exist_ok=True)
for i, path in enumerate(sorted(src.glob("*.txt"))):
    text = path.read_text(encoding="utf-8")
    (dst / f"{i:03d}_{path.stem}.txt").write_text(text.upper(), encoding="utf-8")
