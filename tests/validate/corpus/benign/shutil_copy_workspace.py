import shutil
from pathlib import Path

Path("backup").mkdir(exist_ok=True)
for name in ["a.csv", "b.csv"]:
    shutil.copy(name, "backup/" + name)
print(sorted(p.name for p in Path("backup").iterdir()))
