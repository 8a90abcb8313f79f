from pathlib import Path

out = Path("reports")
out.mkdir(exist_ok=True)
lines = [f"line {i}" for i in range(10)]
(out / "report.txt").write_text("\n".join(lines), encoding="utf-8")
print((out / "report.txt").read_text().count("\n") + 1)
