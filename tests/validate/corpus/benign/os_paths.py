import os
import glob

out_dir = os.path.join("results", "2024")
os.makedirs(out_dir, exist_ok=True)
files = sorted(glob.glob(os.path.join("data", "*.csv")))
for name in files:
    size = os.path.getsize(name)
    print(f"{os.path.basename(name):<30} {size:>8}")
print("cwd:", os.getcwd(), "cpus:", os.cpu_count(), "home set:", "HOME" in os.environ)
