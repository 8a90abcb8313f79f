import numpy as np

rng = np.random.default_rng(42)
samples = rng.normal(loc=10.0, scale=2.5, size=10_000)
print("mean", samples.mean())
print("std", samples.std(ddof=1))
print("percentiles", np.percentile(samples, [5, 50, 95]))
hist, edges = np.histogram(samples, bins=20)
for count, left in zip(hist, edges):
    print(f"{left:6.2f} {'#' * (count // 50)}")
